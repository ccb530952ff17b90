"""Reverse mode: the forward sweep, the user's code plus the saves the backward needs.

Expects: an ``ir.Function``, its ``Analysis``, a ``reverse_saves.Plan`` and a ``reverse_tape.Tape``.
Guarantees: a ``Swept`` record: the forward's statements (``code.Stmt``), one operation per
line as the user wrote it, with the saves of the plan; a branch's condition and a loop's range
or trip count kept in a variable when the backward has work there (on the tape inside a loop),
named in ``Swept.conds`` and ``Swept.counts``; a checkpointed loop's pieces in ``Swept.loops``
(``reverse_checkpointed``). A temporary the backward reads at most the shape of is let go of
after its last reader (``_releases``). With ``lazy`` (dask), the values the rest of the
computation reads are persisted before each data-dependent test (``runtime/lazy.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import code, ir
from .code import Ref, fmt, lit, of
from .reverse_checkpointed import CheckpointedForward
from .reverse_tape import jit_helper, save_key

# A temporary known to hold at most this many numbers is kept to the end rather than released for
# its shape: its memory does not matter, and ``shape_of`` costs more than keeping it.
SMALL_ARRAY = 64


@dataclass
class Swept:
    """What the forward sweep leaves for the backward sweep."""

    body: list  # code.Stmt
    conds: dict  # id(If) -> its condition's variable
    counts: dict  # id(loop) -> its range, trip count or schedule variable
    loops: dict  # id(checkpointed loop) -> reverse_checkpointed.Checkpointed


def sweep(fn, analysis, naming, bind, plan, tape, checkpoints, lazy):
    """The forward sweep of ``fn`` (a ``Swept``)."""
    return ForwardSweep(fn, analysis, naming, bind, plan, tape, checkpoints, lazy).run()


class ForwardSweep(CheckpointedForward):
    def __init__(self, fn, analysis, naming, bind, plan, tape, checkpoints, lazy):
        self.fn = fn
        self.an = analysis
        self.naming = naming
        self.rt = bind  # the name the generated code calls the runtime's ``name`` by
        self.plan = plan
        self.tape = tape
        self.checkpoints = checkpoints  # id(loop) -> True or its number of snapshots
        self.lazy = lazy and not tape.meter
        self.uses_tape = plan.tape_saves
        self.conds = {}  # id(If) -> condition variable
        self.counts = {}  # id(loop) -> range/count variable
        self.loops = {}  # id(checkpointed loop) -> Checkpointed
        # generated names a persist reads where they may be unbound: None first
        self.lazy_init = set()
        self._plain = False  # emitting a checkpointed loop's first forward: no saves, no tape
        self._replaying = False  # emitting a checkpointed loop's body for the backward: no persists
        self.release = {}
        self.around = []  # the loops around the statement being emitted, innermost last
        # the numba variant's tapes preallocated to a loop's trips (``_preallocated``) copy what
        # they save: only where no array is written into in place
        self.arrays = (
            tape.typed
            and not tape.meter
            and not self.lazy
            and not checkpoints
            and not any(_writes_in_place(t) for t in ir.walk(fn.body))
        )

    def run(self):
        plan = self.plan
        out = [code.assign(0, n, lit("None")) for n in sorted(plan.needs_init)]
        self.release = self._releases()
        self._block(self.fn.body, 0, False, out)
        tape = self.tape
        if tape.meter:
            out.insert(0, code.assign(0, tape.name, fmt("{f}()", f=self.rt("metered_tape"))))
        elif self.uses_tape and tape.typed:
            out[:0] = [code.assign(0, t, lit("[]")) for t in tape.lists.values()]
        elif self.uses_tape:  # known only now: branch flags and trip counts are taped as emitted
            lazy = self.lazy and plan.tape_saves
            made = fmt("{f}()", f=self.rt("lazy_tape")) if lazy else lit("[]")
            out.insert(0, code.assign(0, tape.name, made))
        fresh = sorted(self.lazy_init - plan.needs_init)  # (known only now, as the tape)
        out[0:0] = [code.assign(0, n, lit("None")) for n in fresh]
        return Swept(out, self.conds, self.counts, self.loops)

    # ---- lazy arrays: persist before a data-dependent test --------------------------------------
    def _persist(self, s, depth, out, at_end=False):
        """Lazy mode, before test ``s`` computes (``at_end``: a while loop's test again, at the end
        of its body): ``a, b = persist_live(_tape, a, b)`` for the values surely bound there that
        the rest of the forward or the backward reads, the arguments excepted (``runtime/lazy.py``).
        Numpy's code has none of this: it is compiled only for lazy arguments."""
        if not self.lazy or self._replaying:
            return
        names = sorted(self._read_after(s, at_end))
        tape = self.tape.name if self.plan.tape_saves else None
        if not names and tape is None:
            return
        self.uses_tape |= tape is not None
        targets = code.join([code.name(n) for n in names])
        call = fmt(
            "{f}({t})",
            f=self.rt("persist_live"),
            t=code.join([code.name(tape) if tape else lit("None")] + [code.name(n) for n in names]),
        )
        if names:
            st = of(targets, "," if len(names) == 1 else "", " = ", call)
        else:
            st = call
        out.append(
            code.line(depth, of(st, "  # computed once, before the test"), s.pos, writes=names)
        )

    def _read_after(self, s, at_end):
        """The names bound at test ``s`` that a later statement, a loop around ``s`` or the
        backward reads, but the function's parameters: those surely bound, and the generated
        ones (temporaries, saved values) that may be, which are bound to None at the start."""
        plan = self.plan
        surely, maybe = plan.bound[id(s)][-1 if at_end else 0]
        maybe = {n for n in maybe - surely if n in self.naming.temps or n in plan.saved_names}
        i, loops = plan.order[id(s)]
        if at_end:
            loops = loops | {id(s)}
        later = set(ir.reads(s)) | plan.reads | plan.saved_names
        for t in ir.walk(self.fn.body):
            j, around = plan.order[id(t)]
            if j > i or loops & around:
                later |= ir.reads(t)
        self.lazy_init |= maybe & later
        return ((surely | maybe) & later) - set(self.fn.params)

    # ---- saves and releases ----------------------------------------------------------------------
    def _push(self, depth, value, about, key, like=None):
        """A branch flag or a trip count onto the tape; ``like``: a value of its type (Code), where
        an array preallocated to the loop's trips may keep it."""
        self.uses_tape = True
        loop = self._preallocated(like)
        if loop is not None:
            self.tape.preallocate(key, loop, like)
        return self.tape.push(depth, value, about=about, key=key)

    def _preallocated(self, like, name=None):
        """The loop whose trips an array keeps a save in (the innermost, a ``for`` loop with a
        backward), or None. ``name``: the saved variable, whose shape must be known and whose
        value before the loop sets the array's type."""
        if not self.arrays or like is None or not self.around:
            return None
        loop = self.around[-1]
        if not isinstance(loop, ir.For) or id(loop) not in self.counts or id(loop) in self.loops:
            return None
        if name is None:
            return loop
        shape = self.an.shapes.of(name) if self.an.shapes is not None else None
        if shape is None or not all(type(k) is int for k in shape):
            return None
        if name in self.plan.needs_init or name not in self.plan.bound[id(loop)][0][0]:
            return None  # (bound to None first, or not bound before the loop)
        return loop

    def _save(self, s, value, depth, out):
        where = None if self._plain else self.plan.saves.get(id(s))
        if where and id(s) in self.plan.shape_saves:
            # keep no array alive for its shape
            value = fmt("{f}({v})", f=self.rt("shape_of"), v=value)
        if where == "tape":
            if isinstance(s, ir.Assign) and id(s) not in self.plan.shape_saves:
                loop = self._preallocated(value, s.target)
                if loop is not None:
                    self.tape.preallocate(save_key(s), loop, value, s)
            out.append(self.tape.push(depth, value, s.pos, key=self.tape.key(s)))
        elif where and self.tape.meter:
            out.append(code.assign(depth, where, self.tape.keep(value, s.pos), s.pos))
        elif where:
            out.append(code.assign(depth, where, value, s.pos))

    def _releases(self):
        """id(top-level statement) -> differentiated temporaries to let go of after it: each is
        defined once, at the top level, no later statement reads it, and the backward reads at
        most its shape (then ``shape_of`` keeps shape and dtype). A hand-written forward drops
        such a temporary at once, and the memory it frees is reused by the next array."""
        body, plan = self.fn.body, self.plan
        defs = {}
        for s in ir.walk(body):
            if isinstance(s, (ir.Assign, ir.For)):
                defs.setdefault(s.target, []).append(s)
        top = {id(s): i for i, s in enumerate(body)}
        last = {}
        for i, s in enumerate(body):
            for n in _reads_of(s):
                last[n] = i
        out = {}
        candidates = (self.naming.temps & self.an.active) - plan.reads - set(self.fn.params)
        for s in ir.walk(body):
            if id(s) in plan.state:  # a checkpointed loop: the backward runs it again
                candidates -= _reads_of(s)  # (a list it appends to included)
        for n in sorted(candidates - plan.restored):
            if n in plan.shapes and self._small(n):
                continue  # keeping a few numbers costs less than shape_of's record of them
            d = defs.get(n, ())
            if len(d) != 1 or id(d[0]) not in top or not isinstance(d[0], ir.Assign):
                continue
            if isinstance(body[-1], ir.Return) and n in ir.atom_names(body[-1].value):
                continue  # the result
            after = max(last.get(n, -1), top[id(d[0])])
            out.setdefault(id(body[after]), []).append(n)
        return out

    def _small(self, name):
        """Is ``name`` known (from the argument shapes) to hold at most ``SMALL_ARRAY`` numbers?"""
        shape = self.an.shapes.of(name) if self.an.shapes is not None else None
        return (
            shape is not None
            and all(type(k) is int for k in shape)
            and math.prod(shape) <= SMALL_ARRAY
        )

    # ---- statements ------------------------------------------------------------------------------
    def _block(self, stmts, depth, in_loop, out):
        for s in stmts:
            self._stmt(s, depth, in_loop, out)
            for n in self.release.get(id(s), ()):  # top-level statements only
                if n in self.plan.shapes:
                    st = code.assign(depth, n, fmt("{f}({n})", f=self.rt("shape_of"), n=n))
                    out.append(
                        code.line(
                            depth,
                            of(st.code, "  # the backward needs only its shape"),
                            writes=st.writes,
                            reads=st.reads,
                        )
                    )
                else:
                    out.append(code.delete(depth, [n]))

    def _block_or_pass(self, stmts, depth, in_loop, out):
        n = len(out)
        self._block(stmts, depth, in_loop, out)
        if len(out) == n:
            out.append(code.user(depth, "pass"))

    def _stmt(self, s, depth, in_loop, out):
        if isinstance(s, ir.Assign):
            self._save(s, code.name(s.target), depth, out)
            # (info: what fusion.py reads of the operation)
            text = f"{s.target} = {_assigned(s, self.rt)}"
            out.append(code.user(depth, text, s.pos, ir.reads(s), (s.target,), info={"assign": s}))
        elif isinstance(s, ir.SetItem):
            entry = of(Ref(s.target), "[", code.index_subscript(s.index), "]")
            if id(s) in self.plan.saves:
                self._save(s, fmt("{c}({e})", c=self.rt("copy_value"), e=entry), depth, out)
            out.append(code.line(depth, of(entry, " = ", code.atom(s.value)), s.pos))
        elif isinstance(s, ir.Append):
            out.append(
                code.line(depth, fmt("{t}.append({v})", t=s.target, v=code.atom(s.value)), s.pos)
            )
        elif isinstance(s, ir.Effect):
            out.append(code.user(depth, s.text, s.pos, ir.reads(s)))
        elif isinstance(s, ir.LoopExit):
            self._persist(s, depth, out)
            out.append(code.user(depth, f"if {s.test}:", s.pos, ir.reads(s), opens=True))
            out.append(code.user(depth + 1, "break"))
        elif isinstance(s, ir.If):
            self._if(s, depth, in_loop, out)
        elif isinstance(s, ir.For):
            self._for(s, depth, in_loop, out)
        elif isinstance(s, ir.While):
            self._while(s, depth, in_loop, out)

    def _if(self, s, depth, in_loop, out):
        self._persist(s, depth, out)
        if self._plain or not self.plan.has_backward(s):
            out.append(code.user(depth, f"if {s.test}:", s.pos, ir.reads(s), opens=True))
        else:
            c = self.conds[id(s)] = self.naming.temp("c")
            # a Python bool: the backward tests it again, and must not sync with a device again
            out.append(
                code.user(depth, f"{c} = {self.rt('bool')}({s.test})", s.pos, ir.reads(s), (c,))
            )
            out.append(code.header(depth, fmt("if {c}:", c=c), s.pos))
        self._block_or_pass(s.body, depth + 1, in_loop, out)
        if s.orelse:
            out.append(code.header(depth, lit("else:")))
            self._block(s.orelse, depth + 1, in_loop, out)
        if in_loop and id(s) in self.conds and not self._plain:
            c = self.conds[id(s)]
            out.append(self._push(depth, code.name(c), s.pos, c, lit("False")))

    def _for(self, s, depth, in_loop, out):
        self._save(s, code.name(s.target), depth, out)
        if self._checkpointed(s):
            return self._revolve(s, depth, in_loop, out)
        if self._plain or not self.plan.has_backward(s):
            head = f"for {s.target} in {s.range_text}:"
            out.append(code.user(depth, head, s.pos, ir.reads(s), (s.target,), True))
            self._block_or_pass(s.body, depth + 1, True, out)
            return
        r = self.counts[id(s)] = self.naming.temp("r")
        out.append(code.user(depth, f"{r} = {s.range_text}", s.pos, ir.reads(s), (r,)))
        count = _exits_early(s) and self.naming.temp("n")
        if count:
            out.append(code.assign(depth, count, lit("0"), s.pos))
        head = len(out)
        out.append(code.header(depth, fmt("for {t} in {r}:", t=s.target, r=r), s.pos, (s.target,)))
        if count:
            out.append(code.augment(depth + 1, count, lit("1")))
        self.around.append(s)
        self._block_or_pass(s.body, depth + 1, True, out)
        self.around.pop()
        arrays = self._trip_arrays(s, depth, r, head, out)
        if count:  # the iterations that ran, for the backward to retrace
            out.append(code.assign(depth, r, self._head(r, count)))
        if in_loop:
            out.append(self._push(depth, code.name(r), s.pos, r))
            # a loop run again on each trip of one around it: its arrays go on that loop's tape
            out += [self._push(depth, code.name(a), s.pos, a) for a in arrays]

    def _head(self, r, count):
        """``r[:count]`` (numba slices no range: in its variant, ``range_head``)."""
        if self.tape.typed:
            return fmt(
                "{f}({r}, {n})", f=self.rt("range_head", jit_helper("range_head")), r=r, n=count
            )
        return fmt("{r}[:{n}]", r=r, n=count)

    def _trip_arrays(self, s, depth, r, head, out):
        """Loop ``s``'s preallocated tapes: allocated before its header (at ``head`` in
        ``out``), one row per trip of its range ``r``; the trip index counted at the end of each
        trip (a trip that breaks saves nothing after it). Returns the arrays' names."""
        made = self.tape.allocations.get(id(s), ())
        if not made:
            return []
        k = self.tape.counters[id(s)]
        trips = fmt("{f}({r})", f=self.rt("len"), r=r)
        made_like = self.rt("tape_array", jit_helper("tape_array"))
        before = [code.assign(depth, k, lit("0"))]
        for array, like in made:
            before.append(
                code.assign(depth, array, fmt("{f}({n}, {v})", f=made_like, n=trips, v=like))
            )
        out[head:head] = before
        out.append(code.augment(depth + 1, k, lit("1")))
        return [array for array, _ in made]

    def _while(self, s, depth, in_loop, out):
        if self._checkpointed(s):
            return self._periodic(s, depth, out)
        self._persist(s, depth, out)
        if self._plain or not self.plan.has_backward(s):
            out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
            self._block_or_pass(s.body, depth + 1, True, out)
            self._persist(s, depth + 1, out, at_end=True)
            return
        n = self.counts[id(s)] = self.naming.temp("n")
        out.append(code.assign(depth, n, lit("0"), s.pos))
        out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
        out.append(code.augment(depth + 1, n, lit("1")))
        self.around.append(s)
        self._block(s.body, depth + 1, True, out)
        self.around.pop()
        self._persist(s, depth + 1, out, at_end=True)
        if in_loop:
            out.append(self._push(depth, code.name(n), s.pos, n, lit("0")))


def _assigned(s, rt):
    """The value assignment ``s`` gives its target: ``x op= v`` keeps an array ``x``'s shape and
    dtype, and raises where numpy's in-place update would (``runtime.updated``)."""
    if s.inplace:
        return f"{rt('updated')}({s.op.text}, {s.target})"
    return s.op.text


def _reads_of(stmt):
    """Every name ``stmt`` (with the statements inside it) may read."""
    if type(stmt) is ir.Assign:
        return ir.reads(stmt)
    return set().union(*[ir.reads(s) for s in ir.walk([stmt])])


def _writes_in_place(s):
    """Does ``s`` write into an array (``x[i] = v``, ``x += v`` in place)?"""
    return isinstance(s, ir.SetItem) or (isinstance(s, ir.Assign) and s.inplace)


def _exits_early(loop):
    return any(isinstance(t, ir.LoopExit) for t in loop.body)
