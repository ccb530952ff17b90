"""Adjoints of indexing: ``unindex`` places an adjoint at ``idx`` in zeros (repeated integer
indices accumulate: scatter-add), ``written_part`` and ``zero_at`` split the adjoint of an array
written at ``idx``. Scatter-add goes through the array's library (``np.add.at``,
``cupyx.scatter_add``); a library with none (dask) gets a new array, never an in-place write.
"""

from __future__ import annotations

import math

import numpy as np

from .backend import LikeModule, _float_dtype, _known, _shape, array_module
from .broadcast import unbroadcast
from .zeros import ZERO, MapAdjoint, SeqAdjoint, _container_zeros, zeros_like

__all__ = ["unindex", "written_part", "zero_at"]

_ndarray = np.ndarray


def _is_advanced(idx):
    items = idx if isinstance(idx, tuple) else (idx,)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer)):
            continue
        return True
    return False


def _scatter_add(target, idx, g):
    if type(target).__module__.startswith("cupy"):
        import cupyx  # deferred: only reached with cupy arrays

        cupyx.scatter_add(target, idx, g)
    else:
        np.add.at(target, idx, g)


def _scattered(like, idx, g):
    """A new array shaped like ``like``, zero but for ``g`` added at ``idx`` (repeated positions
    accumulate), for an array library with no scatter-add (dask): the flat position each entry of
    ``g`` goes to, summed per position with ``np.bincount``. Never an in-place write, so it cannot
    be lost in a view: such a library's views are copies."""
    shape = _known(_shape(like))
    size = math.prod(shape)
    host = all(
        not hasattr(p, "shape") or type(p) is _ndarray
        for p in (idx if isinstance(idx, tuple) else (idx,))
    )
    positions = (np.arange(size) if host else array_module(like).arange(size)).reshape(shape)[idx]
    values = np.reshape(np.broadcast_to(g, _shape(positions)), (-1,))
    # chunked as the values
    where = np.zeros_like(values, dtype=np.intp) + np.reshape(positions, (-1,))
    return np.reshape(np.bincount(where, weights=values, minlength=size), shape).astype(
        _float_dtype(like)
    )


def unindex(g, like, idx):
    """The adjoint of ``like[idx]``: ``g`` placed in a zero array of ``like``'s shape.

    Repeated integer indices accumulate (scatter-add), as the chain rule asks."""
    if isinstance(like, (list, tuple, dict)):
        out = _container_zeros(like)
        out[idx] = SeqAdjoint(g) if isinstance(idx, slice) else g
        return out
    if (
        type(like) is not _ndarray
        and _is_advanced(idx)
        and isinstance(array_module(like), LikeModule)
    ):
        return _scattered(like, idx, g)
    out = zeros_like(like)
    if _is_advanced(idx):
        _scatter_add(out, idx, g)
    else:
        out[idx] = g
    return out


def written_part(g, idx, value):
    """The adjoint of ``value`` in ``a[idx] = value``, given the adjoint ``g`` of the new ``a``.

    With repeated integer indices numpy keeps the last write, so only the written positions
    that survived pass their adjoint back."""
    part = g[idx]
    if _is_advanced(idx):
        xp = array_module(g)
        ids = xp.arange(part.size).reshape(part.shape)
        winner = xp.full(g.shape, -1)
        winner[idx] = ids
        part = part * (winner[idx] == ids)
    return unbroadcast(part, value)


def zero_at(g, idx):
    """A copy of the adjoint ``g`` with ``g[idx]`` zeroed: the overwritten part of an array."""
    if isinstance(g, (SeqAdjoint, MapAdjoint)):
        g = type(g)(g)
        if isinstance(idx, slice):
            g[idx] = [ZERO] * len(range(*idx.indices(len(g))))
        else:
            g[idx] = ZERO
        return g
    g = g.copy()
    g[idx] = 0
    return g
