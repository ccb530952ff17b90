"""sourcegrad: reverse-mode automatic differentiation of numpy code by source transformation.

``@sourcegrad.grad`` reads a plain numpy function's source, generates its backward pass ahead of
time as readable Python, and runs it on numpy (or cupy) arrays::

    import numpy as np
    import sourcegrad as sg

    @sg.grad
    def f(x):
        return np.sum(np.tanh(x) ** 2)

    f(np.ones(3))            # the gradient
    print(sg.source(f))      # the generated code
"""

from .api import grad, source, value_and_grad, vjp
from .errors import (
    InternalCompilerError,
    MissingAdjointError,
    NonScalarOutputError,
    NoSourceError,
    PullbackError,
    SourcegradError,
    UnsupportedSyntaxError,
    UsageError,
    WrtError,
)
from .profiler import profile
from .runtime import Function, no_grad, stop_gradient
from .testing import check_grad

__version__ = "0.1.0"


def adjoint(fn, *, nondiff=None):
    """Register an adjoint rule for a library function (see ``sourcegrad.transforms.rules.adjoint``)::

        @sourcegrad.adjoint(scipy.special.expit)
        def _(y, x):
            d[x] += d[y] * y * (1.0 - y)

    A parameter with no ``d[p] += ...`` line carries no gradient; an active value passed there is
    refused when a function using the rule is compiled, unless ``nondiff`` gives the reason
    (``nondiff={"axis": "an axis"}``).
    """
    from .transforms.rules import adjoint as register

    return register(fn, nondiff=nondiff)

__all__ = [
    "grad", "value_and_grad", "vjp", "source", "check_grad", "adjoint", "Function", "no_grad",
    "stop_gradient", "profile",
    "SourcegradError", "UnsupportedSyntaxError", "MissingAdjointError", "NonScalarOutputError",
    "NoSourceError", "WrtError", "InternalCompilerError", "UsageError", "PullbackError",
]
