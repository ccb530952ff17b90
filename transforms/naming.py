"""Every identifier the compiler generates comes from here.

``x_bar`` is the adjoint of ``x``; ``_t0, _t1, ...`` are temporaries; ``_tape`` is the per-call
tape. Every name the user's function binds or reads is reserved first, so a generated name
never collides with one of the user's.
"""

from __future__ import annotations

TAPE = (
    "_tape"  # the per-call tape of the reverse sweeps (``_tape_1`` where the user binds ``_tape``)
)
PREFIX = "_sg_"  # a name of sourcegrad's own that the user's code means otherwise: ``_sg_np``


def placeholder(name):
    """A name in a template's text that no user's name can be: ``__sg_x__``."""
    return f"_{PREFIX}{name}__"


class Naming:
    def __init__(self, reserved=()):
        self.taken = set(reserved)
        self._adjoints = {}
        self._counter = 0
        self.temps = set()  # every temporary handed out (never a user's name)
        self.snapshots = {}  # temporary -> the user's name it holds the old object of (for errors)
        # the locals holding what an object's attribute holds, where the function writes it
        # (``normalize/objects.py``): writes into them are the object's own (``aliasing.py``)
        self.shadows = set()

    def reserve(self, *names):
        self.taken.update(names)

    def unique(self, base):
        name = base
        k = 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name

    def temp(self, hint="t"):
        while True:
            name = f"_{hint}{self._counter}"
            self._counter += 1
            if name not in self.taken:
                self.taken.add(name)
                self.temps.add(name)
                return name

    def snapshot(self):
        return (set(self.taken), dict(self._adjoints), self._counter, set(self.temps))

    def restore(self, snap):
        taken, adjoints, counter, temps = snap
        self.taken, self._adjoints, self._counter, self.temps = (
            set(taken),
            dict(adjoints),
            counter,
            set(temps),
        )

    def adjoint(self, name):
        """The adjoint variable of a primal variable: ``x`` -> ``x_bar`` (``_t3`` -> ``_t3_bar``)."""
        adj = self._adjoints.get(name)
        if adj is None:
            adj = self._adjoints[name] = self.unique(f"{name}_bar")
        return adj

    def tangent(self, name):
        """The tangent variable of a primal variable (forward mode): ``x`` -> ``x_dot``."""
        tangents = self.__dict__.setdefault("_tangents", {})
        t = tangents.get(name)
        if t is None:
            t = tangents[name] = self.unique(f"{name}_dot")
        return t

    def primal_of(self, adjoint):
        for p, a in self._adjoints.items():
            if a == adjoint:
                return p
        return None

    def saved(self, name):
        """A variable that keeps an overwritten value of ``name`` outside loops."""
        return self.unique(f"{name}_saved")
