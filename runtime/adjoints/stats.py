"""``scipy.stats``' distributions (``transforms/rules/stats.py``); scipy imports lazily.

A location-scale family's functions are ``f(z)`` with ``z = (x - loc) / scale``, a density's
divided by ``scale`` (its log less ``log(scale)``). Its rule gives the slope of ``f`` in ``z``
and, for a density, the slope in ``scale`` at fixed ``z`` (``-1 / scale`` for a log density);
``location_scale_adjoint`` turns them into the adjoints of ``x``, ``loc`` and ``scale``:
``dz/dx = 1 / scale``, ``dz/dloc = -1 / scale``, ``dz/dscale = -z / scale``.

An adjoint helper takes the output adjoint first and returns the input's adjoint, summed over
broadcasting and in the input's dtype (scipy computes in float64 whatever it is given)."""

from __future__ import annotations

import numpy as np

from ..backend import _float_dtype
from ..broadcast import unbroadcast
from .linalg import _fold_triangle, _mT


def like_operand(g, x):
    """``g`` summed over the axes broadcasting added to ``x``, in ``x``'s dtype (a float for a
    Python number)."""
    g = unbroadcast(g, x)
    if hasattr(x, "dtype") and hasattr(g, "astype"):
        return g.astype(_float_dtype(x), copy=False)
    if not hasattr(x, "shape") and not isinstance(x, (list, tuple)):
        return float(np.sum(g))
    return g


def standardized(x, loc, scale):
    """``z = (x - loc) / scale``."""
    return (np.asarray(x, dtype=float) - loc) / scale


def location_scale_adjoint(gz, gs, z, scale, like, which):
    """The adjoint of ``x`` (``which`` 0), ``loc`` (1) or ``scale`` (2), shaped like ``like``,
    of ``f(z)``, ``z = (x - loc) / scale``, given ``gz`` (the output adjoint times ``f``'s slope
    in ``z``) and ``gs`` (times its slope in ``scale`` at fixed ``z``: 0 for a function of ``z``
    alone, ``-1 / scale`` for a log density)."""
    if which == 0:
        return like_operand(gz / scale, like)
    if which == 1:
        return like_operand(-gz / scale, like)
    return like_operand(gs - gz * z / scale, like)


def normal_density(z):
    """The standard normal density ``exp(-z^2 / 2) / sqrt(2 pi)``."""
    return 0.3989422804014327 * np.exp(-0.5 * z * z)


def normal_hazard(z, log_tail):
    """``pdf(z) / tail`` from the log of the tail probability (``logcdf``, ``logsf``), finite
    far out where the tail underflows."""
    return np.exp(-0.5 * z * z - 0.9189385332046727 - log_tail)


def digamma_of(x):
    """``scipy.special.digamma(x)``."""
    from scipy import special

    return special.digamma(x)


def t_df_slope(z, df):
    """The slope of Student's t ``logpdf`` in its degrees of freedom ``df`` at ``z``::

    (psi((df + 1) / 2) - psi(df / 2) - 1 / df - log(1 + z^2 / df)) / 2
        + (df + 1) z^2 / (2 df (df + z^2))
    """
    q = z * z
    return 0.5 * (
        digamma_of(0.5 * (df + 1.0)) - digamma_of(0.5 * df) - 1.0 / df - np.log1p(q / df)
    ) + (df + 1.0) * q / (2.0 * df * (df + q))


# ---- the multivariate normal -----------------------------------------------------------------------
def _mvn_arrays(x, mean, cov):
    """``x`` as points (rows), the mean and the full covariance as scipy's ``multivariate_normal``
    reads them (the dimension from ``mean``, else from ``cov``; a scalar or vector ``cov`` is
    ``cov I`` or ``diag(cov)``; a matrix is read in its lower triangle)."""
    if mean is not None:
        dim = np.size(mean)
    else:
        dim = 1 if np.ndim(cov) < 2 else np.shape(cov)[0]
    m = np.zeros(dim) if mean is None else np.reshape(np.asarray(mean, dtype=float), (dim,))
    c = np.asarray(cov, dtype=float)
    if c.ndim == 0:
        c = c * np.eye(dim)
    elif c.ndim == 1:
        c = np.diag(c) if dim > 1 else np.reshape(c, (1, 1))
    else:
        c = np.tril(c) + _mT(np.tril(c, -1))  # the lower triangle, as scipy's eigh reads it
    points = np.asarray(x, dtype=float)
    if points.ndim == 0:
        points = points[None, None]
    elif points.ndim == 1:
        points = points[:, None] if dim == 1 else points[None, :]
    return points, m, c


def mvn_logpdf_adjoint(g, x, mean, cov, which):
    """Adjoint of ``x`` (``which`` 0), ``mean`` (1) or ``cov`` (2) in ``y =
    multivariate_normal.logpdf(x, mean, cov)``, ``y_i = -(log det 2 pi C + r_i^T C^-1 r_i) / 2``
    with ``r_i = x_i - mean`` and ``z_i = C^-1 r_i``::

        x_i: -g_i z_i      mean: sum_i g_i z_i      C: (sum_i g_i z_i z_i^T - (sum_i g_i) C^-1) / 2

    ``C``'s adjoint is folded into the lower triangle scipy reads (an entry stands for its mirror
    too), or summed over the diagonal for a scalar or vector ``cov``."""
    points, m, c = _mvn_arrays(x, mean, cov)
    r = points - m
    z = _mT(np.linalg.solve(c, _mT(r)))
    gi = np.reshape(np.asarray(g, dtype=float), r.shape[:-1])
    if which == 0:
        return like_operand(np.reshape(-gi[..., None] * z, np.shape(x)), x)
    if which == 1:
        gm = np.sum(np.reshape(gi[..., None] * z, (-1, z.shape[-1])), axis=0)
        return like_operand(np.reshape(gm, np.shape(mean)), mean)
    zz = np.reshape(z, (-1, z.shape[-1]))
    gc = 0.5 * ((zz * np.reshape(gi, (-1, 1))).T @ zz - np.sum(gi) * np.linalg.inv(c))
    gc = _symmetric_part(gc)
    if np.ndim(cov) == 0:
        return like_operand(np.trace(gc), cov)
    if np.ndim(cov) == 1:
        return like_operand(np.reshape(np.diagonal(gc), np.shape(cov)), cov)
    return like_operand(_fold_triangle(gc, "L"), cov)


def _symmetric_part(a):
    return 0.5 * (a + _mT(a))
