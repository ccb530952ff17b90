"""Values as the tape keeps them and as the user gets them back.

``copy_value``/``copy_arrays`` protect saved arrays from later in-place writes, ``shape_of`` keeps
only what the backward reads of an overwritten value, ``scale_repeated`` is a geometric loop's
backward in closed form, and ``finalize`` gives a gradient its argument's structure, shape, dtype
and kind.
"""

from __future__ import annotations

import copy as _copy
import sys

import numpy as np

from .backend import LikeModule, ShapeOf, array_module
from .broadcast import as_array_like
from .zeros import ZERO, zeros_like

__all__ = [
    "shape_of",
    "inexact_part",
    "scale_repeated",
    "copy_value",
    "copy_entries",
    "copy_arrays",
    "finalize",
]

_ndarray = np.ndarray


def shape_of(x):
    """What the backward keeps of an overwritten value it reads only the shape of."""
    if type(x) is _ndarray:  # the common case, first and cheap
        return ShapeOf(x.shape, x.dtype, np)
    shape = getattr(x, "shape", None)
    if shape is None or x is None:
        return x
    return ShapeOf(shape, x.dtype, array_module(x))


def inexact_part(g, y):
    """The adjoint ``g`` of the value ``y``, or zeros when ``y``'s dtype is not inexact: a value
    of integers or booleans carries no gradient (a cast to them is a step function). ``y`` may
    be what ``shape_of`` kept of it; a value with no dtype (a Python number, a list) passes."""
    dtype = getattr(y, "dtype", None)
    if dtype is None or g is ZERO or dtype.kind in "fcOV":
        return g
    return zeros_like(g)


_FLOAT_MIN, _FLOAT_MAX = sys.float_info.min, sys.float_info.max


def scale_repeated(g, k, n, then=1):
    """``g`` multiplied ``n`` times by the number ``k``, then by the number ``then``: the backward
    of a loop whose only differentiated statement is ``y = y * k`` (and of ``y = x * then`` before
    it). One multiplication by ``k ** n * then`` when that is a normal float; otherwise the
    multiplications one by one, so nothing overflows or underflows that would not in the loop."""
    try:
        s = float(k) ** n * then
    except OverflowError:
        s = 0.0
    if _FLOAT_MIN <= abs(s) <= _FLOAT_MAX:
        return g * s
    for _ in range(n):
        g = g * k
    return g if then == 1 else g * then


def copy_value(x):
    """Copy an array (so later in-place writes cannot reach it); other values pass through."""
    copy = getattr(x, "copy", None)
    return copy() if copy is not None and hasattr(x, "shape") else x


def copy_entries(x):
    """A copy of ``x`` that a later ``x[i] = v`` cannot reach: an array copied, a list or dict made
    anew holding the same entries (a checkpoint's snapshot of a list whose entries a loop
    replaces); other values pass through."""
    if type(x) is list or type(x) is dict:
        return x.copy()
    return copy_value(x)


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


def _broadcast_to(g, like):
    if not hasattr(g, "shape"):
        g = as_array_like(g, like)
    return np.broadcast_to(g, like.shape)


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
        if g.dtype.kind == "c" and like.dtype.kind == "f":
            g = g.real  # a real argument's adjoint is the real part (numpy would warn in astype)
        g = g.astype(like.dtype)
    if not getattr(getattr(g, "flags", None), "writeable", True):  # (a lazy array has no flags)
        g = g.copy()
    return g
