"""Shape functions: joins and splits, tiles and repeats, pads, partitions, sliding windows
(``transforms/rules/shape.py``).

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import math

import numpy as np

from ..backend import _float_dtype, _shape, array_module
from ..broadcast import unbroadcast
from ..scatter import _scatter_add
from ..zeros import SeqAdjoint, ZERO, zeros_like
from .common import _nd, _unpermute


def unpartition(g, x, y, axis=-1):
    """Adjoint of ``np.partition(x, kth, axis)``: the result is a permutation of ``x``, matched
    entry by entry through both arrays' sorting orders (equal entries are interchangeable)."""
    if axis is None:
        from_y = np.reshape(g, -1)[np.argsort(y, axis=None, kind="stable")]
        return _unpermute(from_y, np.argsort(x, axis=None, kind="stable"), None, x)
    from_y = np.take_along_axis(g, np.argsort(y, axis=axis, kind="stable"), axis=axis)
    return _unpermute(from_y, np.argsort(x, axis=axis, kind="stable"), axis, x)


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
    parts = [
        unbroadcast(np.where(f, g, 0.0).astype(np.asarray(g).dtype), ch)
        for f, ch in zip(out, choicelist)
    ]
    # the choices as one array (a list literal the compiler stacked)
    if hasattr(choicelist, "shape"):
        return np.stack([np.broadcast_to(q, np.shape(choicelist)[1:]) for q in parts]).astype(
            _float_dtype(choicelist), copy=False
        )
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
        return shapes[0][:ax] + (sum(s[ax] for s in shapes),) + shapes[0][ax + 1 :]

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


def _insert_labels(arr, obj, values, axis):
    """``np.insert`` applied to labels: ``arr``'s entries numbered ``0 .. n-1`` in C order, the
    values' ``n .. n+m-1``. Each entry of the result names the entry of ``arr`` or of ``values``
    numpy put there (a value it broadcast to several places names each of them), as a flat array."""
    n, m = math.prod(_shape(arr)), math.prod(np.shape(values))
    labels = np.insert(
        np.arange(n).reshape(_shape(arr)),
        obj,
        np.arange(n, n + m).reshape(np.shape(values)),
        axis,
    )
    return np.reshape(labels, -1), n, m


def uninsert(g, arr, obj, values, axis=None, which=0):
    """Adjoint of ``arr`` (``which`` 0) or ``values`` (1) in ``y = np.insert(arr, obj, values,
    axis)``: the entries of ``g`` where numpy put each one of them (``_insert_labels``), summed
    over the places a broadcast value went. ``arr``'s entries keep their order in ``y``."""
    labels, n, m = _insert_labels(arr, obj, values, axis)
    flat = np.reshape(g, -1)
    xp = array_module(g)  # the labels, host arrays, index g where it lives (a device)
    if which == 0:
        kept = flat[xp.asarray(np.flatnonzero(labels < n))]
        return np.reshape(kept, _shape(arr)).astype(_float_dtype(arr), copy=False)
    placed = np.flatnonzero(labels >= n)
    out = xp.zeros(m, dtype=flat.dtype)
    _scatter_add(out, xp.asarray(labels[placed] - n), flat[xp.asarray(placed)])
    out = np.reshape(out, np.shape(values))
    if isinstance(values, (list, tuple)):
        return unbroadcast(out, values)  # a list's adjoint: its entries'
    return out.astype(_float_dtype(values), copy=False) if hasattr(values, "shape") else out
