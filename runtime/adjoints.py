"""Run-time pieces of adjoint rules too long to read well inline in generated code.

Grouped as the rule modules are. An adjoint helper takes the output adjoint ``g`` first and
returns the input's adjoint; a slope helper (masks, shares) returns what a template multiplies
``g`` by. All work through the arrays' own module and allocate like the input (``zeros_like``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import ZERO, LikeModule, SeqAdjoint, array_module, as_array_like, _float_dtype, _norm_axes, _scatter_add, _shape, unbroadcast, unreduce, zeros_like


def _nd(x):
    """The number of dimensions (0 for a Python scalar)."""
    try:
        return x.ndim
    except AttributeError:
        return len(_shape(x))


# --- elementwise ------------------------------------------------------------------------------

def log_of_base(base):
    """The natural log of a logarithm's base (1.0 for ``None``, base e)."""
    return 1.0 if base is None else math.log(base)


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


def nonzero_or_one(z):
    """``z`` with its zeros replaced by ones: a denominator that is zero only where its numerator
    is, so the quotient is 0 there (``hypot``'s ``x / z`` at the origin) instead of 0/0."""
    return z + (z == 0)


def power_slope(x, y):
    """The slope of ``x ** y`` in ``x``: ``y * x ** (y - 1)``, and 0 where ``y == 0`` (``x ** 0``
    is the constant 1; at ``x = 0`` the formula would be ``0 * inf``), as JAX's rule. Python
    numbers go through numpy's float64, so ``0.0 ** -0.5`` is inf as it is for arrays, not a
    ``ZeroDivisionError``."""
    if isinstance(y, (int, float)):  # a literal exponent (numpy's float64 is a float too)
        if y == 0:  # zeros shaped like x: a second-order rule reads this slope's shape
            return zeros_like(x)
        if type(x) is float or type(x) is int:
            x = np.float64(x)
        if y == 2:
            return x * 2.0  # the common square: one operation, as a hand-written backward has it
        return y * x ** (y - 1)
    y1 = y + (y == 0)  # where y is 0, x ** (1 - 1) is 1 even at x = 0: nothing to mask but the 1
    return y1 * x ** (y1 - 1) * (y != 0)


def power_exponent_slope(x, z):
    """The slope of ``z = x ** y`` in ``y``: ``z * log(x)``; 0 where ``x == 0`` (exact for
    ``y > 0``, where ``0 ** y`` is 0 all around; a convention at ``y <= 0``); NaN where ``x < 0``,
    whose logarithm numpy leaves undefined."""
    if isinstance(x, (int, float)):
        return 0.0 if x == 0 else z * math.log(x) if x > 0 else math.nan
    zero = x == 0
    return np.where(zero, 0, z) * np.log(x + zero)


def logaddexp_share(x, y, z, base=None):
    """The share of ``z = logaddexp(x, y)``'s adjoint (``logaddexp2``'s for ``base=2``) that ``x``
    gets, ``exp(x - z)``, with its limits where ``x - z`` is inf - inf: 1/2 where ``x == y == ±inf``
    (ties share evenly, as in ``maximum``; log-space zeros meet there) and 1 where only ``x`` is
    +inf."""
    exp = np.exp if base is None else np.exp2
    odd = (x == z) & ~np.isfinite(z)
    if type(odd) is np.ndarray and not odd.any():  # the usual case (host arrays only: any() syncs)
        return exp(x - z)
    share = exp(np.where(odd, 0.0, x) - np.where(odd, 0.0, z))
    return np.where(odd & (x == y), 0.5, share)


def extremum_share(wins, ties, g):
    """The share of ``maximum``/``minimum``'s adjoint an operand gets: 1 where it is the
    extremum, 1/2 where it ties, in ``g``'s dtype (so float32 stays float32)."""
    if type(ties) is np.ndarray and not ties.any():  # no ties (the usual case): skip their arithmetic
        return wins  # (a host array only: on a device, any() would wait for the device)
    dtype = getattr(g, "dtype", None)
    return wins + ties * (0.5 if dtype is None else dtype.type(0.5))


# --- reductions -------------------------------------------------------------------------------

def fanout(g, xs):
    """Adjoint of Python's ``sum(xs)``: every element receives ``g`` (unbroadcast to it)."""
    if isinstance(xs, (list, tuple)):
        return SeqAdjoint(unbroadcast(g, x) for x in xs)
    return np.broadcast_to(g, _shape(xs))  # sum over an array's first axis


def centered(a, axis=None):
    """``a`` minus its mean over ``axis`` (the slope of ``var`` and ``std``)."""
    return a - np.mean(a, axis=axis, keepdims=True)


def _spread_divisor(a, axis, ddof):
    """What ``np.var`` divides by: the count reduced over less ``ddof``, never below 0 (as numpy;
    at 0 the value, and so the slope, is inf or nan)."""
    shape = _shape(a)
    return max(math.prod(shape[i] for i in _norm_axes(axis, len(shape))) - ddof, 0)


def var_slope(a, axis=None, ddof=0):
    """The slope of ``np.var(a, axis, ddof=ddof)``: ``2 (a - mean) / (n - ddof)``."""
    n = _spread_divisor(a, axis, ddof)
    return centered(a, axis) * (2.0 / n if n else math.inf)


def std_slope(a, y, axis=None, ddof=0, keepdims=False):
    """The slope of ``y = np.std(a, axis, ddof=ddof)``: ``(a - mean) / ((n - ddof) y)``, and 0 at
    zero variance (where std, a norm of ``a - mean``, has a kink: 0 is its subgradient, as
    ``abs'(0) = 0``). Only entries equal to the mean get the 0, so a variance that underflowed
    while ``a`` still varies gives inf, never a wrong finite slope."""
    c = centered(a, axis)
    d = _spread_divisor(a, axis, ddof) * unreduce(y, a, axis, keepdims)
    return c / (d + ((c == 0) & (d == 0)))


def share(mask, axis=None, like=None):
    """``mask`` as numbers (of ``like``'s float dtype) that sum to one along ``axis``: ties
    share evenly."""
    m = mask.astype(_float_dtype(like))
    return m / m.sum(axis=axis, keepdims=True)


def prod_of_others(a, axis=None):
    """For each entry of ``a``, the product of the other entries it is reduced with (no division,
    so zeros are fine): the slope of ``np.prod``."""
    axes = _norm_axes(axis, _nd(a))
    if not axes:
        return np.ones_like(a)
    moved = np.moveaxis(a, axes, range(-len(axes), 0))
    flat = np.reshape(moved, moved.shape[: _nd(a) - len(axes)] + (-1,))
    ones = np.ones_like(flat[..., :1])
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), axis=-1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], -1), axis=-1), -1)
    return np.moveaxis(np.reshape(before * after, moved.shape), range(-len(axes), 0), axes)


def _with_kept_axes(y, a, axis, keepdims):
    """``y``, the result of a reduction of ``a`` over ``axis``, with the reduced axes kept."""
    y = as_array_like(y, a)
    if keepdims:
        return y
    for k in _norm_axes(axis, _nd(a)):
        y = np.expand_dims(y, k)
    return y


def masked_unreduce(g, a, axis=None, keepdims=False, where=True):
    """Adjoint of ``np.sum(a, axis, where=where)``: ``g`` broadcast back, 0 where not summed."""
    g = unreduce(g, a, axis, keepdims)
    return g if where is True else np.where(where, g, 0.0)


def masked_mean_slope(a, axis=None, where=True):
    """The slope of ``np.mean(a, axis, where=where)``: 1 / (entries averaged) where averaged."""
    taken = np.broadcast_to(where, _shape(a)).astype(_float_dtype(a))
    return taken / np.sum(taken, axis=_norm_axes(axis, _nd(a)), keepdims=True)


def masked_extremum_share(a, y, axis=None, keepdims=False, initial=None, where=True, which=0):
    """Shares of ``np.max(a, axis, initial=initial, where=where)`` (or ``min``): the entries of
    ``a`` (which=0) or ``initial`` (which=1, shaped as ``y``) equal to the result, evenly among ties."""
    yk = _with_kept_axes(y, a, axis, keepdims)
    hit = (a == yk) if where is True else (a == yk) & where
    hit = np.broadcast_to(hit, _shape(a)).astype(_float_dtype(a))
    count = np.sum(hit, axis=_norm_axes(axis, _nd(a)), keepdims=True)
    tie = 0.0 if initial is None else (yk == initial).astype(hit.dtype)
    count = count + tie
    if which == 0:
        return hit / count
    share = tie / count
    return share if keepdims else np.reshape(share, np.shape(y))


def logaddexp_reduce_share(a, y, axis=0, keepdims=False):
    """The slope of ``np.logaddexp.reduce(a, axis)``: softmax weights ``exp(a - y)``; where the
    result is infinite, the entries equal to it share evenly (as ``logaddexp`` at ``±inf``)."""
    yk = _with_kept_axes(y, a, axis, keepdims)
    infinite = np.isinf(yk)
    w = np.exp(a - np.where(infinite, 0.0, yk))
    if not np.any(infinite):
        return w
    tie = (a == yk).astype(w.dtype)
    return np.where(infinite, tie / np.sum(tie, axis=_norm_axes(axis, _nd(a)), keepdims=True), w)


def ptp_adjoint(g, a, axis=None, keepdims=False):
    """Adjoint of ``np.ptp(a, axis)``: up at the maximum, down at the minimum (ties share)."""
    hi = np.max(a, axis=axis, keepdims=True)
    lo = np.min(a, axis=axis, keepdims=True)
    return unreduce(g, a, axis, keepdims) * (share(a == hi, axis, a) - share(a == lo, axis, a))


def _weights_like(weights, a, axis):
    """``np.average``'s weights, shaped to broadcast against ``a``."""
    if axis is not None and _nd(weights) == 1 and _nd(a) > 1:
        shape = [1] * _nd(a)
        shape[axis] = np.shape(weights)[0]
        return np.reshape(weights, shape)
    return weights


def average_adjoint(g, a, axis=None, weights=None, keepdims=False):
    """Adjoint of ``np.average(a, axis, weights)`` with respect to ``a``."""
    if weights is None:
        return unreduce(g, a, axis, keepdims, mean=True)  # (from the shape: no np.size of a lazy array)
    w = _weights_like(weights, a, axis)
    return unreduce(g, a, axis, keepdims) * w / np.sum(w, axis=axis, keepdims=True)


def average_weights_adjoint(g, a, y, axis=None, weights=None, keepdims=False):
    """Adjoint of ``np.average(a, axis, weights)`` with respect to ``weights``."""
    w = _weights_like(weights, a, axis)
    slope = unreduce(g, a, axis, keepdims) * (a - unreduce(y, a, axis, keepdims)) / np.sum(w, axis=axis, keepdims=True)
    return np.reshape(unbroadcast(slope, w), np.shape(weights))


def norm_adjoint(g, x, y, ord=None, axis=None, keepdims=False):
    """Adjoint of ``np.linalg.norm``: every vector order, and the matrix orders ``'fro'``,
    ``'nuc'``, 1, -1, 2, -2, inf and -inf (over ``axis``, a pair of axes, for stacks)."""
    matrix = isinstance(axis, tuple) and len(axis) == 2 or axis is None and _nd(x) == 2 and ord is not None
    if matrix and ord not in (None, "fro"):
        return unreduce(g, x, axis, keepdims) * _matrix_norm_slope(x, ord, axis or (0, 1))
    return vector_norm_adjoint(g, x, y, 2 if ord in (None, "fro") else ord, axis, keepdims)


def vector_norm_adjoint(g, x, y, ord=2, axis=None, keepdims=False):
    """Adjoint of ``np.linalg.vector_norm``: any order, over any axes (flattened together). At a
    zero vector, and at a zero entry where the order is below 1 (a cusp), the slope is 0: the
    norm has a kink there, and 0 is a subgradient (as ``abs'(0) = 0``)."""
    if ord == 0:  # counts the nonzeros
        slope = np.zeros_like(x)
    elif np.isinf(ord):
        slope = np.sign(x) * share(np.abs(x) == unreduce(y, x, axis, keepdims), axis, x)
    elif ord == 2:  # y is 0 only where all of x is
        slope = x / unreduce(nonzero_or_one(y), x, axis, keepdims)
    else:  # a zero entry takes 1 ** (ord - 1) times sign 0; y == 0 (all zero, or ord < 0 and one zero) is flat
        ratio = np.abs(x) / unreduce(nonzero_or_one(y), x, axis, keepdims) + (x == 0)
        slope = np.sign(x) * ratio ** (ord - 1) * unreduce(y != 0, x, axis, keepdims)
    return unreduce(g, x, axis, keepdims) * slope


def _matrix_norm_slope(x, ord, axes):
    """The slope of a matrix norm of ``x`` over the pair ``axes``."""
    m = np.moveaxis(x, axes, (-2, -1))
    if ord in ("nuc", 2, -2):
        u, _, vt = np.linalg.svd(m, full_matrices=False)
        k = 0 if ord == 2 else -1
        slope = u @ vt if ord == "nuc" else u[..., :, k, None] * vt[..., k, None, :]
    else:  # 1: the largest column sum; inf: the largest row sum; negative: the smallest
        summed, kept = (-2, -1) if abs(ord) == 1 else (-1, -2)
        sums = np.abs(m).sum(axis=summed, keepdims=True)
        best = sums.max(axis=kept, keepdims=True) if ord > 0 else sums.min(axis=kept, keepdims=True)
        slope = np.sign(m) * share(sums == best, kept, x)
    return np.moveaxis(slope, (-2, -1), axes)


def reverse_cumsum(g, x, axis=None, include_initial=False):
    """Adjoint of ``np.cumsum(x, axis)`` (and of ``np.cumulative_sum``, whose ``include_initial``
    puts a constant zero first)."""
    if axis is None:
        flat = np.ravel(g)[1:] if include_initial else np.ravel(g)
        return np.reshape(np.cumsum(flat[::-1])[::-1], _shape(x))
    if include_initial:
        g = np.delete(g, 0, axis)
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


def cumprod_adjoint(g, x, y, axis=None):
    """Adjoint of ``y = np.cumprod(x, axis)``, exact where ``x`` has zeros (it never divides by
    a zero): ``dx_j = sum_{i >= j} g_i prod_{k <= i, k != j} x_k``. Before the first zero of a lane
    that is ``reverse_cumsum(g y)_j / x_j`` (every later term holds the zero); at the first zero
    it is the same sum with that zero taken as one; after it, every term holds the first zero: 0."""
    if axis is None:
        return np.reshape(cumprod_adjoint(np.ravel(g), np.ravel(x), np.ravel(y), 0), _shape(x))
    zero = x == 0
    if type(zero) is np.ndarray and not zero.any():  # the usual case (host arrays only: any() syncs)
        return reverse_cumsum(g * y, x, axis) / x
    seen = np.cumsum(zero, axis=axis)  # zeros up to and including each entry
    before, first = seen == 0, zero & (seen == 1)
    at_first = reverse_cumsum(g * np.cumprod(np.where(first, 1, x), axis=axis), x, axis)
    until_first = reverse_cumsum(g * y, x, axis) / np.where(before, x, 1)
    return np.where(before, until_first, np.where(first, at_first, 0))


def undiff(g, n=1, axis=-1):
    """Adjoint of ``np.diff(x, n, axis)``: minus the difference of ``g`` padded with zeros, n times."""
    for _ in range(n):
        g = -np.diff(g, axis=axis, prepend=0, append=0)
    return g


def _diff_end(x, axis, end):
    """``prepend``/``append`` as ``np.diff`` joins it: a 0-d value fills a slab one entry thick."""
    end = np.asarray(end)
    if end.ndim:
        return end
    shape = list(np.shape(x))
    shape[axis] = 1
    return np.broadcast_to(end, shape)


def diff_adjoint(g, a, n=1, axis=-1, prepend=None, append=None, which=0):
    """Adjoint of ``np.diff(a, n, axis, prepend=, append=)`` for ``a`` (``which`` 0), ``prepend``
    (1) or ``append`` (2): ``undiff`` over the joined array, cut into its three parts."""
    full = undiff(g, n, axis)
    if prepend is None and append is None:
        return full if which == 0 else None
    lp = 0 if prepend is None else _diff_end(a, axis, prepend).shape[axis]
    la = np.shape(a)[axis]
    start, stop = [(lp, lp + la), (0, lp), (lp + la, None)][which]
    part = np.take(full, np.arange(full.shape[axis])[start:stop], axis=axis)
    return part if which == 0 else unbroadcast(part, [a, prepend, append][which])


# --- order statistics -------------------------------------------------------------------------

def _reduced_last(a, axis):
    """``a`` with the reduced axes moved last and merged into one, and how to undo it."""
    nd = np.ndim(a)
    axes = _norm_axes(axis, nd)
    kept = [i for i in range(nd) if i not in axes]
    moved = np.transpose(a, kept + list(axes))
    flat = moved.reshape(moved.shape[:len(kept)] + (-1,))

    def undo(h):
        return np.transpose(h.reshape(moved.shape), np.argsort(kept + list(axes)))
    return flat, undo


def _quantile_knots(a, q, axis, scale):
    """The sorted entries each quantile interpolates between, its fraction, and ``a`` reshaped."""
    flat, undo = _reduced_last(np.asarray(a), axis)
    n = flat.shape[-1]
    pos = np.asarray(q, dtype=np.float64) / scale * (n - 1)
    lo = np.clip(np.floor(pos).astype(np.intp), 0, max(n - 2, 0))
    hi = np.minimum(lo + 1, n - 1)
    srt = np.sort(flat, axis=-1)
    return flat, undo, np.take(srt, lo, axis=-1), np.take(srt, hi, axis=-1), pos - lo, n


def quantile_adjoint(g, a, q, axis=None, keepdims=False, scale=1.0):
    """Adjoint of ``a`` in ``np.quantile(a, q, axis, method='linear')`` (``scale`` 100 for
    ``percentile``): the result interpolates two sorted entries, ``(1 - f) s[lo] + f s[hi]``; each
    weight goes to the entry of that value, shared evenly among equal entries (ties share)."""
    flat, undo, vlo, vhi, frac, n = _quantile_knots(a, q, axis, scale)
    nq = np.ndim(frac)
    kshape = flat.shape[:-1]
    gk = np.moveaxis(np.reshape(as_array_like(g, flat), np.shape(frac) + kshape), tuple(range(nq)), tuple(range(-nq, 0)))
    x = flat.reshape(flat.shape + (1,) * nq)  # K + (n,) + Q
    out = 0.0
    for v, wgt in ((vlo, 1.0 - frac), (vhi, frac)):
        hit = x == np.expand_dims(v, len(kshape))
        share = hit / np.sum(hit, axis=len(kshape), keepdims=True)
        out = out + share * np.expand_dims(gk * wgt, len(kshape))
    out = np.sum(out, axis=tuple(range(-nq, 0))) if nq else out
    return undo(out).astype(_float_dtype(a), copy=False)


def quantile_q_adjoint(g, a, q, axis=None, keepdims=False, scale=1.0):
    """Adjoint of ``q``: the slope ``(s[hi] - s[lo]) (n - 1) / scale`` of the piece ``q`` is on; at
    a knot (``q (n - 1)`` an integer) the slope of the piece to the right, at ``q = 1`` (100) the
    one to the left."""
    flat, _, vlo, vhi, frac, n = _quantile_knots(a, q, axis, scale)
    nq = np.ndim(frac)
    kshape = flat.shape[:-1]
    gk = np.reshape(g, np.shape(frac) + kshape)
    slope = np.moveaxis((vhi - vlo) * (n - 1) / scale, tuple(range(len(kshape))), tuple(range(nq, nq + len(kshape))))
    return np.sum(gk * slope, axis=tuple(range(nq, nq + len(kshape))))


def unpartition(g, x, y, axis=-1):
    """Adjoint of ``np.partition(x, kth, axis)``: the result is a permutation of ``x``, matched
    entry by entry through both arrays' sorting orders (equal entries are interchangeable)."""
    if axis is None:
        from_y = np.reshape(g, -1)[np.argsort(y, axis=None, kind="stable")]
        return _unpermute(from_y, np.argsort(x, axis=None, kind="stable"), None, x)
    from_y = np.take_along_axis(g, np.argsort(y, axis=axis, kind="stable"), axis=axis)
    return _unpermute(from_y, np.argsort(x, axis=axis, kind="stable"), axis, x)


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


# --- covariance ---------------------------------------------------------------------------------

def _cov_rows(m, y, rowvar):
    """The variables as rows, as ``np.cov`` arranges them: ``m``'s rows, then ``y``'s."""
    def rows(v):
        v = np.array(v, ndmin=2)
        return v.T if not rowvar and v.shape[0] != 1 else v
    xm = rows(m)
    return xm, (None if y is None else rows(y))


def _cov_divisor(n, bias, ddof):
    return n - (ddof if ddof is not None else (0 if bias else 1))


def _cov_split(gx, m, y, rowvar, which, xm):
    part = gx[: xm.shape[0]] if which == 0 else gx[xm.shape[0]:]
    v = m if which == 0 else y
    if not rowvar and np.array(v, ndmin=2).shape[0] != 1:
        part = part.T
    return np.reshape(part, np.shape(v)).astype(_float_dtype(v), copy=False) if hasattr(v, "shape") else float(np.sum(part))


def cov_adjoint(g, m, y=None, rowvar=True, bias=False, ddof=None, which=0):
    """Adjoint of ``m`` (``which`` 0) or ``y`` (1) in ``c = np.cov(m, y, rowvar, bias, ddof)``:
    with ``X`` the centered variables (rows), ``(G + G^T) X / (N - ddof)``."""
    xm, xy = _cov_rows(m, y, rowvar)
    x = xm if xy is None else np.concatenate([xm, xy], axis=0)
    xc = x - np.mean(x, axis=1, keepdims=True)
    k = x.shape[0]
    gm = np.reshape(as_array_like(g, x), (k, k))
    gx = (gm + gm.T) @ xc / _cov_divisor(x.shape[1], bias, ddof)
    return _cov_split(gx, m, y, rowvar, which, xm)


def corrcoef_adjoint(g, x, r, y=None, rowvar=True, which=0):
    """Adjoint of ``np.corrcoef``: ``r_ij = c_ij / (d_i d_j)`` with ``d = sqrt(diag(c))``, back
    through ``np.cov``. The diagonal is 1 whatever ``x`` is: its adjoint is 0."""
    c = np.atleast_2d(np.cov(x, y, rowvar))
    d = np.sqrt(np.diagonal(c))
    k = c.shape[0]
    gr = np.reshape(as_array_like(g, c), (k, k))
    rr = np.reshape(r, (k, k))
    gc = gr / np.multiply.outer(d, d)
    gc = gc - np.diag(np.sum(gr * rr + (gr * rr).T, axis=1) / (2.0 * d * d))
    return cov_adjoint(gc, x, y, rowvar, False, None, which)


# --- polynomials, selections, axes ----------------------------------------------------------------

def polyval_adjoint_p(g, p, x):
    """Adjoint of the coefficients in ``np.polyval(p, x)``: ``g x^(N-1-i)`` for ``p[i]`` (a list
    of coefficients gets a list)."""
    n = len(p)
    parts = [unbroadcast(g * np.asarray(x) ** (n - 1 - i), p[i]) for i in range(n)]
    if isinstance(p, (list, tuple)):
        return SeqAdjoint(parts)
    return np.stack([np.broadcast_to(q, np.shape(p)[1:]) for q in parts]).astype(_float_dtype(p), copy=False)


def polyval_adjoint_x(g, p, x):
    """Adjoint of ``x`` in ``np.polyval(p, x)``: ``g`` times the derivative, by Horner's scheme."""
    y, dy = 0.0, 0.0
    for c in p:
        dy = dy * x + y
        y = y * x + c
    return unbroadcast(g * dy, x)


def select_adjoint(g, condlist, choicelist, default=0, which=None):
    """Adjoint of ``np.select``: each choice (``which`` None: the list) gets ``g`` where its
    condition is the first that holds, ``default`` (``which`` "default") where none does."""
    taken = np.zeros(np.shape(g), dtype=bool)
    out = []
    for c in condlist:
        first = np.broadcast_to(np.asarray(c, dtype=bool), np.shape(g)) & ~taken
        out.append(first)
        taken = taken | first
    if which == "default":
        return unbroadcast(np.where(taken, 0.0, g).astype(np.asarray(g).dtype), default)
    parts = [unbroadcast(np.where(f, g, 0.0).astype(np.asarray(g).dtype), ch) for f, ch in zip(out, choicelist)]
    if hasattr(choicelist, "shape"):  # the choices as one array (a list literal the compiler stacked)
        return np.stack([np.broadcast_to(q, np.shape(choicelist)[1:]) for q in parts]).astype(_float_dtype(choicelist), copy=False)
    return SeqAdjoint(parts)


def unrollaxis(g, a, axis, start=0):
    """Adjoint of ``np.rollaxis(a, axis, start)``: the inverse of the permutation it applies."""
    nd = np.ndim(a)
    axis = axis % nd
    start = start + nd if start < 0 else start
    if axis < start:
        start -= 1
    axes = list(range(nd))
    axes.remove(axis)
    axes.insert(start, axis)
    return np.transpose(g, np.argsort(axes))


def unsplit_along(gs, x, indices_or_sections, axis):
    """Adjoint of ``np.hsplit``/``vsplit``/``dsplit``: ``unsplit`` along the axis each splits
    (``hsplit`` of a 1-d array splits axis 0)."""
    if axis == 1 and np.ndim(x) == 1:
        axis = 0
    return unsplit(gs, x, indices_or_sections, axis)


def _trapezoid_widths(x, dx, axis):
    """The widths of ``np.trapezoid``'s panels, with the integration axis last."""
    if x is None:
        return dx
    return np.diff(x) if _nd(x) == 1 else np.moveaxis(np.diff(x, axis=axis), axis, -1)


def trapezoid_adjoint(g, y, x=None, dx=1.0, axis=-1):
    """Adjoint of ``np.trapezoid(y, x, dx, axis)`` with respect to ``y``: each panel gives half
    its width to both of its ends."""
    ym = np.moveaxis(y, axis, -1)
    half = np.broadcast_to(np.expand_dims(g, -1) * _trapezoid_widths(x, dx, axis) / 2, ym[..., 1:].shape)
    edge = np.zeros_like(half[..., :1])
    return np.moveaxis(np.concatenate([edge, half], -1) + np.concatenate([half, edge], -1), -1, axis)


def trapezoid_x_adjoint(g, y, x, axis=-1):
    """Adjoint of ``np.trapezoid(y, x, axis=axis)`` with respect to the sample points ``x``."""
    ym = np.moveaxis(y, axis, -1)
    panel = np.expand_dims(g, -1) * (ym[..., 1:] + ym[..., :-1]) / 2  # d value / d panel width
    gx = undiff(panel, 1, -1)
    if _nd(x) == 1:
        return np.reshape(gx, (-1, gx.shape[-1])).sum(axis=0)
    return unbroadcast(np.moveaxis(gx, -1, axis), x)


# --- linear algebra ---------------------------------------------------------------------------

def dot_adjoint_a(g, a, b):
    """Adjoint of ``a`` in ``np.dot(a, b)`` for any ranks."""
    na, nb = _nd(a), _nd(b)
    if na == 2 and nb == 2:
        return g.dot(b.T)
    if na == 0 or nb == 0:
        return unbroadcast(g * b, a)
    if nb == 1:
        return np.multiply.outer(g, b)
    # a: (..., n), b: (..., n, m): contract g over b's non-summed axes
    axes_b = [i for i in range(nb) if i != nb - 2]
    out = np.tensordot(g, b, axes=(list(range(na - 1, na - 1 + nb - 1)), axes_b))
    return out


def dot_adjoint_b(g, a, b):
    """Adjoint of ``b`` in ``np.dot(a, b)`` for any ranks."""
    na, nb = _nd(a), _nd(b)
    if na == 2 and nb == 2:
        return a.T.dot(g)
    if na == 0 or nb == 0:
        return unbroadcast(g * a, b)
    if na == 1 and nb == 1:
        return g * a
    if nb == 1:
        return np.tensordot(a, g, axes=(list(range(na - 1)), list(range(na - 1))))
    out = np.tensordot(a, g, axes=(list(range(na - 1)), list(range(na - 1))))
    # out: (n, b's axes except n-2...) -> move n back to position nb-2
    return np.moveaxis(out, 0, nb - 2)


def matmul_adjoint_a(g, a, b):
    """Adjoint of ``a`` in ``a @ b`` (batched; 1-d operands promoted as numpy does)."""
    na, nb = _nd(a), _nd(b)
    if na == 2 and nb == 2:
        return g @ b.T
    if na == 1 and nb == 1:
        return g * b
    if nb == 1:
        return unbroadcast(g[..., :, None] * b, a)
    if na == 1:
        return unbroadcast((b @ g[..., :, None])[..., 0], a)
    return unbroadcast(g @ np.swapaxes(b, -1, -2), a)


def matmul_adjoint_b(g, a, b):
    """Adjoint of ``b`` in ``a @ b``."""
    na, nb = _nd(a), _nd(b)
    if na == 2 and nb == 2:
        return a.T @ g
    if na == 1 and nb == 1:
        return g * a
    if na == 1:
        return unbroadcast(a[:, None] * g[..., None, :], b)
    if nb == 1:
        return unbroadcast((np.swapaxes(a, -1, -2) @ g[..., :, None])[..., 0], b)
    return unbroadcast(np.swapaxes(a, -1, -2) @ g, b)


def inner_adjoint(g, a, b, which):
    """Adjoint of ``a`` (which=0) or ``b`` (which=1) in ``np.inner(a, b)``."""
    if _nd(a) == 0 or _nd(b) == 0:
        return unbroadcast(g * b, a) if which == 0 else unbroadcast(g * a, b)
    lead = _nd(a) - 1  # g's axes: a's free axes, then b's
    if which == 0:
        return np.tensordot(g, b, axes=(list(range(lead, np.ndim(g))), list(range(_nd(b) - 1))))
    return np.tensordot(g, a, axes=(list(range(lead)), list(range(lead))))


def vecdot_adjoint(g, x, other, axis=-1):
    """Adjoint of ``x`` in ``np.vecdot(x, other, axis=axis)`` (or with the operands swapped)."""
    along = np.expand_dims(g, -1) * np.moveaxis(other, axis, -1)
    return unbroadcast(np.moveaxis(along, -1, axis % _nd(x) - _nd(x)), x)


def tensordot_adjoint(g, a, b, axes, which):
    """Adjoint of ``a`` (which=0) or ``b`` (which=1) in ``np.tensordot(a, b, axes)``."""
    na, nb = _nd(a), _nd(b)
    if isinstance(axes, int):
        axes_a = list(range(na - axes, na))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, int) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, int) else list(axes_b)
        axes_a = [i % na for i in axes_a]
        axes_b = [i % nb for i in axes_b]
    free_a = [i for i in range(na) if i not in axes_a]
    free_b = [i for i in range(nb) if i not in axes_b]
    ga = len(free_a)
    # g's axes are free_a + free_b; contracting it with the other operand leaves that operand's
    # summed axes in ascending order, each standing for its partner in this operand
    if which == 0:
        out = np.tensordot(g, b, axes=(list(range(ga, np.ndim(g))), free_b))
        perm = free_a + [axes_a[k] for k in np.argsort(axes_b)]
    else:
        out = np.tensordot(a, g, axes=(free_a, list(range(ga))))
        perm = [axes_b[k] for k in np.argsort(axes_a)] + free_b
    return np.transpose(out, np.argsort(perm))


def operands_of(*xs):
    """The operands actually passed to ``einsum`` (trailing ``None`` defaults dropped)."""
    return [x for x in xs if x is not None]


def einsum_adjoint(g, subscripts, operands, which, optimize=False):
    """Adjoint of operand ``which`` of ``np.einsum(subscripts, *operands)``: ``g`` contracted with
    the other operands onto this one's labels. ``...`` may stand anywhere in any operand (or in
    none); the output may be implicit; a repeated label (``"ii->i"``) puts the adjoint on a
    diagonal; labels of size 1 that broadcast sum back."""
    labels, output = _einsum_labels(subscripts, tuple(_nd(x) for x in operands))
    x, mine = operands[which], labels[which]
    others = [(s, o) for i, (s, o) in enumerate(zip(labels, operands)) if i != which]
    uniq = "".join(dict.fromkeys(mine))
    kept = "".join(c for c in uniq if c in set(output).union(*(s for s, _ in others)))
    res = np.einsum(",".join([output] + [s for s, _ in others]) + "->" + kept, g, *(o for _, o in others),
                    optimize=optimize if len(others) > 1 else False)
    # labels this operand sums over alone come back by broadcasting, those it broadcast sum back
    sizes = tuple(_shape(x)[mine.index(c)] for c in uniq)
    res = res[tuple(slice(None) if c in kept else None for c in uniq)]
    summed = tuple(i for i, (r, n) in enumerate(zip(res.shape, sizes)) if n == 1 and r != 1)
    res = np.broadcast_to(res.sum(axis=summed, keepdims=True) if summed else res, sizes)
    if uniq == mine:
        return res
    full = zeros_like(x)  # a repeated label: res goes on the diagonal it names
    index = [np.arange(n).reshape([-1 if j == k else 1 for j in range(len(uniq))]) for k, n in enumerate(sizes)]
    full[tuple(index[uniq.index(c)] for c in mine)] = res
    return full


_EINSUM_LABELS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@functools.lru_cache(maxsize=256)
def _einsum_labels(subscripts, ndims):
    """Each operand's labels and the output's, with every ``...`` spelled out as letters the
    subscripts do not use (aligned to the right, as broadcasting aligns) and an implicit output
    made explicit (``...``, then the labels used once, in numpy's order)."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    ins = inputs.split(",")
    if not arrow:
        used = inputs.replace(",", "").replace(".", "")
        output = "..." * ("..." in inputs) + "".join(sorted(c for c in set(used) if used.count(c) == 1))
    counts = [nd - len(s.replace(".", "")) for s, nd in zip(ins, ndims)]
    fresh = "".join(c for c in _EINSUM_LABELS if c not in subscripts)[: max(counts, default=0)]
    spelled = tuple(s.replace("...", fresh[len(fresh) - k:] if k else "") for s, k in zip(ins, counts))
    return spelled, output.replace("...", fresh)


def kron_adjoint(g, a, b, which):
    """Adjoint of ``np.kron(a, b)`` for operands of any ranks (the lower rank padded with leading
    ones, as numpy does): each axis of ``g`` splits into (a's index, b's index), and ``g`` as an
    (a's entries, b's entries) matrix is contracted with the other operand."""
    sa, sb = tuple(_shape(a)), tuple(_shape(b))
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    g = np.reshape(as_array_like(g, a), [n for pair in zip(sa, sb) for n in pair])
    g = np.transpose(g, [*range(0, 2 * nd, 2), *range(1, 2 * nd, 2)])  # a's axes, then b's
    g = np.reshape(g, (math.prod(sa), math.prod(sb)))
    if which == 0:
        return np.reshape(g @ np.reshape(as_array_like(b, g), -1), _shape(a))
    return np.reshape(np.reshape(as_array_like(a, g), -1) @ g, _shape(b))


def undiag(g, x, k=0):
    """Adjoint of ``np.diag(x, k)``: builds a matrix from a vector, or takes a matrix's diagonal."""
    if _nd(x) == 1:
        return np.diagonal(g, k).copy()
    return undiagonal(g, x, k)


def undiagonal(g, x, offset=0, axis1=0, axis2=1):
    """Adjoint of ``np.diagonal(x, offset, axis1, axis2)``."""
    out = zeros_like(x)
    i = np.arange(np.shape(g)[-1])
    np.moveaxis(out, (axis1, axis2), (-2, -1))[..., i + max(0, -offset), i + max(0, offset)] = g
    return out


def untrace(g, x, offset=0, axis1=0, axis2=1):
    """Adjoint of ``np.trace(x, offset, axis1, axis2)``: ``g`` all along the diagonal."""
    n = np.diagonal(x, offset, axis1, axis2).shape[-1]
    g = np.expand_dims(as_array_like(g, x), -1)
    return undiagonal(np.broadcast_to(g, g.shape[:-1] + (n,)), x, offset, axis1, axis2)


def solve_adjoint_b(g, a, x):
    """Adjoint of ``b`` in ``x = np.linalg.solve(a, b)``: ``solve(a.T, g)``."""
    if _nd(x) == _nd(a) - 1:
        return np.linalg.solve(np.swapaxes(a, -1, -2), g[..., None])[..., 0]
    return np.linalg.solve(np.swapaxes(a, -1, -2), g)


def solve_adjoint_a(gb, a, x):
    """Adjoint of ``a`` in ``x = np.linalg.solve(a, b)``, given the adjoint ``gb`` of ``b``."""
    if _nd(x) == _nd(a) - 1:  # b was a vector
        return -gb[..., :, None] * x[..., None, :]
    return -gb @ np.swapaxes(x, -1, -2)


def det_adjoint(g, a, y):
    """Adjoint of ``y = np.linalg.det(a)``: ``g`` times the cofactor matrix, ``y inv(a).T``. A
    singular matrix has cofactors but no inverse: there (and on a device, where finding out would
    wait for it) they come from the SVD ``a = u s vt`` as ``det(u vt) u diag(p) vt``, ``p`` the
    products of the other singular values."""
    g = np.expand_dims(as_array_like(g, a), (-2, -1))
    if (type(y) is np.ndarray or isinstance(y, np.generic)) and np.all(y != 0):
        return g * np.expand_dims(y, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)
    u, s, vt = np.linalg.svd(a)
    sign = np.expand_dims(np.linalg.det(u) * np.linalg.det(vt), (-2, -1))
    return g * sign * ((u * np.expand_dims(prod_of_others(s, -1), -2)) @ vt)


def slogdet_adjoint(g, a):
    """Adjoint of ``np.linalg.slogdet(a)`` through its ``logabsdet`` (the sign has none)."""
    gl = g[1] if isinstance(g, (list, tuple)) else g
    if gl is ZERO:
        return zeros_like(a)
    return np.expand_dims(gl, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


def matrix_power_adjoint(g, a, n):
    """Adjoint of ``np.linalg.matrix_power(a, n)``: the sum over k of (a^T)^k g (a^T)^(n-1-k);
    a negative power goes through the inverse."""
    if n < 0:
        b = np.linalg.inv(a)
        bt = np.swapaxes(b, -1, -2)
        return -bt @ matrix_power_adjoint(g, b, -n) @ bt
    at = np.swapaxes(a, -1, -2)
    powers = [np.linalg.matrix_power(at, k) for k in range(n)]
    return sum((powers[k] @ g @ powers[n - 1 - k] for k in range(n)), zeros_like(a))


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _parts(g, n):
    """The adjoints of a tuple result's ``n`` parts, ``None`` for a part nothing used."""
    if g is ZERO or g is None:
        return [None] * n
    return [None if gi is ZERO else gi for gi in g]


def _fold_triangle(gs, uplo="L"):
    """A symmetric matrix adjoint ``gs`` given to a function that reads one triangle of its
    argument (numpy's ``cholesky``, ``eigh``): each off-diagonal entry stands for two."""
    eye = np.eye(gs.shape[-1], dtype=gs.dtype)
    tri = np.tril if uplo == "L" else np.triu
    return tri(gs + _mT(gs), -1 if uplo == "L" else 1) + gs * eye


def _symmetric(x):
    return 0.5 * (x + _mT(x))


def cholesky_adjoint(g, a, y, upper=False):
    """Adjoint of ``np.linalg.cholesky(a)`` (Murray 2016): with ``P = Phi(L^T g)`` (the lower
    triangle, diagonal halved), the symmetric adjoint is ``sym(L^-T P L^-1)``, folded into the
    triangle numpy reads (the lower one; the upper one for ``upper=True``, where ``y`` is ``L^T``)."""
    lo = _mT(y) if upper else y
    g = _mT(g) if upper else g
    p = np.tril(_mT(lo) @ g)
    p = p - 0.5 * p * np.eye(p.shape[-1], dtype=p.dtype)
    x = np.linalg.solve(_mT(lo), p)
    s = _mT(np.linalg.solve(_mT(lo), _mT(x)))
    return _fold_triangle(_symmetric(s), "U" if upper else "L").astype(_float_dtype(a), copy=False)


def _eig_gaps(w):
    """``1 / (w_j - w_i)`` off the diagonal, 0 where two eigenvalues are equal (see ``eigh_adjoint``)."""
    diff = w[..., None, :] - w[..., :, None]
    safe = np.where(diff == 0, 1.0, diff)
    return np.where(diff == 0, 0.0, 1.0 / safe).astype(w.dtype, copy=False)


def eigh_adjoint(g, a, y, uplo="L"):
    """Adjoint of ``w, v = np.linalg.eigh(a)``: ``V (diag(w_bar) + F o (V^T v_bar)) V^T``, made
    symmetric and folded into the triangle numpy reads, ``F_ij = 1 / (w_j - w_i)``. Exact for
    distinct eigenvalues. Where two are equal the eigenvectors are not determined by ``a``: the
    entries of ``F`` between them are taken as 0, which is the gradient of any function that does
    not depend on the choice of basis within the eigenspace (a function of ``w`` alone, or of
    ``v diag(h(w)) v^T``); a function that does has no gradient there."""
    gw, gv = _parts(g, 2)
    w, v = y[0], y[1]
    inner = np.zeros_like(v)
    if gw is not None:
        inner = inner + np.eye(w.shape[-1], dtype=v.dtype) * gw[..., None, :]
    if gv is not None:
        inner = inner + _eig_gaps(w) * (_mT(v) @ gv)
    return _fold_triangle(_symmetric(v @ inner @ _mT(v)), uplo).astype(_float_dtype(a), copy=False)


def eigvalsh_adjoint(g, a, w, uplo="L"):
    """Adjoint of ``np.linalg.eigvalsh(a)``: ``V diag(g) V^T`` (its eigenvectors recomputed)."""
    v = np.linalg.eigh(a, UPLO=uplo)[1]
    return _fold_triangle((v * g[..., None, :]) @ _mT(v), uplo).astype(_float_dtype(a), copy=False)


def _svd_reduced(g, y, m, n, full_matrices):
    """The factors and their adjoints as the reduced SVD has them. ``full_matrices=True`` on a
    matrix that is not square adds columns to ``u`` (or rows to ``vh``) that ``a`` does not
    determine: a gradient through them is refused."""
    (gu, gs, gvh), (u, s, vh) = _parts(g, 3), (y[0], y[1], y[2])
    if full_matrices and m != n:
        k = min(m, n)
        if gu is not None and m > n:
            gu = _complement_adjoint(u[..., :, :k], u[..., :, k:], gu[..., :, :k], gu[..., :, k:], "columns of u")
        if gvh is not None and n > m:
            gvh = _mT(_complement_adjoint(_mT(vh[..., :k, :]), _mT(vh[..., k:, :]), _mT(gvh[..., :k, :]),
                                          _mT(gvh[..., k:, :]), "rows of vh"))
        u, vh = u[..., :, :k], vh[..., :k, :]
        gu, gvh = (None if gu is None else gu[..., :, :k]), (None if gvh is None else gvh[..., :k, :])
    return u, s, vh, gu, gs, gvh


def _complement_adjoint(uk, up, gk, gp, what):
    """The adjoint of the leading columns ``uk`` of an orthogonal matrix ``[uk | up]`` whose
    trailing columns ``up`` only span the complement of ``uk`` (numpy picks a basis ``a`` does not
    determine). A loss that reads ``up`` only through that span (``up @ up.T``) has ``up^T gp``
    symmetric, and ``up`` moves with ``uk`` by ``d up = -uk d uk^T up``: ``gk - up gp^T uk``.
    Any other use of ``up`` depends on the arbitrary basis: refused."""
    if not np.any(gp):
        return np.concatenate([gk, gp], axis=-1)
    skew = _mT(up) @ gp
    skew = skew - _mT(skew)
    tol = 100 * np.finfo(_float_dtype(gp)).eps * (1.0 + float(np.max(np.abs(gp))))
    if float(np.max(np.abs(skew))) > tol:
        raise NotImplementedError(
            f"the gradient of np.linalg.svd(a, full_matrices=True) through the extra {what} of a matrix that is not "
            "square: they are one basis of the complement, which a does not determine; only their span (a projection "
            "such as u2 @ u2.T) has a gradient. Use full_matrices=False, or read them only through their span")
    return np.concatenate([gk - up @ _mT(gp) @ uk, gp], axis=-1)



def svd_adjoint(g, a, y, full_matrices=True, compute_uv=True):
    """Adjoint of ``u, s, vh = np.linalg.svd(a)`` for distinct nonzero singular values (Townsend
    2016), with ``V = vh^T``, ``F_ij = 1 / (s_j^2 - s_i^2)`` (0 between equal singular values, as in
    ``eigh_adjoint``)::

        U [F o (U^T u_bar - u_bar^T U) S + diag(s_bar) + S F o (V^T v_bar - v_bar^T V)] V^T
          + (I - U U^T) u_bar S^-1 V^T + U S^-1 v_bar^T (I - V V^T)
    """
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return ((u * g[..., None, :]) @ vh).astype(_float_dtype(a), copy=False)
    m, n = a.shape[-2:]
    u, s, vh, gu, gs, gvh = _svd_reduced(g, y, m, n, full_matrices)
    v, f = _mT(vh), _eig_gaps(s * s)
    core = np.zeros(a.shape[:-2] + (s.shape[-1],) * 2, dtype=s.dtype)
    out = np.zeros_like(a, dtype=_float_dtype(a))
    if gs is not None:
        core = core + np.eye(s.shape[-1], dtype=s.dtype) * gs[..., None, :]
    if gu is not None:
        ut_gu = _mT(u) @ gu
        core = core + (f * (ut_gu - _mT(ut_gu))) * s[..., None, :]
        if m > n:
            out = out + ((gu - u @ ut_gu) / s[..., None, :]) @ vh
    if gvh is not None:
        gv = _mT(gvh)
        vt_gv = _mT(v) @ gv
        core = core + s[..., :, None] * (f * (vt_gv - _mT(vt_gv)))
        if n > m:
            out = out + (u / s[..., None, :]) @ _mT(gv - v @ vt_gv)
    return (out + u @ core @ vh).astype(_float_dtype(a), copy=False)


def _right_solve(x, r):
    """``x R^-T`` for a square ``R``."""
    return _mT(np.linalg.solve(r, _mT(x)))


def qr_adjoint(g, a, y, mode="reduced"):
    """Adjoint of ``np.linalg.qr(a)`` (reduced, ``a`` of full rank ``min(m, n)``)::

        a_bar = (q_bar + Q copyltu(M)) R^-T,   M = R r_bar^T - q_bar^T Q

    ``copyltu`` mirrors the lower triangle onto the upper. ``mode='r'`` returns ``R`` alone. A wide
    ``a = [X | Y]`` (``m < n``, ``X`` square) is ``X = Q U`` and ``Y = Q V`` with ``R = [U | V]``:
    ``Y``'s adjoint is ``Q v_bar``, and ``V = Q^T Y`` adds ``Y v_bar^T`` to ``Q``'s (as PyTorch)."""
    m, n = a.shape[-2:]
    if mode == "r":
        gq, gr = None, (None if g is ZERO else g)
        q, r = np.linalg.qr(a)
    else:
        (gq, gr), (q, r) = _parts(g, 2), (y[0], y[1])
    gq = np.zeros_like(q) if gq is None else gq
    if m >= n:
        return _qr_square_adjoint(gq, gr, q, r).astype(_float_dtype(a), copy=False)
    gu, gv = (None, None) if gr is None else (gr[..., :, :m], gr[..., :, m:])
    if gv is not None:
        gq = gq + a[..., :, m:] @ _mT(gv)
    gx = _qr_square_adjoint(gq, gu, q, r[..., :, :m])
    gy = q @ gv if gv is not None else np.zeros_like(a[..., :, m:], dtype=gx.dtype)
    return np.concatenate([gx, gy], axis=-1).astype(_float_dtype(a), copy=False)


def _qr_square_adjoint(gq, gr, q, r):
    mm = -(_mT(gq) @ q) if gr is None else r @ _mT(gr) - _mT(gq) @ q
    copyltu = np.tril(mm) + _mT(np.tril(mm, -1))
    return _right_solve(gq + q @ copyltu, r)


def pinv_adjoint(g, a, y):
    """Adjoint of ``p = np.linalg.pinv(a)`` where the rank of ``a`` is locally constant (full rank)::

        -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A)
    """
    pt, gt = _mT(y), _mT(g)
    out = -pt @ g @ pt + (gt - a @ (y @ gt)) @ (y @ pt) + (pt @ y) @ (gt - (gt @ y) @ a)
    return out.astype(_float_dtype(a), copy=False)


def _lstsq_parts(g, a, b, y):
    """The adjoints of ``x`` and of the residuals, as arrays (ZERO parts as None)."""
    gx, gres, _, gs = _parts(g, 4)
    return gx, (gres if gres is not None and np.size(y[1]) else None), gs


def lstsq_adjoint_b(g, a, b, y):
    """Adjoint of ``b`` in ``x, res, rank, s = np.linalg.lstsq(a, b)`` (``a`` of full rank):
    ``pinv(a)^T x_bar``, and through the residuals ``|b - a x|^2`` (a tall ``a``) ``2 (b - a x) res_bar``."""
    gx, gres, _ = _lstsq_parts(g, a, b, y)
    out = zeros_like(b)
    if gx is not None:
        out = out + _mT(np.linalg.pinv(a)) @ gx
    if gres is not None:
        out = out + 2.0 * (b - a @ y[0]) * gres
    return out.astype(_float_dtype(b), copy=False)


def lstsq_adjoint_a(g, a, b, y):
    """Adjoint of ``a`` in ``np.linalg.lstsq(a, b)``: through ``x = pinv(a) b``, through the
    residuals (at the minimum, ``-2 (b - a x) x^T res_bar``), and through ``s`` (singular values)."""
    gx, gres, gs = _lstsq_parts(g, a, b, y)
    out = zeros_like(a)
    x = y[0]
    if gx is not None:
        gp = np.multiply.outer(gx, b) if np.ndim(b) == 1 else gx @ _mT(b)
        out = out + pinv_adjoint(gp, a, np.linalg.pinv(a))
    if gres is not None:
        r = b - a @ x
        out = out - 2.0 * (np.multiply.outer(r, x) * gres if np.ndim(b) == 1 else (r * gres) @ _mT(x))
    if gs is not None:
        out = out + svd_adjoint(gs, a, y[3], compute_uv=False)
    return out.astype(_float_dtype(a), copy=False)


# --- convolution ------------------------------------------------------------------------------

def _like(g, x):
    """``g`` in ``x``'s shape (a Python float for a Python float)."""
    return float(np.reshape(g, ())) if not hasattr(x, "shape") else np.reshape(g, np.shape(x)).astype(_float_dtype(x), copy=False)


def _full_adjoint(g, n, m, mode, corr):
    """The adjoint of the full-length result, ``g`` placed where ``mode`` cut it from: 'same'
    keeps ``max(n, m)`` entries from ``(min - 1) // 2`` on, 'valid' ``|n - m| + 1`` from ``min - 1``.
    ``np.correlate`` of a shorter first argument computes the swapped correlation reversed, so its
    'same' window is counted from the other end."""
    length = n + m - 1
    g = np.atleast_1d(np.asarray(g))
    off = {"full": 0, "same": (min(n, m) - 1) // 2, "valid": min(n, m) - 1}[mode]
    if corr and n < m:
        off = length - g.shape[0] - off
    full = np.zeros(length, dtype=g.dtype)
    full[off:off + g.shape[0]] = g
    return full


def convolve_adjoint(g, a, v, mode="full", which=0):
    """Adjoint of ``a`` (``which`` 0) or ``v`` (1) in ``np.convolve(a, v, mode)``: the full
    adjoint correlated with the other operand."""
    n, m = np.size(a), np.size(v)
    full = _full_adjoint(g, n, m, mode, False)
    other = np.ravel(v) if which == 0 else np.ravel(a)
    return _like(np.correlate(full, other, "valid"), [a, v][which])


def correlate_adjoint(g, a, v, mode="valid", which=0):
    """Adjoint of ``np.correlate(a, v, mode)``: the full correlation is ``convolve(a, v[::-1])``."""
    n, m = np.size(a), np.size(v)
    full = _full_adjoint(g, n, m, mode, True)
    vr = np.ravel(v)[::-1]
    if which == 0:
        return _like(np.correlate(full, vr, "valid"), a)
    return _like(np.correlate(full, np.ravel(a), "valid")[::-1], v)


def unslide(g, x, window_shape, axis=None):
    """Adjoint of ``sliding_window_view(x, window_shape, axis)``: each window entry's adjoint added
    back where it was read, one window offset at a time. Repeated axes are refused."""
    nd = np.ndim(x)
    window = (window_shape,) if np.ndim(window_shape) == 0 else tuple(window_shape)
    axes = tuple(range(nd)) if axis is None else ((axis,) if np.ndim(axis) == 0 else tuple(axis))
    axes = tuple(ax % nd for ax in axes)
    if len(set(axes)) != len(axes):
        raise NotImplementedError("the gradient of sliding_window_view with a repeated axis")
    out = zeros_like(x)
    count = g.shape[:nd]
    for k in np.ndindex(*window):
        index = [slice(None)] * nd
        for ax, ki in zip(axes, k):
            index[ax] = slice(ki, ki + count[ax])
        out[tuple(index)] += g[(Ellipsis,) + k]
    return out


# --- scipy.special (its rules are registered only where scipy imports) ----------------------------

def polygamma_of(n, x):
    """``scipy.special.polygamma(n, x)`` in ``x``'s dtype (the slope of ``gammaln``, ``digamma``)."""
    from scipy import special

    return special.polygamma(n, x).astype(_float_dtype(x), copy=False) if hasattr(x, "shape") else float(special.polygamma(n, x))


def logsumexp_adjoint(g, a, y, axis=None, b=None, keepdims=False, which=0):
    """Adjoint of ``a`` (``which`` 0) or ``b`` (1) in ``y = logsumexp(a, axis, b, keepdims)``:
    ``g b exp(a - y)`` and ``g exp(a - y)``, broadcast back over the reduced axes. Where every
    ``a`` is ``-inf`` (``y`` is ``-inf``) the adjoint is NaN."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b)) if b is not None else np.shape(a)
    like = np.broadcast_to(np.asarray(a), shape)
    e = np.exp(a - unreduce(y, like, axis, keepdims))
    gg = unreduce(g, like, axis, keepdims)
    out = gg * e * (1.0 if b is None else b) if which == 0 else gg * e
    return unbroadcast(cast_like(out, [a, b][which]), [a, b][which])


def softmax_adjoint(g, y, axis=None):
    """Adjoint of ``y = softmax(x, axis)``: ``y (g - sum(g y))`` over ``axis``."""
    return y * (g - np.sum(g * y, axis=axis, keepdims=True))


def log_softmax_adjoint(g, y, axis=None):
    """Adjoint of ``y = log_softmax(x, axis)``: ``g - exp(y) sum(g)`` over ``axis``."""
    return g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)


# --- shape ------------------------------------------------------------------------------------

def untranspose(g, axes):
    """Adjoint of ``np.transpose(x, axes)``."""
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort(axes))


def unconcatenate(g, xs, axis=0):
    """Adjoint of ``np.concatenate(xs, axis)``: ``g`` cut back into pieces shaped like ``xs``."""
    if axis is None:
        pieces = _cut(g.ravel(), [math.prod(_shape(x)) for x in xs], 0)
        return SeqAdjoint(np.reshape(p, _shape(x)) for p, x in zip(pieces, xs))
    return SeqAdjoint(_cut(g, [_shape(x)[axis] for x in xs], axis))


def _cut(g, lengths, axis):
    """``g`` cut into consecutive pieces of these lengths along ``axis`` (views, as ``np.split``
    gives, by slicing: any array library slices, not every one has ``split``)."""
    lead = (slice(None),) * (axis % g.ndim)
    out, start = [], 0
    for n in lengths:
        out.append(g[lead + (slice(start, start + n),)])
        start += n
    return out


def unblock(g, arrays):
    """Adjoint of ``np.block(arrays)``: ``g`` cut back along the last axis for the innermost lists,
    the one before it for the lists holding them, and so on; each piece shaped like its entry."""
    depth = 0
    node = arrays
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    nd = _nd(g)

    def shape_of_block(node, level):
        if not isinstance(node, list):
            shape = _shape(node)
            return (1,) * (nd - len(shape)) + tuple(shape)
        shapes = [shape_of_block(n, level + 1) for n in node]
        ax = nd - 1 - (depth - level)
        return shapes[0][:ax] + (sum(s[ax] for s in shapes),) + shapes[0][ax + 1:]

    def cut(g, node, level):
        if not isinstance(node, list):
            return np.reshape(g, _shape(node))
        ax = nd - 1 - (depth - level)
        sizes = np.cumsum([shape_of_block(n, level + 1)[ax] for n in node])[:-1]
        return SeqAdjoint(cut(p, n, level + 1) for p, n in zip(np.split(g, sizes, axis=ax), node))

    return cut(g, arrays, 1) if depth else np.reshape(g, _shape(arrays))


def unstack(g, xs, axis=0):
    """Adjoint of ``np.stack(xs, axis)``."""
    return SeqAdjoint(np.take(g, i, axis=axis) for i in range(len(xs)))


def _unjoin(g, xs, as_joined, axis):
    """``g`` cut into the pieces joined along ``axis`` after ``as_joined``, shaped like ``xs``."""
    pieces = unconcatenate(g, [as_joined(x) for x in xs], axis)
    return SeqAdjoint(np.reshape(p, _shape(x)) for p, x in zip(pieces, xs))


def unhstack(g, xs):
    """Adjoint of ``np.hstack(xs)``."""
    return _unjoin(g, xs, np.atleast_1d, 0 if _nd(xs[0]) <= 1 else 1)


def uncolumn_stack(g, xs):
    """Adjoint of ``np.column_stack(xs)``: 0-d and 1-d entries were columns."""
    return _unjoin(g, xs, lambda x: np.reshape(x, (-1, 1)) if _nd(x) < 2 else x, 1)


def unvstack(g, xs):
    """Adjoint of ``np.vstack(xs)``."""
    return _unjoin(g, xs, np.atleast_2d, 0)


def undstack(g, xs):
    """Adjoint of ``np.dstack(xs)``."""
    return _unjoin(g, xs, np.atleast_3d, 2)


def unsplit(gs, x, indices_or_sections, axis=0):
    """Adjoint of ``np.split`` and ``np.array_split``: the pieces' adjoints (``ZERO`` where
    unused) joined again."""
    pieces = np.array_split(zeros_like(x), indices_or_sections, axis=axis)
    return np.concatenate([p if gi is ZERO else gi for p, gi in zip(pieces, gs)], axis=axis)


def restack(gs, x, axis=0):
    """Adjoint of ``np.unstack(x, axis)``: the pieces' adjoints (``ZERO`` where unused) stacked."""
    zero = np.take(zeros_like(x), 0, axis=axis)
    return np.stack([zero if gi is ZERO else gi for gi in gs], axis=axis)


def untile(g, x, reps):
    """Adjoint of ``np.tile(x, reps)``: the tiles' gradients summed."""
    shape = _shape(x)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    nd = max(len(shape), len(reps))
    shape_p = (1,) * (nd - len(shape)) + tuple(shape)
    reps_p = (1,) * (nd - len(reps)) + reps
    split = []
    for r, n in zip(reps_p, shape_p):
        split += [r, n]
    g = np.reshape(g, split).sum(axis=tuple(range(0, 2 * nd, 2)))
    return np.reshape(g, shape)


def unrepeat(g, x, repeats, axis=None):
    """Adjoint of ``np.repeat(x, repeats, axis)``: the copies' gradients summed back."""
    out = zeros_like(x)
    target = out.reshape(-1) if axis is None else np.moveaxis(out, axis, 0)  # views of out
    copies = np.repeat(np.arange(target.shape[0]), repeats)
    _scatter_add(target, copies, g if axis is None else np.moveaxis(g, axis, 0))
    return out


def unpad(g, x, pad_width, mode="constant"):
    """Adjoint of ``np.pad``: each padded entry's gradient goes back to the entry it copies
    (constants copy none)."""
    if mode == "constant":
        pw = np.broadcast_to(np.asarray(pad_width, dtype=int), (_nd(x), 2))
        return g[tuple(slice(int(lo), n - int(hi)) for (lo, hi), n in zip(pw, g.shape))]
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(f"the adjoint of np.pad with mode={mode!r} is not implemented")
    n = int(np.size(x))
    source = np.pad(np.arange(n).reshape(_shape(x)), pad_width, mode=mode)
    out = zeros_like(x).reshape(-1)
    _scatter_add(out, source.reshape(-1), np.reshape(g, -1))
    return out.reshape(_shape(x))


def undelete(g, x, obj, axis=None):
    """Adjoint of ``np.delete(x, obj, axis)``: ``g`` back in the places that were kept."""
    # written by index into out itself, never through a view: a lazy array (dask) has no views
    shape = _shape(x)
    if axis is None:
        out = zeros_like(x).reshape(-1)
        out[np.delete(np.arange(math.prod(shape)), obj)] = g
        return out.reshape(shape)
    out = zeros_like(x)
    axis = axis % len(shape)
    out[(slice(None),) * axis + (np.delete(np.arange(shape[axis]), obj),)] = g
    return out


# --- indexing and selection -------------------------------------------------------------------

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


# ---- complex values and the discrete Fourier transform -------------------------------------------
# A complex value's adjoint follows JAX's convention: for z = u + iv and a real loss L it is
# dL/du - i dL/dv, so holomorphic rules (``d[z] * y``, ``d[y] @ b.T``) need no conjugation and a
# linear map's adjoint is its transpose. The adjoint of a real value may pick up an imaginary part
# from a complex operand beside it (``x * c``); it means nothing, and every rule from a real
# result back to a complex operand (``real``, ``imag``, ``abs``, ``angle``) reads the real part.


def _is_complex(x):
    return getattr(x, "dtype", None) is not None and x.dtype.kind == "c" or isinstance(x, complex)


def real_part(g):
    """``g`` without the meaningless imaginary part an adjoint of a real value may carry."""
    return g.real if _is_complex(g) else g


def _real_like(g, x):
    """The adjoint ``g`` of ``x``: its real part where ``x`` is real."""
    return g if _is_complex(x) else real_part(g)


def conj_adjoint(g, x):
    """Adjoint of ``np.conj(x)``: conjugate-linear, so the adjoint is conjugated (identity for real x)."""
    return np.conj(g) if _is_complex(x) else g


def imag_adjoint(g, x):
    """Adjoint of ``np.imag(x)``: ``-i g`` for complex ``x``; 0 for real ``x`` (its imaginary part
    is the constant 0)."""
    if _is_complex(x):
        return -1j * real_part(g)
    return zeros_like(x)


def abs_adjoint(g, x):
    """Adjoint of ``np.abs(x)``: ``g sign(x)`` for real ``x`` (0 at 0), ``g conj(x) / |x|`` for
    complex ``x`` (0 at 0, the subgradient convention)."""
    if not _is_complex(x):
        return g * np.sign(x)
    r = np.abs(x)
    return real_part(g) * np.conj(x) / np.where(r == 0, 1.0, r)


def angle_adjoint(g, z, deg=False):
    """Adjoint of ``np.angle(z, deg)``: ``-i g conj(z) / |z|^2`` (0 at 0); 0 for real ``z``, whose
    angle is piecewise constant."""
    if not _is_complex(z):
        return zeros_like(z)
    r2 = np.real(z * np.conj(z))
    scale = 57.29577951308232 if deg else 1.0
    return -1j * real_part(g) * scale * np.conj(z) / np.where(r2 == 0, 1.0, r2)


def _fft_axes(nd, s, axes):
    """The axes a transform runs over, as numpy chooses them (``s`` alone: the last ``len(s)``)."""
    if axes is None:
        return tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    return tuple(int(a) % nd for a in (axes if isinstance(axes, (tuple, list)) else (axes,)))


def _as_tuple(s):
    return None if s is None else tuple(s) if isinstance(s, (tuple, list)) else (s,)


def _resized(g, shape, axes):
    """``g`` cropped or zero-padded at the end of each of ``axes`` to ``shape`` (the adjoint of a
    transform's ``n``/``s``, which crops or pads its input)."""
    for ax in axes:
        have, want = g.shape[ax], shape[ax]
        if have > want:
            g = g[(slice(None),) * ax + (slice(0, want),)]
        elif have < want:
            pad = [(0, 0)] * g.ndim
            pad[ax] = (0, want - have)
            g = np.pad(g, pad)
    return g


_FFT_SCALE = {None: "unit", "backward": "unit", "ortho": "sqrt", "forward": "full"}


def fft_adjoint(g, a, s, axes, norm, inverse):
    """Adjoint of ``np.fft.fftn(a, s, axes, norm)`` (``ifftn`` where ``inverse``; the 1-d and 2-d
    forms too: ``s`` may be ``n`` and ``axes`` an axis). The DFT matrix is symmetric, so the
    transpose is the same transform with the same ``norm``; cropping or padding ``a`` to ``s``
    transposes to padding or cropping back."""
    xp = array_module(g)
    axes = _fft_axes(_nd(a), _as_tuple(s), axes)
    t = (xp.fft.ifftn if inverse else xp.fft.fftn)(g, axes=axes, norm=norm)
    return _real_like(_resized(t, _shape(a), axes), a)


def rfft_adjoint(g, a, s, axes, norm):
    """Adjoint of ``np.fft.rfftn(a, s, axes, norm)`` (and ``rfft``, ``rfft2``): the full
    transform's transpose applied to ``g`` padded with zeros to the whole spectrum, real part."""
    xp = array_module(g)
    s = _as_tuple(s)
    axes = _fft_axes(_nd(a), s, axes)
    lengths = s if s is not None else tuple(_shape(a)[ax] for ax in axes)
    t = xp.fft.fftn(g, s=lengths, axes=axes, norm=norm)
    return real_part(_resized(t, _shape(a), axes))


def irfft_adjoint(g, a, s, axes, norm):
    """Adjoint of ``np.fft.irfftn(a, s, axes, norm)`` (and ``irfft``, ``irfft2``), as JAX's
    transpose rule: ``conj(scale * mask * rfftn(g))``, where the mask counts each kept frequency of
    the last axis once for itself and once for its mirror (the zero frequency and, for an even
    length, the Nyquist one, have none)."""
    xp = array_module(g)
    g = real_part(g)  # the adjoint of a real result
    axes = _fft_axes(_nd(g), _as_tuple(s), axes)
    lengths = tuple(_shape(g)[ax] for ax in axes)
    t = xp.fft.rfftn(g, axes=axes)
    k, odd = t.shape[axes[-1]], lengths[-1] % 2
    mask = xp.full(k, 2.0, dtype=t.real.dtype)
    mask[0] = 1.0
    if not odd:
        mask[-1] = 1.0
    size = math.prod(lengths)
    scale = {"unit": 1.0 / size, "sqrt": 1.0 / math.sqrt(size), "full": 1.0}[_FFT_SCALE[norm]]
    t = np.conj(t * (scale * xp.reshape(mask, (k,) + (1,) * (t.ndim - 1 - axes[-1]))))
    return _real_like(_resized(t, _shape(a), axes), a)


# ---- ufunc.at: np.add.at(buf, indices, values) on a buffer the function allocated ------------------
# The normalizer makes the in-place call ``buf = add_at(buf, indices, values)``: a new array, so the
# value-restoring backward keeps the old one; writes that another name could see are refused as
# ``buf += v`` is (aliasing.py).


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


# ---- np.cross with its vector axes, np.gradient ----------------------------------------------------


def _pad3(v, xp):
    """Vectors on the last axis as 3-vectors: a 2-vector gets a zero third entry."""
    if v.shape[-1] == 3:
        return v
    return xp.concatenate([v, xp.zeros(v.shape[:-1] + (1,), dtype=v.dtype)], axis=-1)


def cross_adjoint(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, which=0):
    """Adjoint of ``a`` (which=0) or ``b`` (which=1) of ``np.cross(a, b, axisa, axisb, axisc,
    axis)``. With the vectors on the last axis, ``z = a x b`` gives ``a_bar = b x g`` and
    ``b_bar = g x a``; a 2-vector is a 3-vector with a zero third entry, and the cross product of
    two 2-vectors (a scalar) is the third entry of theirs."""
    xp = array_module(g, a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b, g = as_array_like(a, g), as_array_like(b, g), as_array_like(g, a)
    am, bm = xp.moveaxis(a, axisa, -1), xp.moveaxis(b, axisb, -1)
    if am.shape[-1] == 2 and bm.shape[-1] == 2:
        zero = xp.zeros_like(g)
        g3 = xp.stack([zero, zero, g], axis=-1)
    else:
        g3 = xp.moveaxis(g, axisc, -1)
    out = xp.cross(_pad3(bm, xp), g3) if which == 0 else xp.cross(g3, _pad3(am, xp))
    like = am if which == 0 else bm
    out = unbroadcast(out[..., : like.shape[-1]], like)
    return xp.moveaxis(out, -1, axisa if which == 0 else axisb)


def _gradient_axis_adjoint(g, n, axis, spacing, edge_order):
    """The transpose of ``np.gradient`` along ``axis`` (a length-``n`` axis), applied to ``g``.
    The operator is banded (each output reads inputs at most two places away), so its entries
    are read off ``np.gradient`` of five comb vectors (every fifth entry one): comb ``k`` gives,
    at output ``i``, the weight of the one input ``j = k (mod 5)`` within two places of ``i``.
    Exact for any spacing and edge order, linear in ``n``."""
    j = np.arange(n)
    combs = [np.gradient((j % 5 == k).astype(float), *spacing, edge_order=edge_order) for k in range(5)]
    gm = np.moveaxis(g, axis, -1)
    out = np.zeros(gm.shape, dtype=np.result_type(gm.dtype, float))
    for d in range(-2, 3):
        i = j + d
        ok = (i >= 0) & (i < n)
        w = np.zeros(n)
        for k in range(5):
            sel = ok & (j % 5 == k)
            w[sel] = combs[k][i[sel]]
        shifted = np.zeros_like(out)
        src = np.clip(i, 0, n - 1)
        shifted[..., ok] = gm[..., src[ok]]
        out += w * shifted
    return np.moveaxis(out, -1, axis)


def gradient_adjoint(g, f, spacing=1.0, axis=None, edge_order=1):
    """Adjoint of ``f`` of ``np.gradient(f, spacing, axis=axis, edge_order=edge_order)`` along
    one axis (a 1-d ``f``, or an int ``axis``): the transposed difference operator. ``spacing``
    is a step or the coordinates along the axis."""
    f = np.asarray(f)
    if axis is None and f.ndim != 1 or np.ndim(axis) != 0:
        from . import UnsupportedValueError

        raise UnsupportedValueError(
            f"np.gradient of a {f.ndim}-d array along several axes gives a list of arrays, which sourcegrad "
            "does not differentiate: call it once per axis, np.gradient(f, axis=k)")
    ax = 0 if axis is None else axis % f.ndim
    return _gradient_axis_adjoint(np.asarray(g), f.shape[ax], ax, (spacing,), edge_order).astype(
        np.result_type(f.dtype, float), copy=False)


def gradient_spacing_adjoint(g, y, spacing):
    """Adjoint of a scalar step ``h`` of ``y = np.gradient(f, h)``: ``y`` is the unit-step result
    divided by ``h``, so ``dy/dh = -y / h``. Coordinates given as an array are not differentiated."""
    if np.ndim(spacing) != 0:
        from . import UnsupportedValueError

        raise UnsupportedValueError("np.gradient's coordinates along the axis are differentiated only as one step "
                                    "(a number); pass the coordinates as a constant")
    return -np.sum(g * y) / spacing
