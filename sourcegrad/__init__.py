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

import importlib.machinery as _machinery
import os as _os
import sys as _sys


class _SourceTreeFinder:
    """Finds ``sourcegrad.transforms`` and ``sourcegrad.runtime`` beside this folder in a checkout.

    Installed, both live inside this package (pyproject.toml's package-dir maps them in). Run from
    the repository root (``python -m pytest`` puts the root ahead of site-packages), this folder is
    the package that Python imports, and the two stay at the top of the repository."""

    def __init__(self, root):
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        if fullname in ("sourcegrad.transforms", "sourcegrad.runtime"):
            return _machinery.PathFinder.find_spec(fullname, [self.root])
        return None


def _checkout_root():
    """The repository root when this package is the folder in a checkout, else None."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    root = _os.path.dirname(here)
    if _os.path.isdir(_os.path.join(here, "runtime")) or not _os.path.isfile(
        _os.path.join(root, "pyproject.toml")
    ):
        return None
    both = all(
        _os.path.isfile(_os.path.join(root, name, "__init__.py"))
        for name in ("transforms", "runtime")
    )
    return root if both else None


_root = _checkout_root()
# (reloads too)
if _root is not None and not any(type(f).__name__ == "_SourceTreeFinder" for f in _sys.meta_path):
    # ahead of an editable install of another checkout
    _sys.meta_path.insert(0, _SourceTreeFinder(_root))

from .api import grad, hessian, hvp, jacfwd, jacobian, jvp, source, value_and_grad, vjp
from .errors import (
    CustomGradientError,
    InternalCompilerError,
    MissingAdjointError,
    MissingTangentError,
    NonScalarOutputError,
    NoSourceError,
    PullbackError,
    SourcegradError,
    UnsupportedSyntaxError,
    UsageError,
    WrtError,
)
from .memory import memory
from .profiler import profile
from .runtime import Function, checkpointed, no_grad, stop_gradient
from .runtime.structures import register_structure
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
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "jacfwd",
    "jacobian",
    "hvp",
    "hessian",
    "source",
    "check_grad",
    "adjoint",
    "Function",
    "no_grad",
    "stop_gradient",
    "profile",
    "register_structure",
    "memory",
    "checkpointed",
    "SourcegradError",
    "UnsupportedSyntaxError",
    "MissingAdjointError",
    "NonScalarOutputError",
    "NoSourceError",
    "WrtError",
    "InternalCompilerError",
    "UsageError",
    "PullbackError",
    "MissingTangentError",
    "CustomGradientError",
]
