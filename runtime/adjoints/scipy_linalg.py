"""``scipy.linalg``: triangular solves, Cholesky factors and solves, the matrix exponential
(``transforms/rules/scipy_linalg.py``); scipy imports lazily.

LAPACK reads one triangle of a triangular or symmetric argument: each adjoint lands in the
triangle read (an off-diagonal entry of a symmetric matrix stands for its mirror too), and the
other triangle, never read, has none. A tuple result's unused parts have ``ZERO`` adjoints.

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint."""

from __future__ import annotations

import functools

import numpy as np

from ..backend import _float_dtype
from ..broadcast import unbroadcast
from ..zeros import ZERO, SeqAdjoint
from .linalg import _mT, _parts, cholesky_adjoint

_TRANSPOSED = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def _triangle(a, lower, unit_diagonal=False):
    """The part of ``a`` a triangular solve reads: its lower or upper triangle, without the
    diagonal for ``unit_diagonal`` (taken as ones)."""
    return (
        np.tril(a, -1 if unit_diagonal else 0) if lower else np.triu(a, 1 if unit_diagonal else 0)
    )


def _as_columns(v, vector):
    return v[..., None] if vector else v


def solve_triangular_adjoint_b(g, a, b, trans=0, lower=False, unit_diagonal=False):
    """Adjoint of ``b`` in ``x = solve_triangular(a, b, trans, lower)``, ``op(A) x = b``:
    ``op(A)^-T g``, the solve with the other ``trans`` (a vector ``b`` is one column), shaped
    like ``x`` (a stack of ``a`` broadcasts ``b``: ``unbroadcast`` sums it back)."""
    from scipy import linalg

    vector = np.ndim(b) == 1
    gb = linalg.solve_triangular(
        a,
        _as_columns(g, vector),
        trans=0 if _TRANSPOSED[trans] else 1,
        lower=lower,
        unit_diagonal=unit_diagonal,
    )
    return gb[..., 0] if vector else gb


def solve_triangular_adjoint_a(gb, a, b, x, trans=0, lower=False, unit_diagonal=False):
    """Adjoint of ``a`` in ``x = solve_triangular(a, b, trans, lower)``, given ``gb`` the adjoint
    of ``b``: ``-gb x^T`` (``-x gb^T`` for ``trans``), in the triangle the solve reads."""
    vector = np.ndim(b) == 1
    xc, gc = _as_columns(x, vector), _as_columns(gb, vector)
    ga = -(xc @ _mT(gc)) if _TRANSPOSED[trans] else -(gc @ _mT(xc))
    ga = unbroadcast(_triangle(ga, lower, unit_diagonal), a)
    return ga.astype(_float_dtype(a), copy=False)


def scipy_cholesky_adjoint(g, a, y, lower=False):
    """Adjoint of ``scipy.linalg.cholesky(a, lower)``: the upper factor ``U`` (``a = U^T U``,
    read from ``a``'s upper triangle) unless ``lower``, as numpy's ``upper=True``."""
    return cholesky_adjoint(g, a, y, upper=not lower)


def cho_factor_adjoint(g, a, y, lower=False):
    """Adjoint of ``a`` in ``c, lower = cho_factor(a, lower)``. ``c`` holds the factor in one
    triangle (from ``a``'s same triangle, through the Cholesky adjoint); strictly in the other,
    scipy before 1.18 leaves ``a``'s own entries, untouched (they pass their adjoint straight
    back), and scipy 1.18 zeros (no adjoint)."""
    gc = _parts(g, 2)[0]
    if gc is None:
        return np.zeros_like(a, dtype=_float_dtype(a))
    c = y[0]
    factor = np.tril(c) if lower else np.triu(c)
    gfactor = np.tril(gc) if lower else np.triu(gc)
    out = cholesky_adjoint(gfactor, a, factor, upper=not lower)
    if _cho_factor_keeps_the_other_triangle():
        out = out + (gc - gfactor)
    return out.astype(_float_dtype(a), copy=False)


@functools.cache
def _cho_factor_keeps_the_other_triangle():
    """Does this scipy's ``cho_factor`` leave the input's entries in the triangle it does not
    use (before 1.18), rather than zeros (1.18)? Asked of scipy itself, once."""
    from scipy import linalg

    c, _ = linalg.cho_factor(np.array([[4.0, 1.0], [1.0, 3.0]]))
    return c[1, 0] == 1.0


def _cho_parts(c_and_lower):
    c, lower = c_and_lower[0], bool(c_and_lower[1])
    return c, lower, (np.tril(c) if lower else np.triu(c))


def cho_solve_adjoint_b(g, c_and_lower, b):
    """Adjoint of ``b`` in ``x = cho_solve((c, lower), b)``, ``A x = b`` with ``A`` symmetric:
    ``A^-1 g``, the same solve."""
    from scipy import linalg

    gb = linalg.cho_solve((c_and_lower[0], bool(c_and_lower[1])), g)
    return unbroadcast(gb, b).astype(_float_dtype(b), copy=False)


def cho_solve_adjoint_c(g, c_and_lower, b, x):
    """Adjoint of ``(c, lower)`` in ``x = cho_solve((c, lower), b)``: ``A = L L^T`` (``U^T U``)
    from ``c``'s triangle, ``A``'s adjoint ``S = -gb x^T`` (``gb = A^-1 g``), so the factor's is
    ``(S + S^T) L`` (``U (S + S^T)``) in that triangle; ``lower``, a flag, has none."""
    from scipy import linalg

    c, lower, factor = _cho_parts(c_and_lower)
    vector = np.ndim(b) == 1
    gb = _as_columns(linalg.cho_solve((c, lower), g), vector)
    s = -(gb @ _mT(_as_columns(x, vector)))
    s = s + _mT(s)
    gc = np.tril(s @ factor) if lower else np.triu(factor @ s)
    return SeqAdjoint([gc.astype(_float_dtype(c), copy=False), ZERO])


def expm_adjoint(g, a):
    """Adjoint of ``scipy.linalg.expm(a)``: the Frechet derivative of ``expm`` at ``a^T`` in
    the direction ``g``, ``expm_frechet(a^T, g)`` (one matrix at a time for a stack)."""
    from scipy import linalg

    a = np.asarray(a)
    g = np.broadcast_to(g, a.shape)
    if a.ndim == 2:
        out = linalg.expm_frechet(a.T, g, compute_expm=False)
    else:
        flat_a = a.reshape((-1,) + a.shape[-2:])
        flat_g = g.reshape(flat_a.shape)
        out = np.stack(
            [linalg.expm_frechet(m.T, h, compute_expm=False) for m, h in zip(flat_a, flat_g)]
        ).reshape(a.shape)
    return out.astype(_float_dtype(a), copy=False)
