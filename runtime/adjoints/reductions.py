"""Reductions: sums with masks, means, variances, norms, cumulative sums and products, quantiles,
statistics, ``diff``, ``trapezoid``, ``gradient`` (``transforms/rules/reductions.py``).

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import math

import numpy as np

from ..backend import _float_dtype, _norm_axes, _shape
from ..broadcast import as_array_like, unbroadcast, unreduce
from ..errors import UnsupportedValueError
from ..zeros import SeqAdjoint
from .common import _nd, share
from .elementwise import nonzero_or_one


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
    return c / _std_denominator(c, a, y, axis, ddof, keepdims)


def _std_denominator(c, a, y, axis, ddof, keepdims):
    """``(n - ddof) y`` broadcast against ``a`` (``c``, ``a`` centered), 1 where both it and ``c``
    are 0 (zero spread: the slope there is 0)."""
    d = _spread_divisor(a, axis, ddof) * unreduce(y, a, axis, keepdims)
    return d + ((c == 0) & (d == 0))


def prod_of_others(a, axis=None):
    """For each entry of ``a``, the product of the other entries it is reduced with (no division,
    so zeros are fine): the slope of ``np.prod``."""
    axes = _norm_axes(axis, _nd(a))
    if not axes:
        return np.ones_like(a)
    flat, undo = _reduced_groups(a, axes)
    before, after = _products_around(flat)
    return undo(before * after)


def _reduced_groups(a, axes):
    """``a`` with the ``axes`` it is reduced over moved last and flattened into one (each row a
    group of entries reduced together), and the function that puts such an array back."""
    moved = np.moveaxis(a, axes, range(-len(axes), 0))
    flat = np.reshape(moved, moved.shape[: _nd(a) - len(axes)] + (-1,))
    return flat, lambda r: np.moveaxis(np.reshape(r, moved.shape), range(-len(axes), 0), axes)


def _products_around(flat):
    """For each entry of each row, the product of the entries before it and of those after it."""
    ones = np.ones_like(flat[..., :1])
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), axis=-1)
    after = np.flip(
        np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], -1), axis=-1), -1
    )
    return before, after


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
        # (from the shape: no np.size of a lazy array)
        return unreduce(g, a, axis, keepdims, mean=True)
    w = _weights_like(weights, a, axis)
    return unreduce(g, a, axis, keepdims) * w / np.sum(w, axis=axis, keepdims=True)


def average_weights_adjoint(g, a, y, axis=None, weights=None, keepdims=False):
    """Adjoint of ``np.average(a, axis, weights)`` with respect to ``weights``."""
    w = _weights_like(weights, a, axis)
    slope = (
        unreduce(g, a, axis, keepdims)
        * (a - unreduce(y, a, axis, keepdims))
        / np.sum(w, axis=axis, keepdims=True)
    )
    return np.reshape(unbroadcast(slope, w), np.shape(weights))


def norm_adjoint(g, x, y, ord=None, axis=None, keepdims=False):
    """Adjoint of ``np.linalg.norm``: every vector order, and the matrix orders ``'fro'``,
    ``'nuc'``, 1, -1, 2, -2, inf and -inf (over ``axis``, a pair of axes, for stacks)."""
    if _matrix_order(x, ord, axis):
        return unreduce(g, x, axis, keepdims) * _matrix_norm_slope(x, ord, axis or (0, 1))
    return vector_norm_adjoint(g, x, y, 2 if ord in (None, "fro") else ord, axis, keepdims)


def _matrix_order(x, ord, axis):
    """Is ``np.linalg.norm(x, ord, axis)`` a matrix norm other than Frobenius's (which is the
    vector 2-norm of the entries)?"""
    matrix = (
        isinstance(axis, tuple)
        and len(axis) == 2
        or axis is None
        and _nd(x) == 2
        and ord is not None
    )
    return matrix and ord not in (None, "fro")


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
    # the usual case (host arrays only: any() syncs)
    if type(zero) is np.ndarray and not zero.any():
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


def _reduced_last(a, axis):
    """``a`` with the reduced axes moved last and merged into one, and how to undo it."""
    nd = np.ndim(a)
    axes = _norm_axes(axis, nd)
    kept = [i for i in range(nd) if i not in axes]
    moved = np.transpose(a, kept + list(axes))
    flat = moved.reshape(moved.shape[: len(kept)] + (-1,))

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
    gk = np.moveaxis(
        np.reshape(as_array_like(g, flat), np.shape(frac) + kshape),
        tuple(range(nq)),
        tuple(range(-nq, 0)),
    )
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
    slope = np.moveaxis(
        (vhi - vlo) * (n - 1) / scale, tuple(range(len(kshape))), tuple(range(nq, nq + len(kshape)))
    )
    return np.sum(gk * slope, axis=tuple(range(nq, nq + len(kshape))))


def _cov_rows(m, y, rowvar):
    """The variables as rows, as ``np.cov`` arranges them: ``m``'s rows, then ``y``'s."""

    def rows(v):
        v = np.array(v, ndmin=2)
        return v.T if not rowvar and v.shape[0] != 1 else v

    xm = rows(m)
    return xm, (None if y is None else rows(y))


def _cov_split(gx, m, y, rowvar, which, xm):
    part = gx[: xm.shape[0]] if which == 0 else gx[xm.shape[0] :]
    v = m if which == 0 else y
    if not rowvar and np.array(v, ndmin=2).shape[0] != 1:
        part = part.T
    return (
        np.reshape(part, np.shape(v)).astype(_float_dtype(v), copy=False)
        if hasattr(v, "shape")
        else float(np.sum(part))
    )


def _cov_weights(n, bias, ddof, fweights, aweights):
    """``np.cov``'s observation weights ``w = fweights * aweights`` (None for none) and its
    divisor: ``N - ddof`` unweighted, else ``sum(w) - ddof sum(w aweights) / sum(w)``
    (``sum(w) - ddof`` with frequency weights alone), ``ddof`` 1 unless ``bias``."""
    ddof = ddof if ddof is not None else (0 if bias else 1)
    w = None
    if fweights is not None:
        w = np.asarray(fweights, dtype=float)
    if aweights is not None:
        w = np.asarray(aweights, dtype=float) if w is None else w * aweights
    if w is None:
        return None, n - ddof, ddof
    total = np.sum(w)
    if ddof == 0:
        return w, total, ddof
    if aweights is None:
        return w, total - ddof, ddof
    return w, total - ddof * np.sum(w * aweights) / total, ddof


def _cov_centered(m, y, rowvar, w):
    """The variables as rows and centered at their (weighted) means, and ``m``'s rows."""
    xm, xy = _cov_rows(m, y, rowvar)
    x = xm if xy is None else np.concatenate([xm, xy], axis=0)
    return x - np.average(x, axis=1, weights=w)[:, None], xm


def cov_adjoint(
    g, m, y=None, rowvar=True, bias=False, ddof=None, which=0, fweights=None, aweights=None
):
    """Adjoint of ``m`` (``which`` 0) or ``y`` (1) in ``c = np.cov(m, y, rowvar, bias, ddof,
    fweights, aweights)``: with ``X`` the centered variables (rows), ``w`` the weights and
    ``f`` the divisor (``_cov_weights``), ``(G + G^T) (X w) / f``; the means have none (their
    weighted deviations sum to 0)."""
    xc, xm = _cov_centered(m, y, rowvar, _cov_weights(1, bias, ddof, fweights, aweights)[0])
    w, fact, _ = _cov_weights(xc.shape[1], bias, ddof, fweights, aweights)
    k = xc.shape[0]
    gm = np.reshape(as_array_like(g, xc), (k, k))
    gx = (gm + gm.T) @ (xc if w is None else xc * w) / fact
    return _cov_split(gx, m, y, rowvar, which, xm)


def cov_aweights_adjoint(
    g, m, c, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None
):
    """Adjoint of ``aweights`` in ``c = np.cov(m, y, ..., fweights, aweights)``: each
    observation's ``x_k^T G x_k`` (centered) times its frequency ``f_k``, over the divisor, less
    ``<G, c>`` times the divisor's slope over itself::

        f_k (x_k^T G x_k - <G, c> (1 - ddof (2 a_k sum(w) - sum(w a)) / sum(w)^2)) / divisor
    """
    w, fact, ddof = _cov_weights(1, bias, ddof, fweights, aweights)
    xc, _ = _cov_centered(m, y, rowvar, w)
    w, fact, ddof = _cov_weights(xc.shape[1], bias, ddof, fweights, aweights)
    k = xc.shape[0]
    gm = np.reshape(as_array_like(g, xc), (k, k))
    a = np.asarray(aweights, dtype=float)
    f = np.ones_like(a) if fweights is None else np.asarray(fweights, dtype=float)
    quad = np.einsum("ik,ij,jk->k", xc, gm, xc)
    total = np.sum(w)
    slope = 1.0 if ddof == 0 else 1.0 - ddof * (2.0 * a * total - np.sum(w * a)) / total**2
    out = f * (quad - np.sum(gm * np.reshape(c, (k, k))) * slope) / fact
    return (
        np.reshape(out, np.shape(aweights)).astype(_float_dtype(aweights), copy=False)
        if hasattr(aweights, "shape")
        else out
    )


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


def polyval_adjoint_p(g, p, x):
    """Adjoint of the coefficients in ``np.polyval(p, x)``: ``g x^(N-1-i)`` for ``p[i]`` (a list
    of coefficients gets a list)."""
    n = len(p)
    parts = [unbroadcast(g * np.asarray(x) ** (n - 1 - i), p[i]) for i in range(n)]
    if isinstance(p, (list, tuple)):
        return SeqAdjoint(parts)
    return np.stack([np.broadcast_to(q, np.shape(p)[1:]) for q in parts]).astype(
        _float_dtype(p), copy=False
    )


def polyval_adjoint_x(g, p, x):
    """Adjoint of ``x`` in ``np.polyval(p, x)``: ``g`` times the derivative, by Horner's scheme."""
    y, dy = 0.0, 0.0
    for c in p:
        dy = dy * x + y
        y = y * x + c
    return unbroadcast(g * dy, x)


def _trapezoid_widths(x, dx, axis):
    """The widths of ``np.trapezoid``'s panels, with the integration axis last."""
    if x is None:
        return dx
    return np.diff(x) if _nd(x) == 1 else np.moveaxis(np.diff(x, axis=axis), axis, -1)


def trapezoid_adjoint(g, y, x=None, dx=1.0, axis=-1):
    """Adjoint of ``np.trapezoid(y, x, dx, axis)`` with respect to ``y``: each panel gives half
    its width to both of its ends."""
    ym = np.moveaxis(y, axis, -1)
    half = np.broadcast_to(
        np.expand_dims(g, -1) * _trapezoid_widths(x, dx, axis) / 2, ym[..., 1:].shape
    )
    edge = np.zeros_like(half[..., :1])
    return np.moveaxis(
        np.concatenate([edge, half], -1) + np.concatenate([half, edge], -1), -1, axis
    )


def trapezoid_x_adjoint(g, y, x, axis=-1):
    """Adjoint of ``np.trapezoid(y, x, axis=axis)`` with respect to the sample points ``x``."""
    ym = np.moveaxis(y, axis, -1)
    panel = np.expand_dims(g, -1) * (ym[..., 1:] + ym[..., :-1]) / 2  # d value / d panel width
    gx = undiff(panel, 1, -1)
    if _nd(x) == 1:
        return np.reshape(gx, (-1, gx.shape[-1])).sum(axis=0)
    return unbroadcast(np.moveaxis(gx, -1, axis), x)


def _gradient_axis_adjoint(g, n, axis, spacing, edge_order):
    """The transpose of ``np.gradient`` along ``axis`` (a length-``n`` axis), applied to ``g``.
    The operator is banded (each output reads inputs at most two places away), so its entries
    are read off ``np.gradient`` of five comb vectors (every fifth entry one): comb ``k`` gives,
    at output ``i``, the weight of the one input ``j = k (mod 5)`` within two places of ``i``.
    Exact for any spacing and edge order, linear in ``n``."""
    j = np.arange(n)
    combs = [
        np.gradient((j % 5 == k).astype(float), *spacing, edge_order=edge_order) for k in range(5)
    ]
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
        raise UnsupportedValueError(
            f"np.gradient of a {f.ndim}-d array along several axes gives a list of arrays, which sourcegrad "
            "does not differentiate: call it once per axis, np.gradient(f, axis=k)"
        )
    ax = 0 if axis is None else axis % f.ndim
    return _gradient_axis_adjoint(np.asarray(g), f.shape[ax], ax, (spacing,), edge_order).astype(
        np.result_type(f.dtype, float), copy=False
    )


def gradient_spacing_adjoint(g, y, spacing):
    """Adjoint of a scalar step ``h`` of ``y = np.gradient(f, h)``: ``y`` is the unit-step result
    divided by ``h``, so ``dy/dh = -y / h``. Coordinates given as an array are not differentiated."""
    if np.ndim(spacing) != 0:
        raise UnsupportedValueError(
            "np.gradient's coordinates along the axis are differentiated only as one step "
            "(a number); pass the coordinates as a constant"
        )
    return -np.sum(g * y) / spacing
