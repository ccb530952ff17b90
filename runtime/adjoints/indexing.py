"""Indexing and selection: takes, sorts, clips, ``interp``, scatters with ``ufunc.at``
(``transforms/rules/indexing.py``).

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import numpy as np

from ..backend import _float_dtype, _shape
from ..broadcast import unbroadcast
from ..scatter import _scatter_add
from ..zeros import zeros_like
from .common import _nd, _unpermute


def cast_like(g, x, y=None):
    """``g`` in ``x``'s floating dtype: the adjoint of ``y = x.astype(...)`` (zero when ``y`` is
    an integer or boolean array: a cast to integers has no gradient)."""
    ydtype = getattr(y, "dtype", None)
    if ydtype is not None and ydtype.kind not in "fc":
        return zeros_like(x)
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc" or not hasattr(g, "astype"):
        return g
    return g.astype(dtype, copy=False)


def untake(g, x, indices, axis=None):
    """Adjoint of ``np.take(x, indices, axis)``: repeated indices accumulate."""
    out = zeros_like(x)
    if axis is None:
        flat = out.reshape(-1)
        _scatter_add(flat, np.ravel(indices), np.ravel(g))
        return out
    axis = axis % _nd(x)
    moved = np.moveaxis(out, axis, 0)
    gm = np.moveaxis(g, list(range(axis, axis + np.ndim(indices))), list(range(np.ndim(indices))))
    _scatter_add(moved, indices, gm)
    return out


def untake_along_axis(g, x, indices, axis):
    """Adjoint of ``np.take_along_axis(x, indices, axis)``."""
    out = zeros_like(x)
    if axis is None:
        _scatter_add(out.reshape(-1), np.ravel(indices), np.ravel(g))
        return out
    idx = list(np.ix_(*[np.arange(n) for n in _shape(indices)]))
    idx[axis % _nd(x)] = indices
    _scatter_add(out, tuple(idx), g)
    return out


def unsort(g, x, axis=-1):
    """Adjoint of ``np.sort``: ``g`` sent back to the positions the sorted entries came from."""
    return _unpermute(g, np.argsort(x, axis=axis, kind="stable"), axis, x)


def either(a, b):
    """``a``, or ``b`` where ``a`` is None (a bound given under either of its names)."""
    return b if a is None else a


def clip_mask(x, lo, hi):
    """True where ``np.clip(x, lo, hi)`` passed ``x`` through."""
    m = True
    if lo is not None:
        m = x >= lo
    if hi is not None:
        m = m & (x <= hi)
    return m


def clip_lo_mask(x, lo, hi):
    """True where ``np.clip(x, lo, hi)`` returned ``lo``."""
    return (x < lo) & ((lo <= hi) if hi is not None else True)


def clip_hi_mask(x, lo, hi):
    """True where ``np.clip(x, lo, hi)`` returned ``hi`` (which wins when ``lo > hi``)."""
    return (x if lo is None else np.maximum(x, lo)) > hi


def interp_adjoint(g, x, xp, fp, which, left=None, right=None):
    """Adjoint of ``np.interp(x, xp, fp, left, right)`` with respect to ``x`` (which=0) or the
    values ``fp`` (which=1); outside ``xp`` the ends (or ``left``/``right``) hold."""
    i = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, len(xp) - 2)
    width = xp[i + 1] - xp[i]
    t = (x - xp[i]) / width
    if which == 0:
        return g * ((t >= 0) & (t <= 1)) * (fp[i + 1] - fp[i]) / width
    g = g * ((t >= 0) | (left is None)) * ((t <= 1) | (right is None))  # else left/right hold
    t = np.clip(t, 0, 1)
    out = zeros_like(fp)
    _scatter_add(out, np.ravel(i), np.ravel(g * (1 - t)))
    _scatter_add(out, np.ravel(i + 1), np.ravel(g * t))
    return out


def _at(ufunc, a, indices, b):
    out = a.copy()
    ufunc.at(out, indices, b)
    return out


def add_at(a, indices, b):
    """``np.add.at(a, indices, b)`` applied to a copy of ``a``, returned."""
    out = a.copy()
    _scatter_add(out, indices, b)  # cupyx.scatter_add on the device
    return out


def subtract_at(a, indices, b):
    """``np.subtract.at(a, indices, b)`` applied to a copy of ``a``, returned."""
    out = a.copy()
    _scatter_add(out, indices, np.negative(b))
    return out


def multiply_at(a, indices, b):
    """``np.multiply.at(a, indices, b)`` applied to a copy of ``a``, returned."""
    return _at(np.multiply, a, indices, b)


def maximum_at(a, indices, b):
    """``np.maximum.at(a, indices, b)`` applied to a copy of ``a``, returned."""
    return _at(np.maximum, a, indices, b)


def minimum_at(a, indices, b):
    """``np.minimum.at(a, indices, b)`` applied to a copy of ``a``, returned."""
    return _at(np.minimum, a, indices, b)


def _positions(a, indices):
    """The flat position in ``a`` of each entry of ``a[indices]`` (repeats where indices repeat)."""
    return np.reshape(np.arange(int(np.prod(_shape(a)))), _shape(a))[indices]


def gathered(g, indices, b):
    """``g[indices]``, the adjoint of the values ``b`` scattered there (summed where ``b`` broadcast)."""
    return unbroadcast(g[indices], b)


def multiply_at_adjoint(g, a, y, indices, b, which):
    """Adjoint of ``y = multiply_at(a, indices, b)``: ``a``'s entry (which=0) times the product of
    the ``b`` scattered onto it, ``b``'s (which=1) times ``a``'s entry and the other ``b`` scattered
    onto the same entry (exact where some are 0: no division by them)."""
    pos = _positions(a, indices)
    bb = np.broadcast_to(b, pos.shape)
    if which == 0:
        return g * multiply_at(np.ones_like(a, dtype=_float_dtype(a)), indices, bb)
    flat, vals = pos.ravel(), bb.ravel()
    if np.all(vals != 0):  # the product of the others is y / (a b)
        out = np.ravel(g)[flat] * np.ravel(y)[flat] / vals
        return unbroadcast(np.reshape(out, pos.shape), b)
    others = np.ones_like(vals, dtype=_float_dtype(vals))
    order = np.argsort(flat, kind="stable")
    starts = np.flatnonzero(np.r_[True, flat[order][1:] != flat[order][:-1]])
    for lo, hi in zip(starts, np.r_[starts[1:], len(order)]):
        k = order[lo:hi]
        v = vals[k]
        before = np.cumprod(np.r_[1.0, v[:-1]])
        after = np.cumprod(np.r_[1.0, v[::-1][:-1]])[::-1]
        others[k] = before * after
    out = np.ravel(g)[flat] * np.ravel(a)[flat] * others
    return unbroadcast(np.reshape(out, pos.shape), b)


def extremum_at_adjoint(g, a, y, indices, b, which):
    """Adjoint of ``y = maximum_at(a, indices, b)`` (or ``minimum_at``): each entry's adjoint goes
    to ``a``'s entry (which=0) and to the ``b`` scattered onto it (which=1) that equal the result,
    evenly among ties."""
    pos = _positions(a, indices)
    bb = np.broadcast_to(b, pos.shape)
    won = (np.ravel(bb) == np.ravel(y)[pos.ravel()]).astype(_float_dtype(a))
    count = (y == a).astype(won.dtype).ravel()
    _scatter_add(count, pos.ravel(), won)
    count = np.reshape(count, _shape(a))
    if which == 0:
        return g * (y == a) / count
    share = np.ravel(g)[pos.ravel()] * won / np.ravel(count)[pos.ravel()]
    return unbroadcast(np.reshape(share, pos.shape), b)
