"""Custom differentiation: ``Function`` (a torch-style custom operation with its own backward)
and its ``Context``, the markers ``stop_gradient`` and ``no_grad``, and what generated code calls
to run a custom backward (``custom_backward``, checked, then ``grad_of``) or the second
derivatives of a gradient sourcegrad made (``pullback_of_gradient``).
"""

from __future__ import annotations

from .backend import _shape
from .broadcast import unbroadcast
from .errors import CustomGradientError
from .zeros import ZERO, zeros_like

__all__ = [
    "Function",
    "Context",
    "stop_gradient",
    "no_grad",
    "custom_backward",
    "grad_of",
    "pullback_of_gradient",
]


def grad_of(g, k, like):
    """The ``k``-th gradient of a custom ``Function`` (``custom_backward`` checked it; ``None``
    means zero)."""
    g = g[k]
    if g is None:
        return zeros_like(like)
    return unbroadcast(g, like)


def pullback_of_gradient(g, k, ct, args):
    """The adjoint of ``args[k]`` for ``y = g(*args)``, ``g`` a gradient made by sourcegrad, given
    the adjoint ``ct`` of ``y``: the second derivatives, computed by code sourcegrad generates
    for ``g`` (``sourcegrad/higher.py``)."""
    return g.pullback_of_call(k, ct, args)


def custom_backward(cls, ctx, g, y, xs):
    """Run ``cls.backward`` for ``y = cls.forward(ctx, *xs)`` given the adjoint ``g`` of ``y``, as
    torch does: one cotangent per output (a tuple ``y`` is several outputs), zeros where an output
    got no gradient. Returns one gradient per input, checked (``None`` means zero)."""
    if isinstance(y, (tuple, list)):
        parts = [ZERO] * len(y) if g is ZERO else g
        cotangents = [zeros_like(v) if p is ZERO else p for p, v in zip(parts, y)]
    else:
        cotangents = [g]
    ctx.needs_input_grad = tuple(_may_need_grad(x) for x in xs)
    out = cls.backward(ctx, *cotangents)
    if isinstance(out, list) and len(xs) > 1:
        raise CustomGradientError(
            f"{cls.__qualname__}.backward returned a list; return a tuple of gradients, one per input of "
            f"forward ({', '.join(_input_names(cls, len(xs)))}), None for no gradient"
        )
    grads = out if isinstance(out, tuple) else (out,)
    if len(grads) > len(xs) and all(e is None for e in grads[len(xs) :]):
        grads = grads[: len(xs)]  # torch allows trailing Nones
    if len(grads) != len(xs):
        raise CustomGradientError(
            f"{cls.__qualname__}.backward returned {_count(len(grads), 'gradient')} for "
            f"{_count(len(xs), 'input')} of forward: return one per input "
            f"({', '.join(_input_names(cls, len(xs)))}), a tuple for several, None for no gradient"
        )
    for k, (e, x) in enumerate(zip(grads, xs)):
        _check_gradient(cls, k, e, x, len(xs))
    return grads


def _may_need_grad(x):
    """``ctx.needs_input_grad``: True for every input that a gradient can be asked of (numbers,
    numeric arrays); sourcegrad decides what is differentiated when it compiles, not per call."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return False
    dtype = getattr(x, "dtype", None)
    return dtype is None or dtype.kind in "fciu"


def _check_gradient(cls, k, g, x, n):
    """One gradient ``backward`` returned, against its input ``x``: an array (or number) whose
    shape is ``x``'s, or one that broadcasting ``x`` gives (summed back, as torch does)."""
    if g is None or not _is_numeric(x):
        return
    if not _is_numeric(g):
        raise CustomGradientError(
            f"{cls.__qualname__}.backward returned {type(g).__name__} as the gradient of "
            f"{_input_name(cls, k, n)}: return an array shaped like the input (or None for no gradient)"
        )
    gshape, xshape = _shape(g), _shape(x)
    if gshape != xshape and not _broadcasts_to(xshape, gshape):
        raise CustomGradientError(
            f"{cls.__qualname__}.backward returned a gradient of shape {gshape} for "
            f"{_input_name(cls, k, n)}, of shape {xshape}: a gradient has its input's shape"
        )


def _is_numeric(v):
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float, complex)):
        return True
    dtype = getattr(v, "dtype", None)
    return hasattr(v, "shape") and dtype is not None and dtype.kind in "fciu"


def _broadcasts_to(shape, target):
    lead = len(target) - len(shape)
    return lead >= 0 and all(a == b or a == 1 for a, b in zip(shape, target[lead:]))


def _input_names(cls, n):
    """The names of ``forward``'s inputs after ``ctx`` (``input k`` where it has none)."""
    import inspect

    try:
        params = [
            p
            for p in inspect.signature(cls.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ][1:]
    except (TypeError, ValueError):
        params = []
    return [params[k].name if k < len(params) else f"input {k}" for k in range(n)]


def _input_name(cls, k, n):
    name = _input_names(cls, n)[k]
    return f"input {k} ({name})" if not name.startswith("input ") else name


def _count(n, what):
    return f"{n} {what}{'' if n == 1 else 's'}"


class Function:
    """A custom differentiable operation, as ``torch.autograd.Function``::

        class MyReLU(sourcegrad.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return np.maximum(x, 0)

            @staticmethod
            def backward(ctx, grad_output):
                x, = ctx.saved_tensors
                return grad_output * (x > 0)

    Call it as ``MyReLU.apply(x)`` inside a differentiated function: the forward runs in the
    forward sweep and ``backward`` in the backward sweep; sourcegrad never looks inside either.
    ``backward`` returns one gradient per input (a tuple for several; ``None`` for zero), each
    shaped like its input (see ``custom_backward``). A ``forward`` that returns a tuple has
    several outputs: ``backward(ctx, g_a, g_b)`` gets one cotangent per output, zeros for an
    output that got no gradient."""

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("a sourcegrad.Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "a sourcegrad.Function subclass must define backward(ctx, grad_output)"
        )

    @classmethod
    def apply(cls, *args):
        """Outside differentiated code: just the forward."""
        return cls.forward(Context(), *args)


def stop_gradient(x):
    """``x`` itself, through which no gradient flows."""
    return x


class no_grad:
    """``with sourcegrad.no_grad():`` -- inside a differentiated function, nothing computed in the
    block carries a gradient. Outside one it does nothing (plain numpy tracks nothing)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Context:
    """The ``ctx`` of a custom :class:`sourcegrad.Function`: what forward saves for backward."""

    __slots__ = ("saved_tensors", "needs_input_grad", "__dict__")

    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()

    def save_for_backward(self, *values):
        self.saved_tensors = values


# What users reach as ``sourcegrad.runtime.X`` (and ``sourcegrad.X``) keeps that name in reprs,
# pickles and the rule tables.
for _public in (Function, Context, stop_gradient, no_grad):
    _public.__module__ = __package__
