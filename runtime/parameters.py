"""Adjoints of the parameters beside a function's main operand: ``np.full``'s fill value,
``np.linspace``'s ends, ``np.arange``'s start and step, ``np.meshgrid``'s vectors, the weights of
``np.bincount``, the values ``np.unique`` keeps, ``np.pad``'s constant, ``np.interp``'s
breakpoints and end values, the entries of ``np.r_[...]``, a norm's order.

Each helper takes the output adjoint ``g`` first and returns the adjoint of one parameter, shaped
like it (a Python number's adjoint is a 0-d array; ``finalize`` makes it a float).
"""

from __future__ import annotations

import numpy as np

from .backend import _shape
from .broadcast import unbroadcast
from .scatter import _scatter_add
from .zeros import ZERO, zeros_like

__all__ = [
    "fill_adjoint",
    "linspace_adjoint",
    "arange_adjoint",
    "meshgrid_adjoint",
    "bincount_adjoint",
    "unique_adjoint",
    "pad_values_adjoint",
    "interp_xp_adjoint",
    "interp_end_adjoint",
    "trapezoid_dx_adjoint",
    "index_join",
    "join_adjoint",
    "norm_order_adjoint",
]


def fill_adjoint(g, fill_value):
    """Adjoint of the fill value of ``np.full(shape, v)`` / ``np.full_like(a, v)``: every entry
    is a copy of ``v`` (broadcast), so it gets their sum."""
    return unbroadcast(g, fill_value)


def _linspace_steps(num, endpoint, xp=np):
    div = (num - 1) if endpoint else num
    t = xp.arange(num, dtype=float)
    return t / div if div > 0 else t * 0.0


def linspace_adjoint(g, start, stop, num=50, endpoint=True, axis=0, which=0):
    """Adjoint of ``start`` (which=0) or ``stop`` (which=1) of ``np.linspace``: entry k is
    ``start + (stop - start) * t_k`` with ``t_k = k / (num - 1)`` (``k / num`` without the
    endpoint), so ``start`` gets ``sum((1 - t_k) g_k)`` and ``stop`` gets ``sum(t_k g_k)``."""
    t = _linspace_steps(int(num), endpoint)
    if int(num) == 1 and endpoint:
        t = t * 0.0  # numpy returns [start]
    weight = t if which else 1.0 - t
    gm = np.moveaxis(g, axis, 0)
    total = np.tensordot(weight, gm, axes=(0, 0)) if gm.shape[0] else np.zeros(gm.shape[1:])
    return unbroadcast(total, start if which == 0 else stop)


def arange_adjoint(g, start, stop=None, step=None, which=0):
    """Adjoint of ``start`` (which=0) or ``step`` (which=2) of ``np.arange``: entry k is
    ``start + k * step``. With one argument that argument is the stop, which only sets the
    length (no gradient); ``stop`` never has one."""
    if stop is None:
        return np.zeros(())  # np.arange(n): ``start`` is the stop
    if which == 0:
        return np.sum(g)
    return np.sum(g * np.arange(np.size(g)))


def meshgrid_adjoint(gs, xs, which, indexing="xy"):
    """Adjoint of vector ``which`` of ``np.meshgrid(*xs, indexing=...)``: each output copies
    the vector along the other axes, so it gets the outputs' adjoints summed over them."""
    n = len(xs)
    axis = which
    if indexing == "xy" and n >= 2 and which < 2:
        axis = 1 - which
    g = gs[which] if which < len(gs) else ZERO
    if g is ZERO:
        return zeros_like(xs[which])
    others = tuple(i for i in range(np.ndim(g)) if i != axis)
    total = np.sum(g, axis=others)
    return np.reshape(total, _shape(xs[which]))


def bincount_adjoint(g, x, weights):
    """Adjoint of the weights of ``np.bincount(x, weights)``: weight i is added into bin x[i]."""
    return g[np.asarray(x)]


def unique_adjoint(g, ar):
    """Adjoint of ``np.unique(ar)`` (the sorted distinct values): each entry of ``ar`` equal to
    a kept value shares that value's adjoint evenly with its equals (as ties of ``max`` do)."""
    flat = np.ravel(ar)
    _, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True)
    inverse = np.ravel(inverse)
    return np.reshape(g[inverse] / counts[inverse], _shape(ar))


def pad_values_adjoint(g, array, pad_width, mode="constant", constant_values=0):
    """Adjoint of ``constant_values`` of ``np.pad``: every padded entry is a copy of the value
    for its axis and side. Padding a zero array with a one-hot table of values finds the
    entries that copy each one (numpy fills axis by axis, so corners copy the later axis)."""
    if mode != "constant":
        return zeros_like(constant_values) if np.ndim(constant_values) else np.zeros(())
    nd = np.ndim(array)
    pairs = np.zeros((nd, 2))
    for i in range(nd):
        for j in range(2):
            onehot = np.zeros((nd, 2))
            onehot[i, j] = 1.0
            mask = np.pad(
                np.zeros(_shape(array)), pad_width, mode="constant", constant_values=onehot
            )
            pairs[i, j] = np.sum(g * mask)
    return unbroadcast(pairs, constant_values)


def _segment(x, xp):
    i = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, len(xp) - 2)
    width = xp[i + 1] - xp[i]
    return i, width, (x - xp[i]) / width


def interp_xp_adjoint(g, x, xp, fp, left=None, right=None):
    """Adjoint of the breakpoints ``xp`` of ``np.interp(x, xp, fp)``: inside segment k the value
    is ``fp_k + s (x - xp_k)`` with slope ``s = (fp_k+1 - fp_k) / (xp_k+1 - xp_k)``, so
    ``xp_k`` gets ``-s (1 - t)`` and ``xp_k+1`` gets ``-s t`` (t the position in the segment);
    outside the range the end values hold and no breakpoint moves the value."""
    x = np.asarray(x, dtype=float)
    xp = np.asarray(xp, dtype=float)
    fp = np.asarray(fp, dtype=float)
    out = np.zeros(xp.shape)
    if len(xp) < 2:
        return out
    i, width, t = _segment(x, xp)
    inside = (t >= 0) & (t <= 1)
    slope = (fp[i + 1] - fp[i]) / width
    gi = np.where(inside, g, 0.0)
    _scatter_add(out, np.ravel(i), np.ravel(-gi * slope * (1 - t)))
    _scatter_add(out, np.ravel(i + 1), np.ravel(-gi * slope * t))
    return out


def interp_end_adjoint(g, x, xp, value, side):
    """Adjoint of ``left`` (side=0) or ``right`` (side=1) of ``np.interp``: the value returned
    for ``x`` below ``xp[0]`` (above ``xp[-1]``)."""
    x = np.asarray(x)
    mask = x < xp[0] if side == 0 else x > xp[-1]
    return unbroadcast(np.where(mask, g, 0.0), value)


def trapezoid_dx_adjoint(g, y, x=None, dx=1.0, axis=-1):
    """Adjoint of ``dx`` of ``np.trapezoid(y, dx=dx)``: the integral is linear in the spacing
    (and does not depend on it when sample points ``x`` are given)."""
    if x is not None:
        return zeros_like(dx) if np.ndim(dx) else np.zeros(())
    ym = np.moveaxis(np.asarray(y), axis, -1)
    unit = np.sum((ym[..., 1:] + ym[..., :-1]) / 2.0, axis=-1)
    return unbroadcast(g * unit, dx)


def index_join(joiner, *entries):
    """``np.r_[a, b, ...]`` / ``np.c_[a, b, ...]``: ``joiner`` indexed by the entries."""
    return joiner[entries if len(entries) != 1 else entries[0]]


def join_adjoint(g, joiner, entries, which):
    """Adjoint of entry ``which`` of ``np.r_[...]``/``np.c_[...]``. Joining only moves entries,
    so joining arrays of distinct labels instead of the values says where each entry went."""
    labels, start = [], 0
    for x in entries:
        n = int(np.size(x))
        labels.append(
            np.reshape(np.arange(start, start + n, dtype=float), np.shape(x))
            if np.ndim(x)
            else float(start)
        )
        start += n
    placed = np.asarray(index_join(joiner, *labels))
    lo = sum(int(np.size(x)) for x in entries[:which])
    out = np.zeros(int(np.size(entries[which])))
    mine = (placed >= lo) & (placed < lo + out.size)
    np.add.at(out, (placed[mine] - lo).astype(int), np.asarray(g)[mine])
    return np.reshape(out, np.shape(entries[which]))


def norm_order_adjoint(g, x, y, ord, axis=None, keepdims=False):
    """Adjoint of the order ``p`` of a vector norm ``y = (sum |x|^p)^(1/p)``:
    ``dy/dp = y (sum |x|^p log|x| / sum |x|^p - log(sum |x|^p) / p) / p`` (entries at 0 add
    nothing to either sum). Only a finite, nonzero order has one; numpy takes no other float."""
    a = np.abs(np.asarray(x, dtype=float))
    if axis is None:
        a = a.ravel()
        axis = 0
    p = float(ord)
    powered = np.where(a > 0, a, 1.0) ** p * (a > 0)
    total = np.sum(powered, axis=axis, keepdims=True)
    weighted = np.sum(powered * np.log(np.where(a > 0, a, 1.0)), axis=axis, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    yk = np.where(total > 0, safe ** (1.0 / p), 0.0)
    slope = np.where(total > 0, yk * (weighted / safe - np.log(safe) / p) / p, 0.0)
    slope = slope if keepdims else np.squeeze(slope, axis=axis)
    return np.sum(g * slope)
