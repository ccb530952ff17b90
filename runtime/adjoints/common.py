"""Pieces several kinds of adjoint share: shares of ties, masks that avoid 0/0, casts.

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import numpy as np

from ..backend import LikeModule, _float_dtype, _shape, array_module
from ..zeros import zeros_like


def _nd(x):
    """The number of dimensions (0 for a Python scalar)."""
    try:
        return x.ndim
    except AttributeError:
        return len(_shape(x))


def share(mask, axis=None, like=None):
    """``mask`` as numbers (of ``like``'s float dtype) that sum to one along ``axis``: ties
    share evenly."""
    m = mask.astype(_float_dtype(like))
    return m / m.sum(axis=axis, keepdims=True)


def _unpermute(g, order, axis, like):
    """The array ``out`` shaped like ``like`` with ``out[order[i]] = g[i]`` along ``axis`` (flat
    for ``None``): the adjoint of taking ``like``'s entries in ``order``. A scatter into zeros
    where the array library writes through views (numpy, cupy); otherwise a gather through the
    inverse permutation, since a lazy array (dask) cannot be written through a view and its
    fallback for ``np.put_along_axis`` would write into a copy."""
    if isinstance(array_module(like), LikeModule):
        if axis is None:
            return np.reshape(np.reshape(g, -1)[np.argsort(order, kind="stable")], _shape(like))
        return np.take_along_axis(g, np.argsort(order, axis=axis, kind="stable"), axis=axis)
    out = zeros_like(like)
    if axis is None:
        out.reshape(-1)[order] = np.reshape(g, -1)
        return out
    np.put_along_axis(out, order, g, axis=axis)
    return out


def operands_of(*xs):
    """The operands actually passed to ``einsum`` (trailing ``None`` defaults dropped)."""
    return [x for x in xs if x is not None]


def _is_complex(x):
    return getattr(x, "dtype", None) is not None and x.dtype.kind == "c" or isinstance(x, complex)
