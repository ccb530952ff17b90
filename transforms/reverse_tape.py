"""Reverse mode: the tape, the one channel between the forward sweep and the backward sweep.

Expects: the ``Naming`` of the function, the ``bind`` of its captures, and the compile's variant.
Guarantees: every push the forward sweep makes and every pop the backward sweep makes for the same
``key`` name the same list; pops come in the reverse order of pushes, on each list as on one
tape, so splitting the tape by key (``typed``: numba types a list by its items) changes no value.
A metered tape (``runtime/meter.py``) numbers every save: ``sites`` are (user position, value
saved), by site number.
"""

from __future__ import annotations

from . import code, ir
from .code import fmt, lit
from .naming import TAPE


class Tape:
    def __init__(self, naming, typed=False, meter=False):
        self.naming = naming
        self.name = naming.unique(TAPE)
        self.typed = typed  # one tape per saved variable and kind (the numba variant)
        self.meter = meter
        self.lists = {}  # with typed: key (of) -> tape name, in order of first use
        self.sites = []  # with meter: (pos, value code) of each save, by site number

    def of(self, key):
        """The tape a save goes on: the one tape, or with ``typed`` one per key (a saved
        variable, its entries, a branch flag, a trip count)."""
        if not self.typed or key is None:
            return self.name
        if key not in self.lists:
            self.lists[key] = self.naming.unique(f"{self.name}_{key.lstrip('_')}")
        return self.lists[key]

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
        return code.line(depth, fmt("{t}.append({v})", t=self.of(key), v=value), pos)

    def pop(self, key=None):
        return fmt("{t}.pop()", t=self.of(key))

    def keep(self, value, pos):
        """A metered value kept in a variable (or a snapshot): ``_tape.keep(value, site)``."""
        return fmt("{t}.keep({v}, {k})", t=self.name, v=value, k=self.site(value, pos))


def save_key(s):
    """The key of what statement ``s`` saves (``Tape.of``)."""
    return f"{s.target}_entry" if isinstance(s, ir.SetItem) else s.target
