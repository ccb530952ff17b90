"""Linear algebra: diagonals and traces, solves, determinants, factorizations (Cholesky, eigh,
SVD, QR), pseudo-inverses (``transforms/rules/linalg.py``; products are in ``products.py``).

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import math

import numpy as np

from ..backend import _float_dtype, _shape, array_module
from ..broadcast import as_array_like, unbroadcast
from ..scatter import _scatter_add
from ..zeros import ZERO, zeros_like
from .common import _nd
from .reductions import prod_of_others


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


def filled_diagonal(a, val, wrap=False):
    """``np.fill_diagonal(a, val, wrap)`` applied to a copy of ``a``, returned: what the in-place
    call on a buffer the function allocated stands for (``a = filled_diagonal(a, val, wrap)``)."""
    out = a.copy()
    np.fill_diagonal(out, val, wrap=wrap)
    return out


def _filled_positions(shape, wrap):
    """The flat positions ``np.fill_diagonal`` writes in an array of ``shape``, in order: every
    ``step``-th from 0 (a tall matrix's stop after its square top unless ``wrap``), numpy's own
    arithmetic."""
    if len(shape) == 2:
        step, end = shape[1] + 1, (None if wrap else shape[1] * shape[1])
    else:
        step, end = 1 + int(np.sum(np.cumprod(shape[:-1]))), None
    return np.arange(math.prod(shape))[:end:step]


def unfill_diagonal(g, wrap=False):
    """Adjoint of ``a`` in ``filled_diagonal(a, val, wrap)``: ``g`` but where the diagonal was
    overwritten (a mask, not a write: a lazy array has no views to write through)."""
    shape = _shape(g)
    keep = np.ones(math.prod(shape), dtype=bool)
    keep[_filled_positions(shape, wrap)] = False
    return g * array_module(g).asarray(np.reshape(keep, shape))


def fill_diagonal_values_adjoint(g, val, wrap=False):
    """Adjoint of ``val`` in ``filled_diagonal(a, val, wrap)``: ``g`` along the written diagonal.
    numpy writes ``val``'s entries in turn along it, starting over when they run out, so entry
    ``j`` of ``m`` collects the positions ``j, j + m, j + 2m, ...`` (a scalar all of them)."""
    xp = array_module(g)  # the positions, host arrays, index g where it lives (a device)
    written = np.reshape(g, -1)[xp.asarray(_filled_positions(_shape(g), wrap))]
    m = math.prod(np.shape(val))
    out = xp.zeros(m, dtype=written.dtype)
    _scatter_add(out, xp.asarray(np.arange(written.shape[0]) % m), written)
    out = np.reshape(out, np.shape(val))
    if isinstance(val, (list, tuple)):
        return unbroadcast(out, val)  # a list's adjoint: its entries'
    return out.astype(_float_dtype(val), copy=False) if hasattr(val, "shape") else out


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
            gu = _complement_adjoint(
                u[..., :, :k], u[..., :, k:], gu[..., :, :k], gu[..., :, k:], "columns of u"
            )
        if gvh is not None and n > m:
            gvh = _mT(
                _complement_adjoint(
                    _mT(vh[..., :k, :]),
                    _mT(vh[..., k:, :]),
                    _mT(gvh[..., :k, :]),
                    _mT(gvh[..., k:, :]),
                    "rows of vh",
                )
            )
        u, vh = u[..., :, :k], vh[..., :k, :]
        gu, gvh = (
            (None if gu is None else gu[..., :, :k]),
            (None if gvh is None else gvh[..., :k, :]),
        )
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
            "such as u2 @ u2.T) has a gradient. Use full_matrices=False, or read them only through their span"
        )
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
        out = out - 2.0 * (
            np.multiply.outer(r, x) * gres if np.ndim(b) == 1 else (r * gres) @ _mT(x)
        )
    if gs is not None:
        out = out + svd_adjoint(gs, a, y[3], compute_uv=False)
    return out.astype(_float_dtype(a), copy=False)
