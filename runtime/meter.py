"""What the forward keeps for the backward: the tape of a metered call, and the snapshots of a
checkpointed ``while`` loop (a ``for`` loop's schedule: ``revolve.py``).

``sourcegrad.memory`` compiles a function's gradient with every save of the forward numbered
(``transforms/reverse.py``, ``meter=True``): a value saved on the tape is pushed as
``_tape.push(value, site)`` and a value kept in a variable as ``name = _tape.keep(value, site)``.
The tape records, per site, how many values it kept and their bytes, and the peak of all it held
at once. Imports numpy only.
"""

from __future__ import annotations

import contextvars
import math
import sys

__all__ = ["metered_tape", "snapshots"]

_REPORT = contextvars.ContextVar("sourcegrad_memory_report", default=None)


def nbytes(value):
    """The bytes a kept value holds: an array's buffer (a view of another's counts in full, as the
    backward keeps it alive); a tuple or list (a loop's snapshot), its own size and its entries';
    else Python's size of the object (a shape, a float)."""
    n = getattr(value, "nbytes", None)
    if n is not None:
        return int(n)
    if type(value) in (tuple, list):
        return sys.getsizeof(value) + sum(nbytes(v) for v in value)
    return sys.getsizeof(value)


class Record:
    """What one metered call kept: per site ``[values, bytes]``, and the peak held at once."""

    def __init__(self):
        self.sites = {}
        self.held = 0
        self.peak = 0

    def kept(self, site, value):
        n = nbytes(value)
        entry = self.sites.setdefault(site, [0, 0])
        entry[0] += 1
        entry[1] += n
        self.held += n
        self.peak = max(self.peak, self.held)

    def released(self, value):
        self.held -= nbytes(value)


class MeteredTape(list):
    """A tape that records what each save site of the forward keeps (``Record``)."""

    def __init__(self, record):
        super().__init__()
        self.record = record

    def push(self, value, site):
        self.append(value)
        self.record.kept(site, value)

    def keep(self, value, site):
        self.record.kept(site, value)
        return value

    def release(self, value):
        """A value kept with ``keep`` is let go of (a checkpointed loop's snapshot)."""
        self.record.released(value)

    def pop(self, *index):
        value = super().pop(*index)
        self.record.released(value)
        return value


def metered_tape():
    """The tape of a metered call: records into the report being made (``sourcegrad.memory``)."""
    record = _REPORT.get()
    return MeteredTape(record if record is not None else Record())


def current():
    """The record of the metered call running now, or None."""
    return _REPORT.get()


def recording(record):
    """Make ``metered_tape`` record into ``record`` (returns the token to reset it with)."""
    return _REPORT.set(record)


def stop_recording(token):
    _REPORT.reset(token)


class Snapshots(list):
    """The snapshots of a checkpointed ``while`` loop, whose length is known only at its end:
    one every ``period`` iterations, at most ``limit`` of them (when there would be more, every
    other one goes and the period doubles). ``limit=None``: about twice the square root of the
    iterations so far, so a loop of any length keeps about ``sqrt`` states and pieces of about
    ``sqrt`` iterations."""

    def __init__(self, limit=None):
        super().__init__()
        self.limit = limit
        self.period = 1

    def due(self, n):
        """Is iteration ``n`` (from 0) the start of a piece?"""
        return n % self.period == 0

    def add(self, state):
        self.append(state)
        limit = self.limit or max(8, 2 * math.isqrt(len(self) * self.period))
        if len(self) > limit:
            del self[1::2]
            self.period *= 2

    def pieces(self, trips):
        """``(iterations, snapshot)`` of each piece, first to last, for a loop that ran ``trips``
        times."""
        p = self.period
        return [(range(k * p, min((k + 1) * p, trips)), s) for k, s in enumerate(self)]


def snapshots(limit=None):
    return Snapshots(limit)
