"""Adjoints of broadcasting and of reductions: ``unbroadcast`` sums an adjoint over the axes that
broadcasting added, ``unreduce`` spreads a reduction's adjoint back over the axes it reduced.

Both keep the adjoint in its array's module and float dtype, and take the cheap path first for
the common cases (equal shapes; the seed 1.0 of a small host array's sum).
"""

from __future__ import annotations

import math

import numpy as np

from .backend import _float_dtype, _known, _norm_axes, _shape, ShapeOf, array_module
from .errors import UnsupportedValueError
from .zeros import SeqAdjoint

__all__ = [
    "unbroadcast",
    "unreduce",
    "as_array_like",
    "reduce_max_mask",
    "seed_like",
    "seed_times",
    "outer_operand",
]

_ndarray = np.ndarray


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


def reduce_max_mask(x, y, axis=None, keepdims=False):
    """Where ``x`` attains the reduced extremum ``y``, shared evenly among ties."""
    y = unreduce(y, x, axis, keepdims)
    mask = (x == y).astype(_float_dtype(x))
    return mask / mask.sum(axis=axis, keepdims=True)


def seed_like(like, mean=False):
    """The adjoint of ``x`` in a loss ``np.sum(x)`` (``np.mean(x)`` with ``mean``) whose own adjoint
    is the seed 1.0: ``unreduce(1.0, x)``, the seed folded in (ones in ``x``'s shape and float dtype,
    ``1 / x.size`` each for a mean)."""
    return unreduce(1.0, like, None, False, mean)


def outer_operand(a, b):
    """``a`` with one new trailing axis per axis of ``b``: ``ufunc.outer(a, b)`` is
    ``ufunc(outer_operand(a, b), b)``, so the ufunc's own broadcasting rule differentiates it."""
    return np.reshape(a, np.shape(a) + (1,) * np.ndim(b))


# the dtypes whose arrays seed_times copies: native floats, of which 1.0 times an entry is the entry
_COPIED = frozenset(np.dtype(c) for c in "efdg")


def seed_times(like, w):
    """``seed_like(like) * w``: the adjoint of ``y`` in a loss ``np.sum(y * w)``. Where ``w`` is an
    array of ``like``'s shape and float dtype, that product is a copy of ``w``, made without the
    array of ones."""
    if (
        type(w) is _ndarray
        and type(like) is _ndarray
        and w.shape == like.shape
        and w.dtype == like.dtype
        and like.dtype in _COPIED
        and like.ndim  # (a 0-d seed is the number 1.0, and 1.0 * w a numpy scalar)
    ):
        return w.copy()
    return seed_like(like) * w
