"""What forward-mode (jvp) code calls at run time: zero tangents made real, copies before an
in-place write, and the tangent rules that are a few numpy lines (ties, sorts, custom Functions).

Imports numpy only (and ``runtime`` itself), as the rest of the runtime does."""

from __future__ import annotations

import numpy as np

from .backend import _float_dtype, array_module
from .broadcast import reduce_max_mask
from .zeros import ZERO, zeros_like

__all__ = [
    "tangent_zeros",
    "materialize",
    "owned_tangent",
    "expand",
    "extremum_tangent",
    "reduce_extremum_tangent",
    "selected",
    "sort_tangent",
    "custom_jvp",
    "tangent_of_gradient",
    "seq_tangent",
    "seq_zeros",
    "abs_tangent",
    "zero_unless_none",
    "cholesky_tangent",
    "eigh_tangent",
    "cast_tangent",
    "power_curvature",
    "abs_tangent_point",
    "abs_tangent_scale",
    "log_softmax_tangent",
    "logsumexp_tangent",
]


def tangent_zeros(like):
    """The zero tangent of ``like`` as a value: a float array of its shape, 0.0 for a number, and
    for a list or tuple (a constant operand such as ``[1.0, 2.0]`` in ``np.concatenate``) the same
    kind of sequence of zero values, which numpy functions take as they take the operand."""
    if isinstance(like, (list, tuple)):
        return (
            type(like)(tangent_zeros(x) for x in like)
            if type(like) in (list, tuple)
            else [tangent_zeros(x) for x in like]
        )
    return zeros_like(like)


def materialize(t, like):
    """A tangent that may be ``ZERO`` (on some path), as a value."""
    return zeros_like(like) if t is ZERO else t


def owned_tangent(t, like):
    """A tangent this function may write into: a fresh zero array, or a copy of ``t`` (which may
    be the caller's tangent, or another value's tangent that it shares an array with)."""
    if t is ZERO:
        return zeros_like(like)
    if hasattr(t, "shape"):
        return array_module(t).array(t, dtype=_float_dtype(t), copy=True)
    return t


def expand(t, like):
    """``t`` broadcast to the shape of ``like`` (a tangent of a broadcasting operation whose
    other operand had no tangent keeps the primal's shape), as a fresh array."""
    shape = np.shape(like)
    if np.shape(t) == shape:
        return t
    xp = array_module(t, like)
    return xp.broadcast_to(t, shape).copy() if shape else t


def extremum_tangent(x_wins, tie, tx, ty):
    """Tangent of ``maximum``/``minimum``: the winner's tangent, the mean of both at a tie (the
    convention of the adjoint, which shares ties evenly)."""
    xp = array_module(tx, ty)
    return xp.where(tie, 0.5 * (tx + ty), xp.where(x_wins, tx, ty))


def selected(t, slope):
    """``t * slope`` where the slope is not zero, and zero where it is: an entry a reduction
    leaves out (not the extremum, a NaN a ``nansum`` skips) adds nothing to the tangent, even
    where its own tangent is NaN or infinite (``0 * inf`` would make the sum NaN)."""
    xp = array_module(t)
    return xp.where(slope != 0, t * slope, 0.0)


def reduce_extremum_tangent(t, a, y, axis=None, keepdims=False):
    """Tangent of a ``max``/``min`` reduction: the mean of the tangents of the tied extrema."""
    share = reduce_max_mask(a, y, axis, keepdims)
    return selected(t, share).sum(axis=axis, keepdims=keepdims)


def sort_tangent(t, a, axis=-1):
    """Tangent of ``np.sort(a, axis)``: ``t`` permuted as ``a`` was."""
    xp = array_module(a)
    if axis is None:
        return xp.ravel(t)[xp.argsort(a, axis=None, kind="stable")]
    return xp.take_along_axis(t, xp.argsort(a, axis=axis, kind="stable"), axis=axis)


def custom_jvp(cls, ctx, xs, ts):
    """Tangent of ``cls.apply(*xs)``: ``cls.jvp(ctx, *tangents)``, a zero array for an input with
    no tangent."""
    tangents = [zeros_like(x) if t is ZERO else t for x, t in zip(xs, ts)]
    return cls.jvp(ctx, *tangents)


def tangent_of_gradient(g, xs, ts):
    """Tangent of ``g(*xs)``, ``g`` a gradient made by sourcegrad, given the tangents ``ts`` of
    ``xs`` (``ZERO`` where none): its second derivatives, by code sourcegrad generates for ``g``
    (``sourcegrad/higher.py``)."""
    return g.tangent_of_call(xs, ts)


def seq_zeros(seq):
    """Zero tangents for each entry of a list (before its first differentiated entry is added)."""
    return [zeros_like(x) for x in seq]


def seq_tangent(t, seq):
    """The tangent of a list this function appends to: its own list (``ZERO``: zeros)."""
    return seq_zeros(seq) if t is ZERO else list(t)


def abs_tangent(t, x, y):
    """Tangent of ``abs(x)``: ``sign(x) t`` (0 at 0); for a complex ``x``, ``Re(conj(x) t) / |x|``."""
    xp = array_module(x, t)
    if xp.iscomplexobj(x) or xp.iscomplexobj(t):
        return xp.real(xp.conj(x) * t) / xp.where(y == 0, 1.0, y) * (y != 0)
    return t * xp.sign(x)


def zero_unless_none(v):
    """The tangent of an optional constant argument: None stays None (numpy's default)."""
    return None if v is None else 0.0


def _read_triangle(t, uplo):
    """The symmetric direction a function reading one triangle of its matrix sees in ``t``."""
    xp = array_module(t)
    tri = xp.tril(t) if uplo == "L" else xp.triu(t)
    return tri + xp.swapaxes(tri, -1, -2) - tri * xp.eye(t.shape[-1])


def cholesky_tangent(t, y, upper=False):
    """Tangent of ``L = cholesky(a)`` (lower triangle read): ``L Phi(L^-1 t L^-T)``, ``Phi`` the
    lower triangle with its diagonal halved."""
    xp = array_module(y, t)
    low = xp.swapaxes(y, -1, -2) if upper else y
    t = _read_triangle(t, "U" if upper else "L")  # the triangle numpy reads
    inv = xp.linalg.inv(low)
    m = inv @ t @ xp.swapaxes(inv, -1, -2)
    phi = xp.tril(m) - 0.5 * m * xp.eye(m.shape[-1])
    out = low @ phi
    return xp.swapaxes(out, -1, -2) if upper else out


def eigh_tangent(t, y, uplo="L"):
    """Tangent of ``w, v = eigh(a)`` (distinct eigenvalues): ``w' = diag(v^T t v)``,
    ``v' = v (F * (v^T t v))`` with ``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal."""
    w, v = y
    xp = array_module(v, t)
    s = xp.swapaxes(v, -1, -2) @ _read_triangle(t, uplo) @ v
    gap = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    f = xp.where(xp.eye(n, dtype=bool), 0.0, 1.0 / xp.where(xp.eye(n, dtype=bool), 1.0, gap))
    return xp.diagonal(s, axis1=-2, axis2=-1).copy(), v @ (f * s)


def cast_tangent(t, y):
    """Tangent of ``x.astype(dtype)``: the tangent in that dtype, zero for an integer or boolean
    dtype (piecewise constant)."""
    dtype = getattr(y, "dtype", None)
    if dtype is not None and dtype.kind not in "fc":
        return zeros_like(y)
    return t.astype(dtype) if dtype is not None and hasattr(t, "astype") else t


def power_curvature(x, y):
    """The slope of ``power_slope(x, y)`` in ``x`` (a constant exponent ``y``): ``y (y - 1)
    x ** (y - 2)``, 0 where ``y`` is 0 or 1 (the slope is constant there)."""
    if isinstance(y, (int, float)):
        if y == 0 or y == 1:
            return 0.0
        if type(x) is float or type(x) is int:
            x = np.float64(x)
        if y == 2:
            return 2.0
        return y * (y - 1) * x ** (y - 2)
    y2 = y + 2 * ((y == 0) | (y == 1))
    return y * (y - 1) * x ** (y2 - 2) * ((y != 0) & (y != 1))


# ``r = abs_tangent(t, x, y)`` differentiated again (``rules/second_order.py``). For real ``x``,
# ``r = sign(x) t``: linear in ``t``, and ``x`` is read only for its sign (zero slope). For complex
# ``x = a + ib``, ``r = Re(conj(x) t) / y`` with ``y = |x|`` an operand of its own: its adjoints,
# in the convention of ``abs_adjoint`` (``d/da - i d/db``), are ``g conj(x) / y`` for ``t`` (that
# is ``abs_adjoint`` itself), ``g conj(t) / y`` for ``x`` and ``-g Re(conj(x) t) / y**2`` for
# ``y`` (all 0 where ``y`` is 0).
def abs_tangent_point(g, t, x, y):
    """The adjoint of ``x`` in ``abs_tangent(t, x, y)``: zero for real ``x`` (its sign is
    locally constant), ``g conj(t) / |x|`` for complex ``x``."""
    xp = array_module(x, t)
    if not xp.iscomplexobj(x):
        return zeros_like(x)
    return xp.real(g) * xp.conj(t) / xp.where(y == 0, 1.0, y) * (y != 0)


def abs_tangent_scale(g, t, x, y):
    """The adjoint of ``y = |x|`` in ``abs_tangent(t, x, y)``: zero for real ``x`` (the tangent
    does not divide by it), ``-g Re(conj(x) t) / |x|**2`` for complex ``x``."""
    xp = array_module(x, t)
    if not xp.iscomplexobj(x):
        return zeros_like(y)
    safe = xp.where(y == 0, 1.0, y)
    return -xp.real(g) * xp.real(xp.conj(x) * t) / (safe * safe) * (y != 0)


# ---- scipy.special's reductions over an axis --------------------------------------------------------
def log_softmax_tangent(t, y, axis=None):
    """Tangent of ``y = log_softmax(x, axis)``: ``t - sum(t exp(y))`` over ``axis``."""
    return t - np.sum(t * np.exp(y), axis=axis, keepdims=True)


def _logsumexp_weights(a, y, axis, b, keepdims, which):
    """The slope of ``y = logsumexp(a, axis, b)`` in ``a`` (``which`` 0: ``b exp(a - y)``) or in
    ``b`` (1: ``exp(a - y)``), with ``exp(a - y)`` and an array of the broadcast shape."""
    from .adjoints.special import _logsumexp_exponentials

    e, like = _logsumexp_exponentials(a, y, axis, b, keepdims)
    return (e * b if which == 0 and b is not None else e), e, like


def logsumexp_tangent(t, a, y, axis=None, b=None, keepdims=False, which=0):
    """Tangent of ``y = logsumexp(a, axis, b, keepdims)`` from the tangent ``t`` of ``a``
    (``which`` 0) or of ``b`` (1): the tangent times the slope, summed over ``axis``."""
    w, _, _ = _logsumexp_weights(a, y, axis, b, keepdims, which)
    return np.sum(t * w, axis=axis, keepdims=keepdims)
