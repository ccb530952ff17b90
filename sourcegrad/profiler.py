"""A per-statement profiler for generated code, in the spirit of ``torch.autograd.profiler``.

    with sourcegrad.profile() as prof:
        df(x)
    print(prof)                       # a table sorted by self time

or ``sourcegrad.profile(df)(x)``, which runs ``df`` once under the profiler and returns the
profile. Only code that sourcegrad generated is timed, line by line (a line's time includes the
numpy and runtime calls it makes); nothing is instrumented and nothing costs anything when no
profile is running.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import time
from dataclasses import dataclass


@dataclass
class LineStats:
    filename: str
    line: int
    calls: int = 0
    total_ns: int = 0


class Profile:
    """Per-line timings of generated code; a context manager and, given a gradient, a callable."""

    def __init__(self, fn=None):
        self.fn = fn
        self.stats = {}
        self._compiled = {}  # the generated code profiled, kept for the report (the registry is weak)
        self._frames = {}
        self._previous = None

    # ---- collection ------------------------------------------------------------------------
    def __enter__(self):
        self._previous = sys.gettrace()
        sys.settrace(self._global_trace)
        threading.settrace(self._global_trace)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)
        threading.settrace(self._previous)
        return False

    def __call__(self, *args, **kwargs):
        if self.fn is None:
            raise TypeError(
                "profile() without a function is a context manager: use `with sourcegrad.profile() as p:`"
            )
        with self:
            self.fn(*args, **kwargs)
        return self

    def _global_trace(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if event == "call" and filename.startswith("<sourcegrad:"):
            if filename not in self._compiled:
                from .transforms.emit import REGISTRY

                self._compiled[filename] = REGISTRY.get(filename)
            self._frames[id(frame)] = (None, 0)
            return self._line_trace
        return None

    def _line_trace(self, frame, event, arg):
        now = time.perf_counter_ns()
        key = id(frame)
        line, start = self._frames.get(key, (None, 0))
        if line is not None:
            st = self._stat(frame.f_code.co_filename, line)
            st.total_ns += now - start
        if event == "line":
            st = self._stat(frame.f_code.co_filename, frame.f_lineno)
            st.calls += 1
            self._frames[key] = (frame.f_lineno, time.perf_counter_ns())
        elif event == "return":
            self._frames.pop(key, None)
        return self._line_trace

    def _stat(self, filename, line):
        k = (filename, line)
        st = self.stats.get(k)
        if st is None:
            st = self.stats[k] = LineStats(filename, line)
        return st

    # ---- report --------------------------------------------------------------------------------
    def rows(self):
        """(generated statement, user line, calls, total seconds, mean seconds), slowest first."""
        out = []
        for st in sorted(self.stats.values(), key=lambda s: -s.total_ns):
            if not st.calls:
                continue
            compiled = self._compiled.get(st.filename)
            lines = compiled.source.splitlines() if compiled else []
            first = compiled.first_line if compiled else 0
            text = (
                lines[st.line - first]
                if 0 <= st.line - first < len(lines)
                else linecache.getline(st.filename, st.line)
            )
            text = text.strip().split("  # ")[0]
            pos = compiled.user_line(st.line) if compiled else None
            where = f"{os.path.basename(pos.filename)}:{pos.line}" if pos else "-"
            total = st.total_ns / 1e9
            out.append((text, where, st.calls, total, total / st.calls))
        return out

    def table(self, limit=25):
        rows = self.rows()
        total = sum(r[3] for r in rows) or 1.0
        width = min(60, max([len("statement")] + [len(r[0]) for r in rows[:limit]]))
        head = f"{'statement':<{width}}  {'user line':<16} {'calls':>7} {'self time':>11} {'mean':>11} {'%':>6}"
        lines = [head, "-" * len(head)]
        for text, where, calls, tot, mean in rows[:limit]:
            text = text if len(text) <= width else text[: width - 3] + "..."
            lines.append(
                f"{text:<{width}}  {where:<16} {calls:>7} {_fmt(tot):>11} {_fmt(mean):>11} {100 * tot / total:>5.1f}%"
            )
        lines.append(f"self time total: {_fmt(total)}")
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def _fmt(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def profile(fn=None):
    """Profile generated code line by line: ``with profile() as p: ...`` or ``profile(df)(*args)``."""
    return Profile(fn)
