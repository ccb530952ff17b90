"""Products: ``dot``, ``matmul``, ``inner``, ``vecdot``, ``tensordot``, ``einsum``, ``kron``,
``cross`` and the one-dimensional convolutions (``transforms/rules/products.py``).

Each helper takes the output adjoint ``g`` first and returns one operand's adjoint for operands
of any ranks numpy accepts (a rule's rank variants cover the common ranks inline, where shape
inference knows them). All work through the arrays' own module."""

from __future__ import annotations

import functools
import math

import numpy as np

from ..backend import _float_dtype, _shape, array_module
from ..broadcast import as_array_like, unbroadcast
from ..zeros import zeros_like
from .common import _nd


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
    res = np.einsum(
        ",".join([output] + [s for s, _ in others]) + "->" + kept,
        g,
        *(o for _, o in others),
        optimize=optimize if len(others) > 1 else False,
    )
    # labels this operand sums over alone come back by broadcasting, those it broadcast sum back
    sizes = tuple(_shape(x)[mine.index(c)] for c in uniq)
    res = res[tuple(slice(None) if c in kept else None for c in uniq)]
    summed = tuple(i for i, (r, n) in enumerate(zip(res.shape, sizes)) if n == 1 and r != 1)
    res = np.broadcast_to(res.sum(axis=summed, keepdims=True) if summed else res, sizes)
    if uniq == mine:
        return res
    full = zeros_like(x)  # a repeated label: res goes on the diagonal it names
    index = [
        np.arange(n).reshape([-1 if j == k else 1 for j in range(len(uniq))])
        for k, n in enumerate(sizes)
    ]
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
        output = "..." * ("..." in inputs) + "".join(
            sorted(c for c in set(used) if used.count(c) == 1)
        )
    counts = [nd - len(s.replace(".", "")) for s, nd in zip(ins, ndims)]
    fresh = "".join(c for c in _EINSUM_LABELS if c not in subscripts)[: max(counts, default=0)]
    spelled = tuple(
        s.replace("...", fresh[len(fresh) - k :] if k else "") for s, k in zip(ins, counts)
    )
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


def _like(g, x):
    """``g`` in ``x``'s shape (a Python float for a Python float)."""
    return (
        float(np.reshape(g, ()))
        if not hasattr(x, "shape")
        else np.reshape(g, np.shape(x)).astype(_float_dtype(x), copy=False)
    )


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
    full[off : off + g.shape[0]] = g
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
