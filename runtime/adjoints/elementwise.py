"""Elementwise functions: slopes of powers, logarithms and log-space sums, extrema, complex parts
(``transforms/rules/elementwise.py``).

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import math

import numpy as np

from ..zeros import zeros_like
from .common import _is_complex


def log_of_base(base):
    """The natural log of a logarithm's base (1.0 for ``None``, base e)."""
    return 1.0 if base is None else math.log(base)


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
    # no ties (the usual case): skip their arithmetic
    if type(ties) is np.ndarray and not ties.any():
        return wins  # (a host array only: on a device, any() would wait for the device)
    dtype = getattr(g, "dtype", None)
    return wins + ties * (0.5 if dtype is None else dtype.type(0.5))


def first_wins(x, y, greatest):
    """Where Python's ``max(x, y)`` (``greatest``) or ``min(x, y)`` is ``x`` and not a tie: ``x``
    unless ``y`` is strictly beyond it, so ``max(x, nan)`` is ``x`` (a NaN is never beyond)."""
    beyond = (y > x) if greatest else (y < x)
    return np.logical_not(beyond) & (x != y)


def skipping_nan_wins(x, y, greatest):
    """Where ``np.fmax(x, y)`` (``greatest``) or ``np.fmin`` is ``x`` and not a tie: ``x`` beyond
    ``y``, or ``y`` a NaN that they skip (and ``x`` not one)."""
    beyond = (x > y) if greatest else (x < y)
    return beyond | (np.isnan(y) & np.logical_not(np.isnan(x)))


def real_part(g):
    """``g`` without the meaningless imaginary part an adjoint of a real value may carry."""
    return g.real if _is_complex(g) else g


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
