"""Run-time pieces of adjoint rules too long to read well inline in generated code.

Each takes the output adjoint ``g`` first and works through the arrays' own module.
"""

from __future__ import annotations

import numpy as np

from . import unbroadcast, _shape


def _nd(x):
    return len(_shape(x))


# --- linear algebra -------------------------------------------------------------------------

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
    if which == 0:
        # g: free_a + free_b ; contract with b over free_b
        out = np.tensordot(g, b, axes=(list(range(ga, g.ndim)), free_b))
        # out axes: free_a + axes_b order -> corresponding a axes: free_a + axes_a
        perm = free_a + axes_a
        return np.transpose(out, np.argsort(perm))
    out = np.tensordot(a, g, axes=(free_a, list(range(ga))))
    perm = axes_b + free_b
    return np.transpose(out, np.argsort(perm))


def einsum_adjoint(g, subscripts, operands, which):
    """Adjoint of operand ``which`` of ``np.einsum(subscripts, *operands)`` (no ``...``)."""
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise NotImplementedError("the adjoint of einsum with '...' is not implemented")
    inputs, arrow, output = spec.partition("->")
    ins = inputs.split(",")
    if not arrow:
        output = "".join(sorted(c for c in set(inputs.replace(",", "")) if inputs.count(c) == 1))
    target = ins[which]
    others = [s for i, s in enumerate(ins) if i != which]
    ops = [o for i, o in enumerate(operands) if i != which]
    uniq = "".join(dict.fromkeys(target))
    avail = set(output).union(*others)
    kept = "".join(c for c in uniq if c in avail)
    res = np.einsum(",".join([output] + others) + "->" + kept, g, *ops)
    # letters this operand sums over alone come back by broadcasting
    sizes = dict(zip(target, _shape(operands[which])))
    idx = tuple(slice(None) if c in kept else None for c in uniq)
    res = np.broadcast_to(res[idx], tuple(sizes[c] for c in uniq))
    if uniq == target:
        return res
    # repeated letters (a diagonal): write into the diagonal of a zero array
    full = np.zeros(_shape(operands[which]), dtype=res.dtype)
    np.einsum(target + "->" + uniq, full)[...] = res
    return full


# --- shape ----------------------------------------------------------------------------------

def untranspose(g, axes):
    """Adjoint of ``np.transpose(x, axes)``."""
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort(axes))


def unsqueeze_like(g, like):
    """Adjoint of reshape-like functions: ``g`` with ``like``'s shape."""
    return np.reshape(g, _shape(like))


def unconcatenate(g, xs, axis=0):
    """Adjoint of ``np.concatenate(xs, axis)``: ``g`` cut back into pieces shaped like ``xs``."""
    if axis is None:
        sizes = np.cumsum([np.size(x) for x in xs])[:-1]
        return [np.reshape(p, _shape(x)) for p, x in zip(np.split(g.ravel(), sizes), xs)]
    sizes = np.cumsum([_shape(x)[axis] for x in xs])[:-1]
    return np.split(g, sizes, axis=axis)


def unstack(g, xs, axis=0):
    """Adjoint of ``np.stack(xs, axis)``."""
    return [np.take(g, i, axis=axis) for i in range(len(xs))]


def unhstack(g, xs):
    pieces = unconcatenate(g, [np.atleast_1d(x) for x in xs], 0 if _nd(xs[0]) <= 1 else 1)
    return [np.reshape(p, _shape(x)) for p, x in zip(pieces, xs)]


def unvstack(g, xs):
    pieces = unconcatenate(g, [np.atleast_2d(x) for x in xs], 0)
    return [np.reshape(p, _shape(x)) for p, x in zip(pieces, xs)]


def unsplit(gs, x, indices_or_sections, axis=0):
    """Adjoint of ``np.split``: the pieces' adjoints (``ZERO`` where unused) joined again."""
    from . import ZERO

    pieces = np.split(np.zeros(_shape(x)), indices_or_sections, axis=axis)
    return np.concatenate([p if gi is ZERO else gi for p, gi in zip(pieces, gs)], axis=axis)


def untile(g, x, reps):
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
    shape = _shape(x)
    if axis is None:
        n = int(np.size(x))
        if isinstance(repeats, int):
            return np.reshape(g.reshape(n, repeats).sum(axis=1), shape)
        idx = np.repeat(np.arange(n), repeats)
        out = np.zeros(n, dtype=g.dtype)
        np.add.at(out, idx, g)
        return np.reshape(out, shape)
    axis = axis % len(shape)
    n = shape[axis]
    idx = np.repeat(np.arange(n), repeats)
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(np.moveaxis(out, axis, 0), idx, np.moveaxis(g, axis, 0))
    return out


def unpad(g, x, pad_width):
    nd = _nd(x)
    pw = np.broadcast_to(np.asarray(pad_width, dtype=int).reshape(-1, 2) if np.ndim(pad_width) else np.full((1, 2), pad_width), (nd, 2))
    idx = tuple(slice(int(lo), g.shape[i] - int(hi)) for i, (lo, hi) in enumerate(pw))
    return g[idx]


def untake(g, x, indices, axis=None):
    from . import _scatter_add

    out = np.zeros(_shape(x), dtype=g.dtype)
    if axis is None:
        flat = out.reshape(-1)
        _scatter_add(flat, np.ravel(indices), np.ravel(g))
        return out
    axis = axis % _nd(x)
    moved = np.moveaxis(out, axis, 0)
    gm = np.moveaxis(g, list(range(axis, axis + np.ndim(indices))), list(range(np.ndim(indices))))
    _scatter_add(moved, indices, gm)
    return out


def unsort(g, x, axis=-1):
    """Adjoint of ``np.sort``: ``g`` sent back to the positions the sorted entries came from."""
    if axis is None:
        order = np.argsort(x, axis=None, kind="stable")
        out = np.zeros(np.size(x), dtype=g.dtype)
        out[order] = g
        return out.reshape(_shape(x))
    order = np.argsort(x, axis=axis, kind="stable")
    out = np.zeros(_shape(x), dtype=g.dtype)
    np.put_along_axis(out, order, g, axis=axis)
    return out


def clip_mask(x, lo, hi):
    """1 where ``np.clip`` passed ``x`` through, else 0."""
    m = True
    if lo is not None:
        m = x >= lo
    if hi is not None:
        m = m & (x <= hi)
    return m


def reverse_cumsum(g, x, axis=None):
    """Adjoint of ``np.cumsum(x, axis)``."""
    if axis is None:
        flat = np.ravel(g)[::-1]
        return np.reshape(np.cumsum(flat)[::-1], _shape(x))
    rev = np.flip(g, axis)
    return np.flip(np.cumsum(rev, axis=axis), axis)


def undiag(g, x, k=0):
    """Adjoint of ``np.diag(x, k)``."""
    if _nd(x) == 1:
        return np.diagonal(g, k).copy()
    return np.diag(g, k) if _shape(g) else g


def undiagonal(g, x, offset=0, axis1=0, axis2=1):
    """Adjoint of ``np.diagonal(x, offset, axis1, axis2)``."""
    out = np.zeros(_shape(x), dtype=g.dtype)
    n = g.shape[-1]
    i = np.arange(n)
    sl = [slice(None)] * _nd(x)
    sl[axis1], sl[axis2] = i + max(0, -offset), i + max(0, offset)
    out[tuple(sl)] = np.moveaxis(g, -1, 0)
    return out


def untrace(g, x, offset=0):
    out = np.zeros(_shape(x), dtype=np.result_type(g, float))
    n = min(out.shape[0] - max(0, -offset), out.shape[1] - max(0, offset))
    i = np.arange(max(n, 0))
    out[i + max(0, -offset), i + max(0, offset)] = g
    return out


# --- reductions -----------------------------------------------------------------------------

def fanout(g, xs):
    """Adjoint of Python's ``sum(xs)``: every element receives ``g`` (unbroadcast to it)."""
    if isinstance(xs, (list, tuple)):
        return [unbroadcast(g, x) for x in xs]
    return np.broadcast_to(g, _shape(xs))  # sum over an array's first axis


def norm_adjoint(g, x, y, ord, axis=None, keepdims=False):
    """Adjoint of ``np.linalg.norm`` for vector orders 1, 2 and inf and the Frobenius norm."""
    from . import unreduce

    gb = unreduce(g, x, axis, keepdims)
    yb = unreduce(y, x, axis, keepdims)
    if ord in (2, "fro") and (axis is None or isinstance(axis, int) or ord == "fro"):
        if ord == 2 and (axis is None and _nd(x) == 2 or isinstance(axis, tuple)):
            raise NotImplementedError("the adjoint of the matrix 2-norm (spectral norm) is not implemented")
        return gb * x / yb
    if ord == 1 and (_nd(x) == 1 or isinstance(axis, int)):
        return gb * np.sign(x)
    if ord in (np.inf, float("inf")) and (_nd(x) == 1 or isinstance(axis, int)):
        mask = np.abs(x) == yb
        return gb * np.sign(x) * mask / mask.sum(axis=axis, keepdims=True)
    raise NotImplementedError(f"the adjoint of np.linalg.norm with ord={ord!r} is not implemented")


def average_adjoint(g, a, axis, weights, keepdims=False):
    """Adjoint of ``np.average(a, axis, weights)`` with respect to ``a``."""
    from . import unreduce

    w = np.asarray(weights) if not hasattr(weights, "shape") else weights
    if axis is not None and _nd(w) == 1 and _nd(a) > 1:
        shape = [1] * _nd(a)
        shape[axis] = w.shape[0]
        w = w.reshape(shape)
    return unreduce(g, a, axis, keepdims) * w / w.sum(axis=axis, keepdims=True)


# --- dense linear algebra ---------------------------------------------------------------------

def operands_of(*xs):
    """The operands actually passed to ``einsum`` (trailing ``None`` defaults dropped)."""
    return [x for x in xs if x is not None]


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


def slogdet_adjoint(g, a):
    """Adjoint of ``np.linalg.slogdet(a)`` through its ``logabsdet`` (the sign has none)."""
    gl = g[1] if isinstance(g, tuple) else g
    return np.asarray(gl)[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)


def kron_adjoint(g, a, b, which):
    """Adjoint of ``np.kron(a, b)`` for 1-d and 2-d operands."""
    a2, b2 = np.atleast_2d(a), np.atleast_2d(b)
    (m, n), (p, q) = a2.shape, b2.shape
    g4 = np.reshape(g, (m, p, n, q))
    if which == 0:
        return np.reshape(np.einsum("ipjq,pq->ij", g4, b2), _shape(a))
    return np.reshape(np.einsum("ipjq,ij->pq", g4, a2), _shape(b))


def untake_along_axis(g, x, indices, axis):
    """Adjoint of ``np.take_along_axis(x, indices, axis)``."""
    out = np.zeros(_shape(x), dtype=g.dtype)
    if axis is None:
        np.add.at(out.reshape(-1), np.ravel(indices), np.ravel(g))
        return out
    idx = list(np.ix_(*[np.arange(n) for n in _shape(indices)]))
    idx[axis % _nd(x)] = indices
    np.add.at(out, tuple(idx), g)
    return out
