"""``sourcegrad.memory(g, *args)``: what the forward of a gradient keeps for its backward.

A reverse pass keeps the values its backward reads and the forward overwrites (inside a loop,
one per iteration). The report says, per line of the user's function, how many values were kept
and their bytes, with the generated code each save keeps, and the peak of all that was held at
once: the memory a gradient costs beyond the forward's own. It runs the call once, on a
compile of the same gradient whose saves are counted (``runtime/meter.py``); the gradient itself
is not changed.
"""

from __future__ import annotations

import linecache
import os

from .runtime.private import SITE as PRIVATE


class MemoryReport:
    """The saves of one call: ``rows()`` per site, ``lines()`` per user line, ``peak`` bytes."""

    def __init__(self, name, sites, record, value):
        self.name = name
        self.value = value  # what the metered call returned (the value and gradient)
        self.peak = record.peak
        self._sites = []
        for k, (pos, saved) in enumerate(sites):
            count, size = record.sites.get(k, (0, 0))
            self._sites.append((pos, saved, count, size))
        if PRIVATE in record.sites:  # a vjp's pullback: its copies of what the caller can change
            count, size = record.sites[PRIVATE]
            self._sites.append((None, "copies for the pullback (arguments, value)", count, size))

    @property
    def total(self):
        """Bytes of every value kept, over the whole call."""
        return sum(s[3] for s in self._sites)

    def rows(self):
        """(user line ``file:line``, the value saved, values kept, bytes), most bytes first."""
        out = [
            (_where(pos), saved, count, size) for pos, saved, count, size in self._sites if count
        ]
        return sorted(out, key=lambda r: (-r[3], r[0]))

    def lines(self):
        """(``file:line``, the user's source line, values kept, bytes), per line of the user's
        function that saves anything, most bytes first."""
        by_line = {}
        for pos, _, count, size in self._sites:
            if not count:
                continue
            key = (pos.filename, pos.line) if pos is not None else ("", 0)
            entry = by_line.setdefault(key, [0, 0])
            entry[0] += count
            entry[1] += size
        out = []
        for (filename, line), (count, size) in by_line.items():
            text = linecache.getline(filename, line).strip() if filename else ""
            out.append(
                (f"{os.path.basename(filename)}:{line}" if filename else "-", text, count, size)
            )
        return sorted(out, key=lambda r: (-r[3], r[0]))

    def table(self):
        rows = self.rows()
        width = min(50, max([len("kept value")] + [len(r[1]) for r in rows]))
        head = f"{'user line':<20} {'kept value':<{width}} {'values':>8} {'bytes':>12}"
        out = [f"what the forward of {self.name} keeps for its backward", head, "-" * len(head)]
        for where, saved, count, size in rows:
            saved = saved if len(saved) <= width else saved[: width - 3] + "..."
            out.append(f"{where:<20} {saved:<{width}} {count:>8} {_bytes(size):>12}")
        out.append(f"kept in all: {_bytes(self.total)}; peak held at once: {_bytes(self.peak)}")
        return "\n".join(out)

    __str__ = table

    def __repr__(self):
        return f"<sourcegrad.MemoryReport of {self.name}: {_bytes(self.total)} kept, peak {_bytes(self.peak)}>"


def memory(g, *args, **kwargs):
    """Run ``g(*args, **kwargs)`` once, with ``g`` made by ``grad``, ``value_and_grad`` or ``vjp``,
    and report what its forward kept for the backward (a ``MemoryReport``; ``print`` it)::

        report = sourcegrad.memory(sourcegrad.grad(loss), w, x)
        print(report)              # per save: the user's line, the value, how many, bytes
        report.lines()             # per line of the user's function
        report.peak                # the most held at once, in bytes
    """
    from .arguments import _all_positional
    from .compiled import _Compiled, signature_of
    from .runtime import meter
    from .transforms import compile_gradient

    if not isinstance(g, _Compiled):
        raise TypeError(
            f"sourcegrad.memory takes a gradient made by grad, value_and_grad or vjp, not {g!r}"
        )
    if g.bound is not None:
        args = (g.bound,) + args
    if g.fn.__code__.co_kwonlyargcount:
        args, kwargs = _all_positional(g.fn, args, kwargs)
    signature = signature_of(args) if g.specialize and not kwargs else None
    compiled = compile_gradient(
        g.fn,
        g.names,
        g.mode,
        g.check_finite,
        g.unroll,
        signature,
        g.has_aux,
        meter=True,
        checkpoint=g.checkpoint,
    )
    record = meter.Record()
    token = meter.recording(record)
    try:
        value = compiled.function(*args, **kwargs)  # (vjp: the value and a pullback that runs once)
    finally:
        meter.stop_recording(token)
    return MemoryReport(getattr(g.fn, "__qualname__", "f"), compiled.sites, record, value)


def _where(pos):
    return f"{os.path.basename(pos.filename)}:{pos.line}" if pos is not None else "-"


def _bytes(n):
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"
