"""Second derivatives of the slopes that forward-mode code multiplies tangents by: what ``hvp``
and ``hessian`` (reverse mode over the generated forward mode) call where a tangent rule reads a
runtime helper (``norm_adjoint``, ``std_slope``, ``prod_of_others``). Each function here is the
adjoint of one helper with respect to one of its operands, written out in numpy.

Imports numpy only (and ``runtime`` itself), as the rest of the runtime does."""

from __future__ import annotations

import numpy as np

from .backend import _norm_axes, _shape
from .broadcast import unbroadcast, unreduce
from .errors import UnsupportedValueError
from .zeros import zeros_like
from .adjoints.elementwise import nonzero_or_one
from .adjoints.reductions import (
    _matrix_order,
    _products_around,
    _reduced_groups,
    _std_denominator,
    centered,
)

__all__ = [
    "std_curvature",
    "std_curvature_of_y",
    "prod_curvature",
    "norm_curvature",
    "norm_curvature_of_y",
    "vector_norm_curvature",
    "vector_norm_curvature_of_y",
    "softmax_curvature_of_y",
    "log_softmax_curvature_of_y",
    "logsumexp_tangent_adjoint",
]


# ---- std: s = (a - mean) / (n y), where y = std(a) -------------------------------------------------
def std_curvature(ds, a, y, axis=None, ddof=0, keepdims=False):
    """The adjoint of ``a`` in ``std_slope(a, y, ...)`` with ``y`` held: the slope is linear in the
    centered ``a``, and centering is its own adjoint."""
    return centered(ds / _std_denominator(centered(a, axis), a, y, axis, ddof, keepdims), axis)


def std_curvature_of_y(ds, s, a, y, axis=None, keepdims=False):
    """The adjoint of ``y`` in ``s = std_slope(a, y, ...)``: ``ds/dy = -s / y`` (0 where ``y`` is,
    where ``s`` is 0)."""
    return -np.sum(
        ds * s / unreduce(nonzero_or_one(y), a, axis, keepdims), axis=axis, keepdims=keepdims
    )


# ---- prod: P_i, the product of the entries reduced with entry i but itself -------------------------
def prod_curvature(dp, a, axis=None):
    """The adjoint of ``a`` in ``P = prod_of_others(a, axis)``: for entry ``k``, the sum over
    ``i != k`` of ``dp_i`` times the product of the entries but ``i`` and ``k``. No division (zeros
    are exact): two running sums along the reduced entries, one from each end, with the prefix and
    suffix products the slope itself is made of."""
    axes = _norm_axes(axis, np.ndim(a))
    if not axes:
        return np.zeros_like(dp)
    flat, undo = _reduced_groups(a, axes)
    gflat, _ = _reduced_groups(np.broadcast_to(dp, _shape(a)), axes)
    n = flat.shape[-1]
    before, after = _products_around(flat)  # the entries before k, and after it
    lower = np.zeros_like(before)  # sum over i < k of dp_i times the entries before k but i
    upper = np.zeros_like(before)  # sum over i > k of dp_i times the entries after k but i
    for k in range(1, n):
        lower[..., k] = (
            lower[..., k - 1] * flat[..., k - 1] + gflat[..., k - 1] * before[..., k - 1]
        )
        j = n - 1 - k
        upper[..., j] = upper[..., j + 1] * flat[..., j + 1] + gflat[..., j + 1] * after[..., j + 1]
    return undo(lower * after + upper * before)


# ---- norms: r = g sign(x) (|x| / y) ** (p - 1), the adjoint of the vector p-norm y -----------------
def _norm_order(x, ord, axis):
    """The vector order ``p`` that ``norm_adjoint`` applies (2 for None and 'fro'); a matrix
    order has no second-order rule yet, and is refused when the backward runs."""
    if _matrix_order(x, ord, axis):
        raise UnsupportedValueError(
            f"second derivatives of the matrix norm of order {ord!r} are not supported (vector norms "
            f"and the Frobenius norm are)"
        )
    return 2 if ord in (None, "fro") else ord


def _flat(p):
    """Orders whose slope is piecewise constant (count, 1-norm, max): no curvature."""
    return p in (0, 1) or np.isinf(p)


def _curvature_of_x(dr, g, x, y, p, axis, keepdims):
    """``g (p - 1) |x / y| ** (p - 2) / y`` entry by entry (``y`` held). At a zero entry: 1 / y
    for p = 2, 0 above (the limit), and 0 below 2, where the norm has a cusp."""
    if _flat(p):
        return np.zeros_like(x * dr)
    yb = unreduce(nonzero_or_one(y), x, axis, keepdims)
    gb = unreduce(g, x, axis, keepdims) * unreduce(y != 0, x, axis, keepdims)
    if p == 2:
        return dr * gb / yb
    zero = x == 0
    power = np.where(zero, 0.0, (np.abs(x) / yb + zero) ** (p - 2))
    return dr * gb * (p - 1) * power / yb


def _curvature_of_y(dr, r, x, y, p, axis, keepdims):
    """``dr/dy = -(p - 1) r / y``, summed over the reduced axes (0 where ``y`` is 0, as ``r`` is)."""
    if _flat(p):
        return np.zeros_like(y * 1.0)
    return -(p - 1) * np.sum(dr * r, axis=axis, keepdims=keepdims) / nonzero_or_one(y)


def norm_curvature(dr, g, x, y, ord=None, axis=None, keepdims=False):
    """The adjoint of ``x`` in ``r = norm_adjoint(g, x, y, ord, axis, keepdims)``."""
    return _curvature_of_x(dr, g, x, y, _norm_order(x, ord, axis), axis, keepdims)


def norm_curvature_of_y(dr, r, x, y, ord=None, axis=None, keepdims=False):
    """The adjoint of ``y`` in ``r = norm_adjoint(g, x, y, ord, axis, keepdims)``."""
    return _curvature_of_y(dr, r, x, y, _norm_order(x, ord, axis), axis, keepdims)


def vector_norm_curvature(dr, g, x, y, ord=2, axis=None, keepdims=False):
    """The adjoint of ``x`` in ``r = vector_norm_adjoint(g, x, y, ord, axis, keepdims)``."""
    return _curvature_of_x(dr, g, x, y, ord, axis, keepdims)


def vector_norm_curvature_of_y(dr, r, x, y, ord=2, axis=None, keepdims=False):
    """The adjoint of ``y`` in ``r = vector_norm_adjoint(g, x, y, ord, axis, keepdims)``."""
    return _curvature_of_y(dr, r, x, y, ord, axis, keepdims)


# ---- log-space sums: logaddexp's share, softmax, log_softmax, logsumexp -----------------------------
def softmax_curvature_of_y(dr, g, y, axis=None):
    """The adjoint of ``y`` in ``r = softmax_adjoint(g, y, axis) = y (g - sum(g y))``."""
    s = np.sum(g * y, axis=axis, keepdims=True)
    return dr * (g - s) - g * np.sum(dr * y, axis=axis, keepdims=True)


def log_softmax_curvature_of_y(dr, t, y, axis=None):
    """The adjoint of ``y`` in ``r = log_softmax_tangent(t, y, axis) = t - sum(t exp(y))``."""
    return -t * np.exp(y) * np.sum(dr, axis=axis, keepdims=True)


def logsumexp_tangent_adjoint(dr, t, a, y, axis=None, b=None, keepdims=False, which=0, part="t"):
    """The adjoint of one operand (``part``: "t", "a", "y" or "b") of ``r = logsumexp_tangent(t,
    a, y, axis, b, keepdims, which) = sum(t w)``, where ``w = exp(a - y)`` (times ``b`` when
    ``which`` is 0)."""
    from .tangents import _logsumexp_weights

    w, e, like = _logsumexp_weights(a, y, axis, b, keepdims, which)
    u = unreduce(dr, like, axis, keepdims)
    if part == "t":
        return unbroadcast(u * w, t)
    if part == "b":
        return unbroadcast(u * t * e, b) if which == 0 else zeros_like(b)
    q = u * t * w
    return unbroadcast(q, a) if part == "a" else -np.sum(q, axis=axis, keepdims=keepdims)
