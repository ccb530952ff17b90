"""What generated code calls at run time.

Small and boring on purpose: the zero adjoint, accumulation, broadcasting reductions, scatter-add
for indexing adjoints, and the choice of array module. Everything goes through the array's own
module (numpy, cupy, or anything that implements numpy's dispatch protocols), so nothing here moves
data between host and device. Imports numpy only; cupy is looked up lazily through the arrays.
"""

from __future__ import annotations

import copy as _copy
import functools
import math
import operator
import sys

import numpy as np

__all__ = [
    "ZERO",
    "acc",
    "unbroadcast",
    "unreduce",
    "unindex",
    "zero_at",
    "finalize",
    "array_module",
    "Context",
    "reduce_max_mask",
    "copy_value",
    "copy_arrays",
    "check_finite",
    "zeros_like",
    "SeqAdjoint",
    "MapAdjoint",
    "split_last",
    "shape_of",
    "ShapeOf",
    "check_unpack",
    "written_part",
    "check_sequence",
    "as_array_like",
    "scale_repeated",
    "seed_like",
]


_ndarray = np.ndarray


class _Zero:
    """The adjoint of a value no output depends on (yet). Never mixed into arithmetic: generated
    code tests ``x_bar is ZERO`` where the analysis cannot decide statically."""

    __slots__ = ()

    def __repr__(self):
        return "ZERO"

    def __reduce__(self):
        return "ZERO"

    def __bool__(self):
        return False


ZERO = _Zero()


def acc(total, g):
    """``total + g`` where either may be ``ZERO``."""
    if total is ZERO:
        return g
    if g is ZERO:
        return total
    return total + g


class SeqAdjoint(list):
    """The adjoint of a list or tuple: one entry per element (``ZERO`` where nothing flowed).
    ``+`` adds entry by entry, never concatenates."""

    __slots__ = ()

    def __add__(self, other):
        if other is ZERO:
            return self
        return SeqAdjoint(acc(a, b) for a, b in zip(self, other))

    __radd__ = __add__
    __iadd__ = __add__  # never list's extend

    def __getitem__(self, idx):
        got = list.__getitem__(self, idx)
        return SeqAdjoint(got) if isinstance(idx, slice) else got


class MapAdjoint(dict):
    """The adjoint of a dict: one entry per key that a gradient reached."""

    __slots__ = ()

    def __add__(self, other):
        if other is ZERO:
            return self
        out = MapAdjoint(self)
        for k, v in other.items():
            out[k] = acc(out.get(k, ZERO), v)
        return out

    __radd__ = __add__


def split_last(g):
    """The adjoint of a list's last element and of the rest (undoing ``append``)."""
    if g is ZERO:
        return ZERO, ZERO
    return g[-1], g[:-1]


def _container_zeros(like):
    if isinstance(like, dict):
        return MapAdjoint()
    return SeqAdjoint([ZERO] * len(like))


def array_module(*xs):
    """numpy, or the module of the first argument that is an array of another library: its
    array-API namespace (cupy), or, for any other NEP 18 duck array (a dask array), numpy whose
    creation functions make arrays of that type (``LikeModule``)."""
    for x in xs:
        if type(x) is _ndarray:
            continue
        if type(x) is ShapeOf:
            return x.module
        mod = type(x).__module__
        if mod != "numpy" and hasattr(x, "__array_namespace__"):
            return x.__array_namespace__()
        if mod.startswith("cupy"):
            return sys.modules["cupy"]
        if hasattr(type(x), "__array_function__") and not isinstance(x, (_ndarray, np.generic)):
            return LikeModule(x)
    return np


# numpy's functions that make an array from Python values and take NEP 35's ``like=``
_LIKE_CREATORS = frozenset(
    {
        "array",
        "asarray",
        "asanyarray",
        "ascontiguousarray",
        "asfortranarray",
        "arange",
        "empty",
        "zeros",
        "ones",
        "full",
        "eye",
        "identity",
        "tri",
        "fromfunction",
        "fromiter",
        "frombuffer",
    }
)


class LikeModule:
    """numpy for a NEP 18 duck array that has no array-API namespace (a dask array): functions of
    arrays dispatch to the array's library through ``__array_function__`` as they are, and the
    functions that make arrays from Python values pass ``like=`` (NEP 35), so ``xp.asarray(1.0)``
    and ``xp.zeros(n)`` are arrays of the argument's type (lazy ones for dask), never host arrays
    mixed into its computation."""

    __slots__ = ("like",)

    def __init__(self, like):
        self.like = like

    def __getattr__(self, name):
        fn = getattr(np, name)
        if name not in _LIKE_CREATORS:
            return fn
        like = self.like
        return functools.partial(fn, like=like)

    def __repr__(self):
        return f"<numpy like {type(self.like).__module__}.{type(self.like).__name__}>"


def _shape(x):
    shape = getattr(x, "shape", None)
    if shape is not None:
        return shape
    if isinstance(x, (list, tuple)):  # numpy's view of a (nested, regular) sequence
        return (len(x),) + (_shape(x[0]) if len(x) else ())
    return ()


def unbroadcast(g, like):
    """Sum ``g`` over the axes that broadcasting added to ``like``'s shape."""
    try:
        if g.shape == like.shape:  # the common case, first and cheap
            return g
    except AttributeError:
        pass
    if isinstance(like, (list, tuple)):
        return _sequence_adjoint(g, like)
    if isinstance(like, dict):
        return g
    shape = _shape(like)
    gshape = _shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead > 0 and gshape[lead:] == shape:  # only leading axes were added (a bias): one sum
        return g.sum(axis=_LEADING[lead] if lead < len(_LEADING) else tuple(range(lead)))
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if axes:
        g = (
            g.sum(axis=axes, keepdims=False)
            if not lead or len(axes) == lead
            else _sum_keep(g, lead, axes)
        )
    if _shape(g) != shape:
        g = g.reshape(shape)
    return g


_LEADING = [tuple(range(k)) for k in range(8)]


def _sequence_adjoint(g, like):
    """A Python list or tuple that an array rule differentiated: numpy made it an array (its
    adjoint is that array's, entry by entry), or the operation was a sequence one compiled as
    numpy's (``a + b`` of two list arguments), which is refused rather than summed as an array."""
    if isinstance(g, list):
        if len(g) == len(like):
            return g
    elif hasattr(g, "shape") and _shape(g) == np.shape(like):
        return SeqAdjoint(np.reshape(g[k], _shape(x)) for k, x in enumerate(like))
    elif hasattr(g, "shape"):
        # numpy broadcast the sequence, or Python concatenated or repeated it: the shapes alone
        # cannot tell, and summing a concatenation's adjoint would be silently wrong
        raise UnsupportedValueError(
            f"a Python {type(like).__name__} of shape {np.shape(like)} reached a rule for arrays "
            f"whose result has shape {_shape(g)}: sourcegrad compiled this operation for arrays "
            "(the operand's kind was not known), and cannot tell numpy's broadcasting from a "
            "list's concatenation or repetition; convert it with np.asarray(...) where numpy "
            "should see an array, or pass the list as an argument of its own"
        )
    raise UnsupportedValueError(
        f"a Python {type(like).__name__} reached a rule for arrays: sourcegrad compiled this operation "
        "for arrays (the argument's kind was not known), but it got a sequence; convert it with "
        "np.asarray(...), or build the list inside the function"
    )


def _sum_keep(g, lead, axes):
    g = g.sum(axis=tuple(range(lead)))
    inner = tuple(a - lead for a in axes if a >= lead)
    return g.sum(axis=inner, keepdims=True)


def _norm_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim for a in axis))
    return (operator.index(axis) % ndim,)


def _known(shape):
    """``shape``, whose every length must be known: a lazy array with chunks of unknown length
    (dask's nan) cannot be differentiated where a rule counts its entries."""
    for n in shape:
        if n != n:
            raise UnsupportedValueError(
                f"an array of shape {shape} has lengths that are not known (chunks of unknown size); "
                "sourcegrad needs them for the gradient: call x.compute_chunk_sizes() first"
            )
    return shape


_FILL_MAX = 8192
_HOST_SCALARS = (float, int, np.float64, np.float32, np.float16, np.longdouble)


def unreduce(g, like, axis=None, keepdims=False, mean=False):
    """Broadcast the adjoint of a reduction over ``axis`` back to ``like``'s shape; ``mean=True``
    also divides it by the number of entries reduced (``np.mean``), counted from the shape alone
    (``np.size`` of a lazy array would compute it)."""
    if (
        type(g) is float
        and type(like) is _ndarray
        and axis is None
        and not mean
        and like.ndim
        and like.size <= _FILL_MAX
    ):
        # the seed 1.0 of a small array's sum, the commonest case, first and cheap (below)
        dtype = like.dtype
        out = np.empty(like.shape, dtype=dtype if dtype.kind in "fc" else np.float64)
        out.fill(g)
        return out
    shape = _shape(like)
    if mean:
        total = math.prod(_known(shape))
        count = math.prod(shape[a] for a in _norm_axes(axis, len(shape)))
        # np.size(y) / np.size(a) as the rule was first written: the same float as 1 / count
        return unreduce(g, like, axis, keepdims) * ((total // count) / total if total else math.nan)
    if not shape:
        return g
    if (
        axis is None
        and type(g) in _HOST_SCALARS
        and (type(like) is _ndarray or _is_host_shape(like))
        and like.size <= _FILL_MAX
    ):
        # a full reduction of a small host array: filling a new array costs a fraction of
        # broadcast_to's fixed cost; a large one gets the zero-copy view below. (np.empty and
        # fill are np.full without its Python-level checks: half the time on a tiny array.)
        out = np.empty(shape, dtype=g.dtype if hasattr(g, "dtype") else _float_dtype(like))
        out.fill(g)
        return out
    if not hasattr(g, "shape"):
        # a Python number (the seed 1.0): an array of like's module and float dtype, no upcast
        g = array_module(like).asarray(g, dtype=_float_dtype(like))
    if not keepdims:
        for a in _norm_axes(axis, len(shape)):
            g = g.reshape(g.shape[:a] + (1,) + g.shape[a:])
    if g.shape == shape:
        return g
    if type(g) is not _ndarray:
        # a lazy array's unknown lengths (dask's nan): refused here, not when it computes
        _known(shape)
    return np.broadcast_to(g, shape)


def _is_host_shape(like):
    """Is ``like`` what ``shape_of`` keeps of a numpy array?"""
    return type(like) is ShapeOf and like.module is np


def as_array_like(g, like):
    """``g`` as an array of ``like``'s module and float dtype (a Python number from a scalar
    adjoint would otherwise become a host array)."""
    if hasattr(g, "shape"):
        return g
    return array_module(like).asarray(g, dtype=_float_dtype(like))


def _broadcast_to(g, like):
    if not hasattr(g, "shape"):
        g = as_array_like(g, like)
    return np.broadcast_to(g, like.shape)


def reduce_max_mask(x, y, axis=None, keepdims=False):
    """Where ``x`` attains the reduced extremum ``y``, shared evenly among ties."""
    y = unreduce(y, x, axis, keepdims)
    mask = (x == y).astype(_float_dtype(x))
    return mask / mask.sum(axis=axis, keepdims=True)


def zeros_like(x):
    """A zero adjoint for ``x``: a float array of its shape, or 0.0 for a Python scalar."""
    if isinstance(x, (list, tuple, dict)):
        return _container_zeros(x)
    if hasattr(x, "shape"):
        return array_module(x).zeros_like(x, dtype=_float_dtype(x))
    return 0.0


def _float_dtype(x):
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return np.float64
    return dtype


def _is_advanced(idx):
    items = idx if isinstance(idx, tuple) else (idx,)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer)):
            continue
        return True
    return False


def _scatter_add(target, idx, g):
    if type(target).__module__.startswith("cupy"):
        import cupyx  # deferred: only reached with cupy arrays

        cupyx.scatter_add(target, idx, g)
    else:
        np.add.at(target, idx, g)


def _scattered(like, idx, g):
    """A new array shaped like ``like``, zero but for ``g`` added at ``idx`` (repeated positions
    accumulate), for an array library with no scatter-add (dask): the flat position each entry of
    ``g`` goes to, summed per position with ``np.bincount``. Never an in-place write, so it cannot
    be lost in a view: such a library's views are copies."""
    shape = _known(_shape(like))
    size = math.prod(shape)
    host = all(
        not hasattr(p, "shape") or type(p) is _ndarray
        for p in (idx if isinstance(idx, tuple) else (idx,))
    )
    positions = (np.arange(size) if host else array_module(like).arange(size)).reshape(shape)[idx]
    values = np.reshape(np.broadcast_to(g, _shape(positions)), (-1,))
    # chunked as the values
    where = np.zeros_like(values, dtype=np.intp) + np.reshape(positions, (-1,))
    return np.reshape(np.bincount(where, weights=values, minlength=size), shape).astype(
        _float_dtype(like)
    )


def unindex(g, like, idx):
    """The adjoint of ``like[idx]``: ``g`` placed in a zero array of ``like``'s shape.

    Repeated integer indices accumulate (scatter-add), as the chain rule asks."""
    if isinstance(like, (list, tuple, dict)):
        out = _container_zeros(like)
        out[idx] = SeqAdjoint(g) if isinstance(idx, slice) else g
        return out
    if (
        type(like) is not _ndarray
        and _is_advanced(idx)
        and isinstance(array_module(like), LikeModule)
    ):
        return _scattered(like, idx, g)
    out = zeros_like(like)
    if _is_advanced(idx):
        _scatter_add(out, idx, g)
    else:
        out[idx] = g
    return out


def written_part(g, idx, value):
    """The adjoint of ``value`` in ``a[idx] = value``, given the adjoint ``g`` of the new ``a``.

    With repeated integer indices numpy keeps the last write, so only the written positions
    that survived pass their adjoint back."""
    part = g[idx]
    if _is_advanced(idx):
        xp = array_module(g)
        ids = xp.arange(part.size).reshape(part.shape)
        winner = xp.full(g.shape, -1)
        winner[idx] = ids
        part = part * (winner[idx] == ids)
    return unbroadcast(part, value)


def zero_at(g, idx):
    """A copy of the adjoint ``g`` with ``g[idx]`` zeroed: the overwritten part of an array."""
    if isinstance(g, (SeqAdjoint, MapAdjoint)):
        g = type(g)(g)
        if isinstance(idx, slice):
            g[idx] = [ZERO] * len(range(*idx.indices(len(g))))
        else:
            g[idx] = ZERO
        return g
    g = g.copy()
    g[idx] = 0
    return g


class ShapeOf:
    """Stands in for an array whose shape and dtype, but not values, the backward needs."""

    __slots__ = ("shape", "dtype", "module")

    def __init__(self, shape, dtype, module):
        self.shape = shape
        self.dtype = dtype
        self.module = module  # the array's module, for arrays made in its place

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for k in self.shape:
            n *= k
        return n


def seed_like(like, mean=False):
    """The adjoint of ``x`` in a loss ``np.sum(x)`` (``np.mean(x)`` with ``mean``) whose own adjoint
    is the seed 1.0: ``unreduce(1.0, x)``, the seed folded in (ones in ``x``'s shape and float dtype,
    ``1 / x.size`` each for a mean)."""
    return unreduce(1.0, like, None, False, mean)


def shape_of(x):
    """What the backward keeps of an overwritten value it reads only the shape of."""
    if type(x) is _ndarray:  # the common case, first and cheap
        return ShapeOf(x.shape, x.dtype, np)
    shape = getattr(x, "shape", None)
    if shape is None or x is None:
        return x
    return ShapeOf(shape, x.dtype, array_module(x))


_FLOAT_MIN, _FLOAT_MAX = sys.float_info.min, sys.float_info.max


def scale_repeated(g, k, n):
    """``g`` multiplied ``n`` times by the number ``k``: the backward of a loop whose only
    differentiated statement is ``y = y * k``. One multiplication by ``k ** n`` when that is a
    normal float; otherwise the multiplications one by one, so nothing overflows or underflows
    that would not in the loop."""
    try:
        s = float(k) ** n
    except OverflowError:
        s = 0.0
    if _FLOAT_MIN <= abs(s) <= _FLOAT_MAX:
        return g * s
    for _ in range(n):
        g = g * k
    return g


def check_sequence(seq):
    """``for x in seq`` is compiled as indexing ``seq[0], seq[1], ...``: refuse a dict, whose
    iteration yields keys, not items by position."""
    if isinstance(seq, dict):
        raise UnsupportedValueError(
            "a differentiated function cannot loop over a dict directly; "
            "loop over d.items(), d.keys() or d.values()"
        )


def check_unpack(value, n):
    """``a, b = value`` unpacks by indexing: first check the count, as Python would."""
    if len(value) != n:
        raise ValueError(f"cannot unpack {len(value)} values into {n} targets")


def copy_value(x):
    """Copy an array (so later in-place writes cannot reach it); other values pass through."""
    copy = getattr(x, "copy", None)
    return copy() if copy is not None and hasattr(x, "shape") else x


def copy_arrays(x):
    """``x`` with every array it holds through tuples, lists and dicts copied (``has_aux``'s aux,
    which a backward that restores arrays in place must not change)."""
    if isinstance(x, tuple):
        items = [copy_arrays(v) for v in x]
        return x._make(items) if hasattr(x, "_make") else type(x)(items)  # (a namedtuple too)
    if isinstance(x, (list, dict)):
        out = _copy.copy(x)  # the same kind of list or dict, its entries then copied
        for k in range(len(x)) if isinstance(x, list) else x:
            out[k] = copy_arrays(x[k])
        return out
    return copy_value(x)


def finalize(g, like):
    """The gradient as the user gets it: ``like``'s structure, shape, dtype and kind (array or
    Python float; a list, tuple or dict of them for a container)."""
    if (
        type(g) is _ndarray
        and type(like) is _ndarray
        and g.shape == like.shape
        and g.dtype == like.dtype
        and g.flags.writeable
    ):
        return g  # the common case, first and cheap
    if isinstance(like, dict):
        return {k: finalize(ZERO if g is ZERO else g.get(k, ZERO), v) for k, v in like.items()}
    if isinstance(like, (list, tuple)):
        entries = [ZERO] * len(like) if g is ZERO else g
        return type(like)(finalize(e, v) for e, v in zip(entries, like))
    if g is ZERO:
        g = zeros_like(like)
    like_type = type(like)
    if like_type is float or like_type is int:
        if isinstance(array_module(g), LikeModule):  # a lazy 0-d array: float() would compute it
            return g.reshape(())
        return float(g)
    if isinstance(like, np.generic) and like.dtype.kind in "fc":
        return like.dtype.type(g)  # a numpy scalar in, the same kind of scalar out
    if not hasattr(like, "shape"):
        return g
    if not hasattr(g, "shape") or g.shape != like.shape:
        g = _broadcast_to(g, like)
    if g.dtype != like.dtype and like.dtype.kind in "fc":
        g = g.astype(like.dtype)
    if not getattr(getattr(g, "flags", None), "writeable", True):  # (a lazy array has no flags)
        g = g.copy()
    return g


def check_finite(g, where):
    """Raise ``FloatingPointError`` naming the user's line when ``g`` holds NaN or inf.
    (Debugging only: the test synchronizes with the device.)"""
    if g is ZERO or isinstance(g, (SeqAdjoint, MapAdjoint)):
        return g
    xp = array_module(g)
    if not bool(xp.all(xp.isfinite(g))):
        raise FloatingPointError(f"the gradient became non-finite: {where} holds NaN or inf")
    return g


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


class CustomGradientError(ValueError):
    """A custom Function's backward returned the wrong thing (re-exported by ``sourcegrad.errors``)."""


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


from .adjoints import *  # noqa: E402,F401,F403  (rule helpers generated code calls by name)
from . import adjoints as _adjoints  # noqa: E402
from .parameters import *  # noqa: E402,F401,F403
from . import parameters as _parameters  # noqa: E402

__all__ += [
    n
    for n in dir(_adjoints)
    if not n.startswith("_")
    and callable(getattr(_adjoints, n))
    and getattr(getattr(_adjoints, n), "__module__", "").startswith(_adjoints.__name__ + ".")
]
__all__ += _parameters.__all__


class UnsupportedValueError(TypeError):
    """A value generated code cannot handle (re-exported by ``sourcegrad.errors``)."""


class NonScalarOutputError(ValueError):
    """``grad`` of a function whose value is not a scalar (re-exported by ``sourcegrad.errors``)."""


def check_scalar(value, name):
    """``grad`` needs a scalar: refuse anything else before running the backward."""
    if type(value) is np.float64 or type(value) is float:  # the common cases, first and cheap
        return
    shape = getattr(value, "shape", None)
    if shape is None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = shape == () and value.dtype.kind in "fiu"
    if not ok:
        raise NonScalarOutputError(
            f"grad needs {name} to return a real scalar, but it returned "
            f"{type(value).__name__}{' of shape ' + str(shape) if shape else ''}. "
            "For a non-scalar output use sourcegrad.vjp(f) and pass a cotangent to the pullback."
        )


__all__ += [
    "NonScalarOutputError",
    "UnsupportedValueError",
    "check_scalar",
    "grad_of",
    "custom_backward",
    "pullback_of_gradient",
    "CustomGradientError",
    "Function",
    "stop_gradient",
    "no_grad",
]

from .sequences import *  # noqa: E402,F401,F403
from . import sequences as _sequences  # noqa: E402

__all__ += _sequences.__all__

from .meter import metered_tape, snapshots  # noqa: E402
from .revolve import checkpointed, revolve  # noqa: E402

__all__ += ["metered_tape", "snapshots", "checkpointed", "revolve"]

from .lazy import LazyTape, lazy_tape, persist_live  # noqa: E402

__all__ += ["LazyTape", "lazy_tape", "persist_live"]
