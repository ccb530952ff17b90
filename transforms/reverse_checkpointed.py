"""Reverse mode: checkpointed loops, which keep snapshots of their state instead of a tape.

Expects: a loop ``checkpoints.plan`` chose, whose snapshot ``reverse_saves`` planned
(``Plan.state``). Guarantees, in the forward sweep (``CheckpointedForward``): the loop runs
without saving anything, keeping its state where the binomial schedule asks (a ``for`` loop,
``runtime/revolve.py``) or every so many iterations (a ``while`` loop, whose length is known only
at its end, ``runtime.meter.Snapshots``); its body is also built with its saves, at depth 0, for
the backward (``Checkpointed``). In the backward sweep (``CheckpointedBackward``): each
iteration (or piece of iterations), last first, from the last snapshot before it, run again with
its saves and then reversed at once: memory for the snapshots and one piece's saves, not every
state. A snapshot restored is copied again where the iterations change it in place, so it stays as
it was for the next time.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import code, ir
from .code import Ref, fmt, lit, of


@dataclass
class Checkpointed:
    """What the forward sweep built of a checkpointed loop, for the backward sweep."""

    schedule: str  # the revolve schedule (a for loop) or the snapshots (a while loop)
    piece: str  # the variable of a run of iterations
    snapshot: object = None  # Code: what a snapshot keeps
    plain: list = None  # the body without saves (code.Stmt at depth 0)
    taped: list = None  # the body with its saves (code.Stmt at depth 0)


class CheckpointedForward:
    """The forward sweep's part (mixed into ``reverse_forward.ForwardSweep``)."""

    def _checkpointed(self, s):
        """Does loop ``s`` keep snapshots instead of a tape? A loop ``checkpoints.plan`` chose,
        with a backward that reads values its iterations save."""
        plan = self.plan
        if id(s) not in plan.state or not plan.has_backward(s) or self._plain:
            return False
        return any(
            plan.saves.get(id(t)) == "tape"
            or (isinstance(t, (ir.If, ir.For, ir.While)) and plan.has_backward(t))
            for t in ir.walk(s.body)
        )

    def _snapshot(self, s):
        """The state a snapshot of loop ``s`` keeps: arrays written in place and lists appended to
        are copied, but of a list the loop only appends to, its length (running the iterations
        again appends the same values after cutting it back: no copy of a list as long as the
        loop, per snapshot). In a metered compile, counted at one site wherever it is taken."""
        names = self.plan.state[id(s)]
        if not names:
            value = lit("()")
        else:
            lengths = self.plan.by_length[id(s)]
            items = [
                fmt("{f}({n})", f=self.rt("len"), n=n)
                if n in lengths
                else copied(self.fn, n, self.rt) or code.name(n)
                for n in names
            ]
            value = of("(", code.join(items), ",)" if len(items) == 1 else ")")
        return self.tape.keep(value, s.pos) if self.tape.meter else value

    def _revolve(self, s, depth, in_loop, out):
        """A ``for`` loop run without saving anything, keeping its state where the binomial
        schedule asks. In a loop, the schedule goes on the tape."""
        r = self.naming.temp("r")
        schedule = self.counts[id(s)] = self.naming.temp("revolve")
        loop = self.loops[id(s)] = Checkpointed(schedule, self.naming.temp("piece"))
        slots = self.checkpoints[id(s)]
        args = [code.name(r), lit("None" if slots is True else str(int(slots)))]
        if self.tape.meter:  # snapshots let go of in the backward
            args.append(fmt("{t}.release", t=self.tape.name))
        out.append(code.user(depth, f"{r} = {s.range_text}", s.pos, ir.reads(s), (r,)))
        made = of(Ref(self.rt("revolve")), "(", code.join(args), ")")
        out.append(code.assign(depth, schedule, made, s.pos))
        head = fmt("for {p} in {v}.forward():", p=loop.piece, v=schedule)
        out.append(code.header(depth, head, s.pos, (loop.piece,)))
        loop.snapshot = self._snapshot(s)
        out.append(code.line(depth + 1, fmt("{v}.keep({s})", v=schedule, s=loop.snapshot)))
        head = fmt("for {t} in {p}:", t=s.target, p=loop.piece)
        out.append(code.header(depth + 1, head, s.pos, (s.target,)))
        self._bodies(s, loop, depth + 2, out)
        if in_loop:
            out.append(self._push(depth, code.name(schedule), s.pos, schedule))

    def _periodic(self, s, depth, out):
        """A ``while`` loop's snapshots, one every so many iterations; the iterations run without
        saving anything."""
        n = self.counts[id(s)] = self.naming.temp("n")
        snaps, piece = self.naming.temp("snapshots"), self.naming.temp("piece")
        loop = self.loops[id(s)] = Checkpointed(snaps, piece)
        slots = self.checkpoints[id(s)]
        limit = lit("None") if slots is True else lit(str(int(slots)))
        out.append(code.assign(depth, n, lit("0"), s.pos))
        out.append(
            code.assign(depth, snaps, fmt("{f}({k})", f=self.rt("snapshots"), k=limit), s.pos)
        )
        self._persist(s, depth, out)
        out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
        out.append(code.header(depth + 1, fmt("if {s}.due({n}):", s=snaps, n=n)))
        loop.snapshot = self._snapshot(s)
        out.append(code.line(depth + 2, fmt("{s}.add({v})", s=snaps, v=loop.snapshot)))
        out.append(code.augment(depth + 1, n, lit("1")))
        self._bodies(s, loop, depth + 1, out)

    def _bodies(self, s, loop, depth, out):
        """Loop ``s``'s body twice: plain, at ``depth`` in ``out`` (the first forward, which saves
        nothing), and with its saves; both kept for the backward (at depth 0)."""
        self._plain = True
        plain = []
        try:
            self._block_or_pass(s.body, 0, True, plain)
        finally:
            self._plain = False
        out.extend(st.at(st.depth + depth) for st in plain)
        if isinstance(s, ir.While):
            self._persist(s, depth, out, at_end=True)
        taped = []
        self._replaying = True  # run again in the backward, after the forward: nothing to persist
        try:
            self._block_or_pass(s.body, 0, True, taped)
        finally:
            self._replaying = False
        loop.plain, loop.taped = plain, taped


class CheckpointedBackward:
    """The backward sweep's part (mixed into ``reverse_backward.BackwardSweep``)."""

    def _bwd_revolve(self, s, depth, body, after, out):
        """Each iteration, last first: the last snapshot before it back, the iterations from
        there to it again (keeping the snapshots the schedule asks for), then the iteration
        itself with its saves, and its backward ``body`` (made for ``depth + 1``) at once."""
        loop = self.swept.loops[id(s)]
        schedule, piece = loop.schedule, loop.piece
        i, snap, pieces, keep = (self.naming.temp(k) for k in ("i", "snapshot", "pieces", "keep"))
        head = fmt("for {i}, {s}, {ps} in {v}.turns():", i=i, s=snap, ps=pieces, v=schedule)
        out.append(code.header(depth, head, s.pos, (i, snap, pieces)))
        self._restore_snapshot(s, snap, depth + 1, out)
        head = fmt("for {p}, {k} in {ps}:", p=piece, k=keep, ps=pieces)
        out.append(code.header(depth + 1, head, None, (piece, keep)))
        out.append(code.header(depth + 2, fmt("if {k}:", k=keep)))
        out.append(code.line(depth + 3, fmt("{v}.keep({s})", v=schedule, s=loop.snapshot)))
        head = fmt("for {t} in {p}:", t=s.target, p=piece)
        out.append(code.header(depth + 2, head, None, (s.target,)))
        out.extend(st.at(st.depth + depth + 3) for st in loop.plain)
        out.append(code.assign(depth + 1, s.target, code.name(i)))
        out.extend(st.at(st.depth + depth + 1) for st in loop.taped)
        out.extend(body)
        out += [self._zero(depth + 1, n) for n in after]

    def _restore_snapshot(self, s, snap, depth, out):
        """The state of ``snap`` back; what the iterations change in place is copied again, so
        that the snapshot stays as it was for the next time it is restored."""
        state = self.plan.state[id(s)]
        lengths = self.plan.by_length[id(s)]
        if state:
            bound = [lengths.get(n, n) for n in state]
            targets = code.join([code.name(n) for n in bound])
            back = of(targets, "," if len(state) == 1 else "", " = ", Ref(snap))
            out.append(code.line(depth, back, writes=bound, reads=(snap,)))
        for n in state:
            copy = copied(self.fn, n, self.rt)
            if n in lengths:  # the list cut back to its length then
                cut = fmt("del {l}[{n}:]", l=n, n=lengths[n])
                out.append(code.line(depth, cut, writes=(n,), reads=(n, lengths[n])))
            elif copy is not None:
                out.append(code.assign(depth, n, copy))

    def _bwd_periodic(self, s, depth, body, after, out):
        """A ``while`` loop's pieces, last first: its snapshot back, its iterations again with
        their saves, then their backward ``body`` (one iteration's, made for ``depth + 1``)."""
        loop = self.swept.loops[id(s)]
        snap = self.naming.temp("snapshot")
        head = fmt(
            "for {p}, {s} in {r}({ss}.pieces({n})):",
            p=loop.piece,
            s=snap,
            r=self.rt("reversed"),
            ss=loop.schedule,
            n=self.swept.counts[id(s)],
        )
        out.append(code.header(depth, head, s.pos, (loop.piece, snap)))
        self._restore_snapshot(s, snap, depth + 1, out)
        out.append(code.header(depth + 1, fmt("for _ in {p}:", p=loop.piece), None, ("_",)))
        out.extend(st.at(st.depth + depth + 2) for st in loop.taped)
        backwards = fmt("for _ in {f}({p}):", f=self.rt("reversed"), p=loop.piece)
        out.append(code.header(depth + 1, backwards, None, ("_",)))
        out.extend(st.at(st.depth + 1) for st in body)
        out += [self._zero(depth + 2, n) for n in after]
        if not body and not after:
            out.append(code.user(depth + 2, "pass"))


def copied(fn, name, rt):
    """A copy of ``name``'s value if ``fn`` changes it in place (an array written into, a list
    whose entries are replaced, or updated in place with ``op=``, a list appended to), else
    None."""
    writes = [t for t in ir.walk(fn.body) if isinstance(t, ir.SetItem) and t.target == name]
    if any(t.augmented for t in writes):  # (a list's entry, an array, is updated in place too)
        return fmt("{f}({n})", f=rt("copy_arrays"), n=name)
    if writes:
        return fmt("{f}({n})", f=rt("copy_entries"), n=name)
    for t in ir.walk(fn.body):
        if isinstance(t, ir.Append) and t.target == name:
            return fmt("{f}({n})", f=rt("list"), n=name)
    return None
