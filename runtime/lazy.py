"""Lazy arrays at a data-dependent test: persist what the rest of the computation reads.

A gradient called with dask arrays only builds a graph, except where the user's own code computes:
a data-dependent ``if`` or ``while`` test (``if np.sum(h) > 0``) must know its answer. The code
compiled for lazy arguments (``transforms/reverse.py``, ``lazy=True``) calls ``persist_live`` just
before each such test with the values the rest of the forward and the backward read (never the
function's arguments: they are the caller's, and may be a data set larger than memory), and binds
the persisted values in their place. So the test, and the final ``dask.compute`` of value and
gradients, start from those values instead of running their graph again. Values pushed on the
tape since the last test are persisted in place (``LazyTape`` remembers how far it got).

Imports numpy only: dask is looked up in ``sys.modules`` (a lazy array means dask is imported).
"""

from __future__ import annotations

import sys

__all__ = ["persist_live", "lazy_tape", "LazyTape"]


class LazyTape(list):
    """The tape of a lazy-mode forward: a list that knows how many of its first entries were
    persisted already, so each test persists only what was pushed since the last one."""

    __slots__ = ("persisted",)

    def __init__(self):
        super().__init__()
        self.persisted = 0


def lazy_tape():
    return LazyTape()


def _not_in_memory(v):
    """Is ``v`` a dask collection with work in its graph? One whose graph is only its own chunks
    (persisted already, ``from_array`` of an array in memory, or made from nothing, as ``zeros``)
    is left as it is."""
    graph = getattr(v, "__dask_graph__", None)
    graph = graph() if graph is not None else None
    if graph is None:
        return False
    if len(getattr(graph, "layers", ())) > 1:
        return True
    keys = v.__dask_keys__()
    n = 0
    stack = [keys]
    while stack:
        k = stack.pop()
        if isinstance(k, list):
            stack.extend(k)
        else:
            n += 1
    return len(graph) > n


def persist_live(tape, *values):
    """``values``, with every dask collection among them persisted, in one ``dask.persist`` with
    the tape's entries pushed since the last call (replaced in the tape); other values come back
    as they are. ``tape``: a ``LazyTape`` or None."""
    dask = sys.modules.get("dask")
    if dask is None:  # no dask imported: nothing can be a dask collection
        return values
    lazy = _not_in_memory
    mine = [i for i, v in enumerate(values) if lazy(v)]
    start = 0 if tape is None else min(tape.persisted, len(tape))
    taped = [] if tape is None else [i for i in range(start, len(tape)) if lazy(tape[i])]
    if not mine and not taped:
        return values
    done = dask.persist(*(values[i] for i in mine), *(tape[i] for i in taped))
    out = list(values)
    for i, v in zip(mine, done):
        out[i] = v
    for i, v in zip(taped, done[len(mine) :]):
        tape[i] = v
    if tape is not None:
        tape.persisted = len(tape)
    return tuple(out)
