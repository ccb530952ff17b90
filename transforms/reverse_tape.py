"""Reverse mode: the tape, the one channel between the forward sweep and the backward sweep.

Expects: the ``Naming`` of the function, the ``bind`` of its captures, and the compile's variant.
Guarantees: every push the forward sweep makes and every pop the backward sweep makes for the same
``key`` name the same list; pops come in the reverse order of pushes, on each list as on one
tape, so splitting the tape by key (``typed``: numba types a list by its items) changes no value.
A metered tape (``runtime/meter.py``) numbers every save: ``sites`` are (user position, value
saved), by site number.

In the numba variant a key saved once per trip of a ``for`` loop may instead have an array
``preallocate`` d before the loop, one row per trip: the forward writes row ``k`` on trip ``k``
(``tape_put``, which numba compiles only where the value's type is the row's exactly), and the
backward reads row ``k`` when it reverses trip ``k`` (the loop's trip index, ``counter``). The
rows hold copies: the sweeps ask for this only where no value is written into in place.
"""

from __future__ import annotations

from . import code, ir
from .code import fmt, lit
from .naming import TAPE


class Tape:
    def __init__(self, naming, typed=False, meter=False, bind=None):
        self.naming = naming
        self.name = naming.unique(TAPE)
        self.typed = typed  # one tape per saved variable and kind (the numba variant)
        self.meter = meter
        self.bind = bind  # with typed: the name the generated code calls a runtime helper by
        self.lists = {}  # with typed: key (of) -> tape name, in order of first use
        self.sites = []  # with meter: (pos, value code) of each save, by site number
        self.arrays = {}  # preallocated keys: key -> (array name, id(loop))
        self.allocations = {}  # id(loop) -> [(array name, Code of a value like its rows)]
        self.counters = {}  # id(loop) -> the name of its trip index
        self.site_keys = {}  # id(statement) -> the key of its save, where not ``save_key``

    def of(self, key):
        """The tape a save goes on: the one tape, or with ``typed`` one per key (a saved
        variable, its entries, a branch flag, a trip count)."""
        if not self.typed or key is None:
            return self.name
        if key not in self.lists:
            self.lists[key] = self.naming.unique(f"{self.name}_{key.lstrip('_')}")
        return self.lists[key]

    def key(self, s):
        """The key of what statement ``s`` saves."""
        return self.site_keys.get(id(s)) or save_key(s)

    def preallocate(self, key, loop, like, s=None):
        """Save ``key`` (statement ``s``'s save) into an array of one row per trip of ``loop``,
        shaped and typed as ``like`` (Code) is before the loop; returns the key."""
        array = self.naming.unique(f"{self.name}_{key.lstrip('_')}")
        if s is not None:  # two saves of one variable in one loop: an array each
            key = self.site_keys[id(s)] = ("row", array)
        self.arrays[key] = (array, id(loop))
        self.allocations.setdefault(id(loop), []).append((array, like))
        self.counters.setdefault(id(loop), self.naming.temp("j"))
        return key

    def site(self, value, pos):
        """The number of a new metered site, where ``value`` is saved at ``pos``."""
        self.sites.append((pos, value.render()))
        return lit(str(len(self.sites) - 1))

    def push(self, depth, value, pos=None, about=None, key=None):
        """``_tape.append(value)``; ``about``: the user's statement a metered site is counted at
        when the line itself maps to none (a branch flag, a trip count). ``key``: what is saved
        (``of``); its pop names the same key."""
        if self.meter:
            site = self.site(value, pos or about)
            return code.line(depth, fmt("{t}.push({v}, {k})", t=self.name, v=value, k=site), pos)
        if key in self.arrays:
            array, loop = self.arrays[key]
            f = self.bind("tape_put", jit_helper("tape_put"))
            put = fmt("{f}({a}, {k}, {v})", f=f, a=array, k=self.counters[loop], v=value)
            return code.line(depth, put, pos, writes=(array,), reads=put.names())
        return code.line(depth, fmt("{t}.append({v})", t=self.of(key), v=value), pos)

    def pop(self, key=None):
        if key in self.arrays:
            array, loop = self.arrays[key]
            return fmt("{a}[{k}]", a=array, k=self.counters[loop])
        return fmt("{t}.pop()", t=self.of(key))

    def keep(self, value, pos):
        """A metered value kept in a variable (or a snapshot): ``_tape.keep(value, site)``."""
        return fmt("{t}.keep({v}, {k})", t=self.name, v=value, k=self.site(value, pos))


def save_key(s):
    """The key of what statement ``s`` saves (``Tape.of``)."""
    return f"{s.target}_entry" if isinstance(s, ir.SetItem) else s.target


def jit_helper(name):
    """A helper of the numba variant's own (``runtime/jit.py``, which imports numba)."""
    from sourcegrad.runtime import jit

    return getattr(jit, name)
