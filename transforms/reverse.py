"""Reverse mode: the forward sweep and the backward sweep of a normalized function.

Expects: an ``ir.Function`` and an ``Analysis``. Guarantees: a ``Reversed`` record of two lists
of ``code.Stmt`` s. The forward is the user's code, one operation per line, plus saves of the
values that it overwrites and the backward reads. The backward visits the statements in reverse;
at each one every variable the backward reads holds the value it had at that point of the
forward (values are restored as the backward passes their definitions), so each statement is
replaced by its adjoint template. Every statement says what it reads and writes (``code.py``);
``optimize`` works from that.

Adjoint bookkeeping is static where it can be: each adjoint is known to be *zero* (never
written, or reset by a definition), *dense* (holds an array), or *maybe* (either; holds the
``ZERO`` sentinel at run time). The first contribution to a zero adjoint is an assignment, a
contribution read from a zero adjoint is dropped, and only *maybe* adjoints (after branches and
loops) cost a run-time test.

Every name of sourcegrad's own the code uses (``acc``, ``unbroadcast``, ``np`` in a template)
is asked of ``bind``, which picks a name that means that object in the generated code: the
user's text is never rewritten to make room.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from . import code, ir
from .code import Ref, fmt, lit, of
from .ir import Tup
from .optimize import read_in_place
from .templates import instantiate

# A temporary known to hold at most this many numbers is kept to the end rather than released for
# its shape: its memory does not matter, and ``shape_of`` costs more than keeping it.
SMALL_ARRAY = 64

ZERO, DENSE, MAYBE = "zero", "dense", "maybe"


@dataclass
class Reversed:
    """What the reverse pass makes of a function: the record ``optimize`` and ``emit`` take."""

    forward: list  # code.Stmt
    backward: list  # code.Stmt
    outputs: list  # (param, Code) of the gradient, in wrt order
    restored: set  # primal names the backward assigns to
    tape: str  # the tape's name
    result: object  # the returned atom
    seed: str = None  # the adjoint of the result: the backward's input
    mutates: bool = False  # does the function write into arrays (``a[i] = v``)?
    params: tuple = ()
    sites: list = field(default_factory=list)  # metered saves: (ir.Pos, the value's code)


def reverse(
    fn,
    analysis,
    naming,
    wrt,
    bind,
    check_finite=False,
    meter=False,
    checkpoints=None,
    lazy=False,
    seed_one=False,
    jit=False,
):
    """The forward and backward sweeps of ``fn`` for the parameters ``wrt`` (a ``Reversed``).
    ``meter``: number every save of the forward for ``sourcegrad.memory`` (``runtime/meter.py``);
    the sites, (user position, the value saved), are ``Reversed.sites``. ``checkpoints``: the
    loops that keep snapshots instead of a tape (``checkpoints.plan``: id(loop) -> True or a
    number of snapshots; ``Reverser._checkpointed``). ``seed_one``: the result's adjoint is the
    constant 1.0 (``value_and_grad``, not a pullback's argument), so a rule may take it as that
    constant (``Reverser._seeded``); ``Reversed.seed`` is then None where no statement reads the
    seed any more. ``lazy``: for lazy arrays (dask): before each data-dependent test, the values
    the rest of the computation reads are persisted (``Reverser._persist``, ``runtime/lazy.py``). ``jit``: the variant numba compiles: one
    tape per saved variable and kind (``Reverser._tape_of``), and known broadcast sums without
    ``keepdims`` (``_unbroadcast_known``)."""
    rev = Reverser(fn, analysis, naming, wrt, bind, check_finite, meter, checkpoints, lazy, jit)
    rev.plan()
    forward = rev.forward()
    result = fn.body[-1].value
    seed = (
        naming.adjoint(result.id)
        if isinstance(result, ir.Name) and result.id in analysis.active
        else None
    )
    rev.seed_one = seed_one
    backward, outputs = rev.backward(seed, result)
    if (
        seed_one
        and seed is not None
        and not any(seed in st.names() for st in backward)
        and not any(seed in e.names() for _, e in outputs)
    ):
        seed = None  # folded into its only reader
    if rev.recompute:  # the backward binds a checkpointed loop's state again (a pullback: nonlocal)
        bound = set(fn.params).union(*(st.writes for st in forward))
        for loop, taped in rev.recompute.items():
            rev.restored |= set(rev.state[loop]).union(*(st.writes for st in taped)) & bound
    mutates = any(isinstance(s, ir.SetItem) for s in ir.walk(fn.body))
    return Reversed(
        forward,
        backward,
        outputs,
        set(rev.restored),
        rev.tape,
        result,
        seed,
        mutates,
        tuple(fn.params),
        rev.sites,
    )


class Reverser:
    def __init__(
        self,
        fn,
        analysis,
        naming,
        wrt,
        bind,
        check_finite=False,
        meter=False,
        checkpoints=None,
        lazy=False,
        jit=False,
    ):
        self.fn = fn
        self.an = analysis
        self.naming = naming
        self.bind = bind
        self.wrt = list(wrt)
        self.reads = analysis.backward_reads() | set(self.wrt)
        self.shapes = analysis.shape_reads() - self.reads  # only shape and dtype are read
        self.shape_saves = set()  # ids of definitions that save shape_of(old value)
        self.saves = {}  # id(stmt) -> "tape" | saved variable name
        self.needs_init = set()
        self.conds = {}  # id(If) -> condition variable
        self.counts = {}  # id(loop) -> range/count variable
        self.restored = set()
        self.uses_tape = False
        self.tape = naming.unique("_tape")
        self.jit = jit
        self.typed_tapes = (
            jit  # one tape per saved variable and kind (numba types a list by its items)
        )
        self.tapes = {}  # with typed_tapes: key (_tape_of) -> tape name, in order of first use
        self._bw_cache = {}
        self.check_finite = check_finite
        self.owned = set()  # adjoints updated in place: zero arrays of loop-invariant values
        self.meter = meter
        self.sites = []  # with meter: (pos, value code) of each save, by site number
        self.checkpoints = checkpoints or {}  # id(loop) -> True or its number of snapshots
        self.state = {}  # id(checkpointed loop) -> the names a snapshot keeps
        self.pieces = {}  # id(checkpointed loop) -> the variable names its backward uses
        self.snapshot_code = {}  # id(checkpointed loop) -> what a snapshot keeps (its code)
        self.by_length = {}  # id(checkpointed loop) -> {list it only appends to: its length's name}
        self.recompute = {}  # id(checkpointed loop) -> its taped forward body, for the backward
        self.unsaved = {}  # id(checkpointed loop) -> its forward body without saves
        self._plain = False  # emitting a checkpointed loop's first forward: no saves, no tape
        self.seed = None  # the result's adjoint (``backward``)
        self.seed_one = False  # is it the constant 1.0? (``reverse``)
        self.lazy = lazy and not meter
        self.bound = {}  # id(test statement) -> [(names surely bound there, names maybe bound)] (a while's:
        # at its body's end too)
        # generated names a persist reads where they may be unbound: None first
        self.lazy_init = set()
        self.saved_names = set()  # the variables that keep overwritten values for the backward
        self._replaying = False  # emitting a checkpointed loop's body for the backward: no persists

    def rt(self, name):
        """The name the generated code calls the runtime's ``name`` by."""
        return self.bind(name)

    # ---- planning ----------------------------------------------------------------------------
    def plan(self):
        self.order = {}
        self._number(self.fn.body, frozenset())
        defined = set(self.fn.params)
        self._plan_block(self.fn.body, set(self.fn.params), defined, False)
        self.tape_saves = self.uses_tape  # values saved on the tape (flags and counts come later)

    def _number(self, stmts, loops):
        """Program order of every statement, and the loops around it."""
        for s in stmts:
            self.order[id(s)] = (len(self.order), loops)
            if isinstance(s, ir.If):
                self._number(s.body, loops)
                self._number(s.orelse, loops)
            elif isinstance(s, (ir.For, ir.While)):
                self._number(s.body, loops | {id(s)})

    def _old_value_read(self, name, d):
        """Does the backward read ``name`` somewhere that runs before definition ``d`` (earlier
        in the program, or anywhere in a loop around both)? Only then must ``d`` save the value
        it overwrites."""
        if name in self.wrt:
            return True  # finalize() reads the argument after the whole backward
        i, loops = self.order[id(d)]
        for r, of_result in self.an.read_sites.get(name, ()):
            j, rloops = self.order[id(r)]
            if j < i or (j == i and not of_result) or loops & rloops:
                return True
        return False

    def _plan_block(self, stmts, possibly, definitely, in_loop):
        for s in stmts:
            if isinstance(s, ir.Assign):
                self._plan_def(s, s.target, possibly, definitely, in_loop)
                possibly.add(s.target)
                definitely.add(s.target)
            elif isinstance(s, ir.SetItem):
                if s.target in self.reads and self._old_value_read(s.target, s):
                    self.saves[id(s)] = "tape" if in_loop else self.naming.saved(s.target)
                    self.uses_tape |= in_loop
                    self._saved_here(s, possibly, definitely)
            elif isinstance(s, ir.Append):
                if s.target in self.reads:
                    self.saves[id(s)] = "pop"  # undone by popping: nothing to keep
            elif isinstance(s, ir.LoopExit):
                self.bound[id(s)] = [(frozenset(definitely), frozenset(possibly))]
            elif isinstance(s, ir.If):
                self.bound[id(s)] = [(frozenset(definitely), frozenset(possibly))]
                p1, d1 = set(possibly), set(definitely)
                p2, d2 = set(possibly), set(definitely)
                self._plan_block(s.body, p1, d1, in_loop)
                self._plan_block(s.orelse, p2, d2, in_loop)
                possibly |= p1 | p2
                definitely |= d1 & d2
            elif isinstance(s, (ir.For, ir.While)):
                if id(s) in self.checkpoints:
                    self._plan_state(s, possibly, definitely)
                inner = set(possibly) | _defined_in(s.body)
                if isinstance(s, ir.For):
                    self._plan_def(s, s.target, possibly, definitely, in_loop)
                    inner.add(s.target)
                before = (frozenset(definitely), frozenset(possibly))
                at_end = set(definitely)
                self._plan_block(s.body, inner, at_end, True)
                self.bound[id(s)] = [before, (frozenset(at_end), frozenset(inner))]
                possibly |= inner

    def _plan_state(self, s, possibly, definitely):
        """What a snapshot of checkpointed loop ``s`` keeps: every name its body changes that an
        iteration may read before writing it (its value comes from the iterations before), or
        that is defined before the loop (the backward of the code before it may read its old
        value). A name not yet defined when a snapshot is taken starts as None."""
        changed = _defined_in(s.body) | {
            t.target for t in ir.walk(s.body) if isinstance(t, (ir.SetItem, ir.Append))
        }
        carried = _exposed(s.body) | (ir.reads(s) if isinstance(s, ir.While) else set())
        state = (changed - {getattr(s, "target", None)}) & (possibly | carried)
        self.state[id(s)] = sorted(state)
        self.needs_init |= state - definitely
        # a list the loop only appends to: its length is enough (see _snapshot)
        rebound = _defined_in(s.body) | {
            t.target for t in ir.walk(s.body) if isinstance(t, ir.SetItem)
        }
        appended = {t.target for t in ir.walk(s.body) if isinstance(t, ir.Append)}
        self.by_length[id(s)] = {
            n: self.naming.temp("n") for n in sorted((appended - rebound) & state)
        }

    def _plan_def(self, s, name, possibly, definitely, in_loop):
        if name not in possibly or not self._old_value_read(name, s):
            return
        if name in self.shapes:
            self.shape_saves.add(id(s))
        if name in self.reads or name in self.shapes:
            self.saves[id(s)] = "tape" if in_loop else self.naming.saved(name)
            self.uses_tape |= in_loop
            if name not in definitely:
                self.needs_init.add(name)
            self.restored.add(name)
            self._saved_here(s, possibly, definitely)

    def _saved_here(self, s, possibly, definitely):
        """A save into a variable is bound from here on (for ``_persist``)."""
        where = self.saves[id(s)]
        if where != "tape" and id(s) not in self.shape_saves:
            self.saved_names.add(where)
            possibly.add(where)
            definitely.add(where)

    def has_backward(self, s):
        key = id(s)
        if key not in self._bw_cache:
            if isinstance(s, (ir.Assign, ir.SetItem, ir.Append)):
                # a constant overwriting a differentiated variable still ends its adjoint
                r = self.an.is_active_stmt(s) or key in self.saves or s.target in self.an.active
            elif isinstance(s, ir.If):
                r = any(self.has_backward(t) for t in s.body + s.orelse)
            elif isinstance(s, (ir.For, ir.While)):
                r = any(self.has_backward(t) for t in s.body) or key in self.saves
            else:
                r = False
            self._bw_cache[key] = r
        return self._bw_cache[key]

    # ---- forward -----------------------------------------------------------------------------
    def forward(self):
        out = [code.assign(0, n, lit("None")) for n in sorted(self.needs_init)]
        self.release = self._releases()
        self._fwd_block(self.fn.body, 0, False, out)
        if self.meter:
            out.insert(0, code.assign(0, self.tape, fmt("{f}()", f=self.rt("metered_tape"))))
        elif self.uses_tape and self.typed_tapes:
            out[:0] = [code.assign(0, t, lit("[]")) for t in self.tapes.values()]
        elif self.uses_tape:  # known only now: branch flags and trip counts are taped as emitted
            tape = (
                fmt("{f}()", f=self.rt("lazy_tape")) if self.lazy and self.tape_saves else lit("[]")
            )
            out.insert(0, code.assign(0, self.tape, tape))
        fresh = sorted(self.lazy_init - self.needs_init)  # (known only now, as the tape)
        out[0:0] = [code.assign(0, n, lit("None")) for n in fresh]
        return out

    # ---- lazy arrays: persist before a data-dependent test --------------------------------------
    def _persist(self, s, depth, out, at_end=False):
        """Lazy mode, before test ``s`` computes (``at_end``: a while loop's test again, at the end
        of its body): ``a, b = persist_live(_tape, a, b)`` for the values surely bound there that
        the rest of the forward or the backward reads, the arguments excepted (``runtime/lazy.py``).
        Numpy's code has none of this: it is compiled only for lazy arguments."""
        if not self.lazy or self._replaying:
            return
        names = sorted(self._read_after(s, at_end))
        tape = self.tape if self.tape_saves else None
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
        surely, maybe = self.bound[id(s)][-1 if at_end else 0]
        maybe = {n for n in maybe - surely if n in self.naming.temps or n in self.saved_names}
        i, loops = self.order[id(s)]
        if at_end:
            loops = loops | {id(s)}
        later = set(ir.reads(s)) | self.reads | self.saved_names
        for t in ir.walk(self.fn.body):
            j, around = self.order[id(t)]
            if j > i or loops & around:
                later |= ir.reads(t)
        self.lazy_init |= maybe & later
        return ((surely | maybe) & later) - set(self.fn.params)

    def _site(self, value, pos):
        self.sites.append((pos, value.render()))
        return lit(str(len(self.sites) - 1))

    def _push(self, depth, value, pos=None, about=None, key=None):
        """``_tape.append(value)``; ``about``: the user's statement a metered site is counted at
        when the line itself maps to none (a branch flag, a trip count). ``key``: what is saved
        (``_tape_of``); its pop names the same key."""
        if self.meter:
            site = self._site(value, pos or about)
            return code.line(depth, fmt("{t}.push({v}, {k})", t=self.tape, v=value, k=site), pos)
        return code.line(depth, fmt("{t}.append({v})", t=self._tape_of(key), v=value), pos)

    def _pop(self, key=None):
        return fmt("{t}.pop()", t=self._tape_of(key))

    def _tape_of(self, key):
        """The tape a save goes on: the one tape, or with ``typed_tapes`` one per key (a saved
        variable, its entries, a branch flag, a trip count). Pops come in the reverse order of
        pushes, on each tape as on the one, so splitting the tape by key changes no value."""
        if not self.typed_tapes or key is None:
            return self.tape
        if key not in self.tapes:
            self.tapes[key] = self.naming.unique(f"{self.tape}_{key.lstrip('_')}")
        return self.tapes[key]

    @staticmethod
    def _save_key(s):
        return f"{s.target}_entry" if isinstance(s, ir.SetItem) else s.target

    def _save(self, s, value, depth, out):
        where = None if self._plain else self.saves.get(id(s))
        if where and id(s) in self.shape_saves:
            # keep no array alive for its shape
            value = fmt("{f}({v})", f=self.rt("shape_of"), v=value)
        if where == "tape":
            out.append(self._push(depth, value, s.pos, key=self._save_key(s)))
        elif where and self.meter:
            out.append(
                code.assign(
                    depth,
                    where,
                    fmt("{t}.keep({v}, {k})", t=self.tape, v=value, k=self._site(value, s.pos)),
                    s.pos,
                )
            )
        elif where:
            out.append(code.assign(depth, where, value, s.pos))

    def _releases(self):
        """id(top-level statement) -> differentiated temporaries to let go of after it: each is
        defined once, at the top level, no later statement reads it, and the backward reads at
        most its shape (then ``shape_of`` keeps shape and dtype). A hand-written forward drops
        such a temporary at once, and the memory it frees is reused by the next array."""
        body = self.fn.body
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
        for n in sorted(
            (self.naming.temps & self.an.active) - self.reads - set(self.fn.params) - self.restored
        ):
            if n in self.shapes and self._small(n):
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

    def _fwd_block(self, stmts, depth, in_loop, out):
        for s in stmts:
            self._fwd_stmt(s, depth, in_loop, out)
            for n in self.release.get(id(s), ()):  # top-level statements only
                if n in self.shapes:
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

    def _fwd_block_or_pass(self, stmts, depth, in_loop, out):
        n = len(out)
        self._fwd_block(stmts, depth, in_loop, out)
        if len(out) == n:
            out.append(code.user(depth, "pass"))

    def _fwd_stmt(self, s, depth, in_loop, out):
        if isinstance(s, ir.Assign):
            self._save(s, code.name(s.target), depth, out)
            out.append(
                code.user(depth, f"{s.target} = {s.op.text}", s.pos, ir.reads(s), (s.target,))
            )
        elif isinstance(s, ir.SetItem):
            entry = of(Ref(s.target), "[", code.index_subscript(s.index), "]")
            if id(s) in self.saves:
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
            self._fwd_if(s, depth, in_loop, out)
        elif isinstance(s, ir.For):
            self._fwd_for(s, depth, in_loop, out)
        elif isinstance(s, ir.While):
            self._fwd_while(s, depth, in_loop, out)

    def _fwd_if(self, s, depth, in_loop, out):
        self._persist(s, depth, out)
        if self._plain or not self.has_backward(s):
            out.append(code.user(depth, f"if {s.test}:", s.pos, ir.reads(s), opens=True))
        else:
            c = self.conds[id(s)] = self.naming.temp("c")
            # a Python bool: the backward tests it again, and must not sync with a device again
            out.append(
                code.user(depth, f"{c} = {self.rt('bool')}({s.test})", s.pos, ir.reads(s), (c,))
            )
            out.append(code.header(depth, fmt("if {c}:", c=c), s.pos))
        self._fwd_block_or_pass(s.body, depth + 1, in_loop, out)
        if s.orelse:
            out.append(code.header(depth, lit("else:")))
            self._fwd_block(s.orelse, depth + 1, in_loop, out)
        if in_loop and id(s) in self.conds and not self._plain:
            out.append(
                self._push(depth, code.name(self.conds[id(s)]), about=s.pos, key=self.conds[id(s)])
            )
            self.uses_tape = True

    def _fwd_for(self, s, depth, in_loop, out):
        self._save(s, code.name(s.target), depth, out)
        if self._checkpointed(s):
            return self._fwd_revolve(s, depth, in_loop, out)
        if self._plain or not self.has_backward(s):
            out.append(
                code.user(
                    depth,
                    f"for {s.target} in {s.range_text}:",
                    s.pos,
                    ir.reads(s),
                    (s.target,),
                    True,
                )
            )
            self._fwd_block_or_pass(s.body, depth + 1, True, out)
            return
        r = self.counts[id(s)] = self.naming.temp("r")
        out.append(code.user(depth, f"{r} = {s.range_text}", s.pos, ir.reads(s), (r,)))
        count = _exits_early(s) and self.naming.temp("n")
        if count:
            out.append(code.assign(depth, count, lit("0"), s.pos))
        out.append(code.header(depth, fmt("for {t} in {r}:", t=s.target, r=r), s.pos, (s.target,)))
        if count:
            out.append(code.augment(depth + 1, count, lit("1")))
        self._fwd_block_or_pass(s.body, depth + 1, True, out)
        if count:  # the iterations that ran, for the backward to retrace
            out.append(code.assign(depth, r, fmt("{r}[:{n}]", r=r, n=count)))
        if in_loop:
            out.append(self._push(depth, code.name(r), about=s.pos, key=r))
            self.uses_tape = True

    def _fwd_while(self, s, depth, in_loop, out):
        if self._checkpointed(s):
            return self._fwd_checkpointed_while(s, depth, out)
        self._persist(s, depth, out)
        if self._plain or not self.has_backward(s):
            out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
            self._fwd_block_or_pass(s.body, depth + 1, True, out)
            self._persist(s, depth + 1, out, at_end=True)
            return
        n = self.counts[id(s)] = self.naming.temp("n")
        out.append(code.assign(depth, n, lit("0"), s.pos))
        out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
        out.append(code.augment(depth + 1, n, lit("1")))
        self._fwd_block(s.body, depth + 1, True, out)
        self._persist(s, depth + 1, out, at_end=True)
        if in_loop:
            out.append(self._push(depth, code.name(n), about=s.pos, key=n))
            self.uses_tape = True

    # ---- checkpointed loops ----------------------------------------------------------------
    def _checkpointed(self, s):
        """Does loop ``s`` keep snapshots instead of a tape? A loop ``checkpoints.plan`` chose,
        with a backward that reads values its iterations save."""
        if id(s) not in self.state or not self.has_backward(s) or self._plain:
            return False
        return any(
            self.saves.get(id(t)) == "tape"
            or (isinstance(t, (ir.If, ir.For, ir.While)) and self.has_backward(t))
            for t in ir.walk(s.body)
        )

    def _snapshot(self, s):
        """The state a snapshot of loop ``s`` keeps: arrays written in place and lists appended to
        are copied, but of a list the loop only appends to, its length (running the iterations
        again appends the same values after cutting it back: no copy of a list as long as the
        loop, per snapshot)."""
        names = self.state[id(s)]
        if not names:
            return lit("()")
        lengths = self.by_length[id(s)]
        items = [
            fmt("{f}({n})", f=self.rt("len"), n=n)
            if n in lengths
            else self._copied(n) or code.name(n)
            for n in names
        ]
        return of("(", code.join(items), ",)" if len(items) == 1 else ")")

    def _copied(self, name):
        """A copy of ``name``'s value if the function changes it in place (an array written into,
        a list appended to), else None."""
        for t in ir.walk(self.fn.body):
            if isinstance(t, ir.SetItem) and t.target == name:
                return fmt("{f}({n})", f=self.rt("copy_value"), n=name)
        for t in ir.walk(self.fn.body):
            if isinstance(t, ir.Append) and t.target == name:
                return fmt("{f}({n})", f=self.rt("list"), n=name)
        return None

    def _fwd_revolve(self, s, depth, in_loop, out):
        """A ``for`` loop run without saving anything, keeping its state where the binomial
        schedule asks (``runtime/revolve.py``). The backward reverses its iterations last first,
        each from the last snapshot before it (``_bwd_revolve``): memory for the snapshots and
        one iteration's saves, not every state. In a loop, the schedule goes on the tape."""
        r = self.naming.temp("r")
        schedule = self.counts[id(s)] = self.naming.temp("revolve")
        piece = self.naming.temp("piece")
        self.pieces[id(s)] = (schedule, piece)
        slots = self.checkpoints[id(s)]
        args = [code.name(r), lit("None" if slots is True else str(int(slots)))]
        if self.meter:
            args.append(fmt("{t}.release", t=self.tape))  # snapshots let go of in the backward
        out.append(code.user(depth, f"{r} = {s.range_text}", s.pos, ir.reads(s), (r,)))
        out.append(
            code.assign(
                depth, schedule, of(Ref(self.rt("revolve")), "(", code.join(args), ")"), s.pos
            )
        )
        out.append(
            code.header(
                depth, fmt("for {p} in {v}.forward():", p=piece, v=schedule), s.pos, (piece,)
            )
        )
        out.append(code.line(depth + 1, fmt("{v}.keep({s})", v=schedule, s=self._snapshot_of(s))))
        out.append(
            code.header(depth + 1, fmt("for {t} in {p}:", t=s.target, p=piece), s.pos, (s.target,))
        )
        self._checkpointed_bodies(s, depth + 2, out)
        if in_loop:
            out.append(self._push(depth, code.name(schedule), about=s.pos, key=schedule))
            self.uses_tape = True

    def _fwd_checkpointed_while(self, s, depth, out):
        """A ``while`` loop's snapshots, one every so many iterations (``runtime.meter.Snapshots``:
        its length is known only at its end); the iterations run without saving anything."""
        n = self.counts[id(s)] = self.naming.temp("n")
        snaps, piece = self.naming.temp("snapshots"), self.naming.temp("piece")
        self.pieces[id(s)] = (snaps, piece)
        slots = self.checkpoints[id(s)]
        limit = lit("None") if slots is True else lit(str(int(slots)))
        out.append(code.assign(depth, n, lit("0"), s.pos))
        out.append(
            code.assign(depth, snaps, fmt("{f}({k})", f=self.rt("snapshots"), k=limit), s.pos)
        )
        self._persist(s, depth, out)
        out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
        out.append(code.header(depth + 1, fmt("if {s}.due({n}):", s=snaps, n=n)))
        out.append(code.line(depth + 2, fmt("{s}.add({v})", s=snaps, v=self._snapshot_of(s))))
        out.append(code.augment(depth + 1, n, lit("1")))
        self._checkpointed_bodies(s, depth + 1, out)

    def _snapshot_of(self, s):
        """What a snapshot of checkpointed loop ``s`` keeps (counted, in a metered compile, at one
        site wherever it is taken)."""
        if id(s) not in self.snapshot_code:
            value = self._snapshot(s)
            if self.meter:
                value = fmt("{t}.keep({v}, {k})", t=self.tape, v=value, k=self._site(value, s.pos))
            self.snapshot_code[id(s)] = value
        return self.snapshot_code[id(s)]

    def _checkpointed_bodies(self, s, depth, out):
        """Loop ``s``'s body twice: plain, at ``depth`` in ``out`` (the first forward, which saves
        nothing), and with its saves; both kept for the backward (``recompute``, at depth 0)."""
        self._plain = True
        plain = []
        try:
            self._fwd_block_or_pass(s.body, 0, True, plain)
        finally:
            self._plain = False
        out.extend(st.at(st.depth + depth) for st in plain)
        if isinstance(s, ir.While):
            self._persist(s, depth, out, at_end=True)
        taped = []
        self._replaying = True  # run again in the backward, after the forward: nothing to persist
        try:
            self._fwd_block_or_pass(s.body, 0, True, taped)
        finally:
            self._replaying = False
        self.recompute[id(s)] = taped
        self.unsaved[id(s)] = plain

    def _bwd_revolve(self, s, depth, body, after, out):
        """Each iteration, last first: the last snapshot before it back, the iterations from
        there to it again (keeping the snapshots the schedule asks for), then the iteration
        itself with its saves, and its backward ``body`` (made for ``depth + 1``) at once."""
        schedule, piece = self.pieces[id(s)]
        i, snap, pieces, keep = (self.naming.temp(k) for k in ("i", "snapshot", "pieces", "keep"))
        out.append(
            code.header(
                depth,
                fmt("for {i}, {s}, {ps} in {v}.turns():", i=i, s=snap, ps=pieces, v=schedule),
                s.pos,
                (i, snap, pieces),
            )
        )
        self._restore_snapshot(s, snap, depth + 1, out)
        out.append(
            code.header(
                depth + 1,
                fmt("for {p}, {k} in {ps}:", p=piece, k=keep, ps=pieces),
                None,
                (piece, keep),
            )
        )
        out.append(code.header(depth + 2, fmt("if {k}:", k=keep)))
        out.append(code.line(depth + 3, fmt("{v}.keep({s})", v=schedule, s=self._snapshot_of(s))))
        out.append(
            code.header(depth + 2, fmt("for {t} in {p}:", t=s.target, p=piece), None, (s.target,))
        )
        out.extend(st.at(st.depth + depth + 3) for st in self.unsaved[id(s)])
        out.append(code.assign(depth + 1, s.target, code.name(i)))
        out.extend(st.at(st.depth + depth + 1) for st in self.recompute[id(s)])
        out.extend(body)
        out += [self._zero(depth + 1, n) for n in after]

    def _restore_snapshot(self, s, snap, depth, out):
        """The state of ``snap`` back; what the iterations change in place is copied again, so
        that the snapshot stays as it was for the next time it is restored."""
        state = self.state[id(s)]
        lengths = self.by_length[id(s)]
        if state:
            bound = [lengths.get(n, n) for n in state]
            targets = code.join([code.name(n) for n in bound])
            out.append(
                code.line(
                    depth,
                    of(targets, "," if len(state) == 1 else "", " = ", Ref(snap)),
                    writes=bound,
                    reads=(snap,),
                )
            )
        for n in state:
            copy = self._copied(n)
            if n in lengths:  # the list cut back to its length then
                out.append(
                    code.line(
                        depth,
                        fmt("del {l}[{n}:]", l=n, n=lengths[n]),
                        writes=(n,),
                        reads=(n, lengths[n]),
                    )
                )
            elif copy is not None:
                out.append(code.assign(depth, n, copy))

    def _bwd_periodic(self, s, depth, body, after, out):
        """A ``while`` loop's pieces, last first: its snapshot back, its iterations again with
        their saves, then their backward ``body`` (one iteration's, made for ``depth + 1``)."""
        snaps, piece = self.pieces[id(s)]
        snap = self.naming.temp("snapshot")
        head = fmt(
            "for {p}, {s} in {r}({ss}.pieces({n})):",
            p=piece,
            s=snap,
            r=self.rt("reversed"),
            ss=snaps,
            n=self.counts[id(s)],
        )
        out.append(code.header(depth, head, s.pos, (piece, snap)))
        self._restore_snapshot(s, snap, depth + 1, out)
        out.append(code.header(depth + 1, fmt("for _ in {p}:", p=piece), None, ("_",)))
        out.extend(st.at(st.depth + depth + 2) for st in self.recompute[id(s)])
        out.append(
            code.header(
                depth + 1, fmt("for _ in {f}({p}):", f=self.rt("reversed"), p=piece), None, ("_",)
            )
        )
        out.extend(st.at(st.depth + 1) for st in body)
        out += [self._zero(depth + 2, n) for n in after]
        if not body and not after:
            out.append(code.user(depth + 2, "pass"))

    # ---- backward ----------------------------------------------------------------------------
    def backward(self, seed, result):
        self.seed = seed
        state = {}
        out = []
        if isinstance(result, ir.Name) and result.id in self.an.active:
            adj = self.naming.adjoint(result.id)
            if adj != seed:
                out.append(code.assign(0, adj, code.name(seed)))
            state[adj] = DENSE
        state = self._bwd_block(self.fn.body, 0, False, state, out)
        outputs = []
        for p in self.wrt:
            adj = self.naming.adjoint(p)
            g = self.rt("ZERO") if state.get(adj, ZERO) == ZERO else adj
            outputs.append((p, fmt("{f}({g}, {p})", f=self.rt("finalize"), g=g, p=p)))
        return out, outputs

    def _bwd_block(self, stmts, depth, in_loop, state, out):
        for s in reversed(stmts):
            if isinstance(s, ir.Assign):
                state = self._bwd_assign(s, depth, state, out)
            elif isinstance(s, ir.SetItem):
                state = self._bwd_setitem(s, depth, state, out)
            elif isinstance(s, ir.Append):
                state = self._bwd_append(s, depth, state, out)
            elif isinstance(s, ir.If) and self.has_backward(s):
                state = self._bwd_if(s, depth, in_loop, state, out)
            elif isinstance(s, (ir.For, ir.While)) and self.has_backward(s):
                state = self._bwd_loop(s, depth, in_loop, state, out)
        return state

    def _restore(self, s, name, depth, out, entry=None):
        where = self.saves.get(id(s))
        if not where:
            return
        value = self._pop(self._save_key(s)) if where == "tape" else code.name(where)
        if entry is None:
            out.append(code.assign(depth, name, value, s.pos))
        else:  # x[i] = <saved>: a write into x's array
            out.append(code.line(depth, of(entry, " = ", value), s.pos, writes=(name,)))
        self.restored.add(name)

    def _zero(self, depth, name, pos=None):
        return code.assign(depth, name, code.name(self.rt("ZERO")), pos)

    def _bwd_assign(self, s, depth, state, out):
        adj = self.naming.adjoint(s.target)
        if not self.an.is_active_stmt(s) or state.get(adj, ZERO) == ZERO:
            state[adj] = ZERO
            self._restore(s, s.target, depth, out)
            return state
        op = s.op
        self_ref = s.target in op.arg_names()
        g, result = adj, s.target
        if self_ref:
            g = self.naming.temp("g")
            start = len(out)
            out.append(code.assign(depth, g, code.name(adj), s.pos))
            state[g] = state[adj]
            if self._reads_result(s) and id(s) in self.saves:
                result = self.naming.temp("r")
                out.append(code.assign(depth, result, code.name(s.target), s.pos))
            state[adj] = ZERO
            self._restore(s, s.target, depth, out)
            state = self._guarded(
                g, state, depth, out, lambda st, d: self._template(s, g, result, st, d, out)
            )
            state.pop(g, None)  # the captured adjoint is used up here
            read_in_place(out, start, g, adj)
            return state
        state = self._guarded(
            g, state, depth, out, lambda st, d: self._template(s, g, result, st, d, out)
        )
        state[adj] = ZERO
        self._restore(s, s.target, depth, out)
        return state

    def _reads_result(self, s):
        b = self.an.binding(s.op)
        return b is not None and any(
            b.template.params[0] in t.reads_values for t in self.an.template(b).stmts
        )

    def _guarded(self, g, state, depth, out, body):
        """Run ``body`` directly if adjoint ``g`` is dense, under ``if g is not ZERO`` if maybe."""
        if state.get(g, ZERO) == DENSE:
            return body(state, depth)
        out.append(code.header(depth, fmt("if {g} is not {z}:", g=g, z=self.rt("ZERO"))))
        inner = body(dict(state), depth + 1)
        merged, _, fix_skip = _join(inner, state)
        if fix_skip:  # the skipped path leaves these zero: say so for the merge
            out.append(code.header(depth, lit("else:")))
        for name in fix_skip:
            out.append(self._zero(depth + 1, name))
        return merged

    def _entry_adjoint(self, adj, value, state, depth, out, pos):
        """``adj = value`` or ``adj = acc(adj, value)``: an entry of a list or tuple adjoint,
        which may be ``ZERO`` (no reader reached it)."""
        if state.get(adj, ZERO) == ZERO:
            out.append(code.assign(depth, adj, value, pos))
        else:
            out.append(
                code.assign(depth, adj, fmt("{f}({a}, {v})", f=self.rt("acc"), a=adj, v=value), pos)
            )
        state[adj] = MAYBE

    def _template(self, s, g, result, state, depth, out):
        op = s.op
        if op.kind == "copy":
            src = op.args[0]
            if isinstance(src, ir.Name) and src.id in self.an.active:
                self._accumulate(
                    self.naming.adjoint(src.id), code.name(g), state, depth, out, s.pos
                )
            elif isinstance(src, Tup):  # t = (a, b): each entry's adjoint (ZERO where none came)
                for k, a in enumerate(src):
                    if isinstance(a, ir.Name) and a.id in self.an.active:
                        self._entry_adjoint(
                            self.naming.adjoint(a.id),
                            fmt(f"{{g}}[{k}]", g=g),
                            state,
                            depth,
                            out,
                            s.pos,
                        )
            return state
        b = self.an.binding(op)
        tmpl = self.an.template(b)
        values = {p: code.atom(v) for p, v in b.values.items()}
        values[tmpl.params[0]] = code.name(result)
        adjoints = {tmpl.params[0]: g}
        tuples = {}
        for p in b.diff:
            v = b.values[p]
            if isinstance(v, ir.Name) and v.id in self.an.active:
                adjoints[p] = self.naming.adjoint(v.id)
            elif isinstance(v, Tup) and any(
                isinstance(a, ir.Name) and a.id in self.an.active for a in v
            ):
                adjoints[p] = tuples[p] = self.naming.temp("gs")
            else:
                adjoints[p] = None
        pending = []  # [adjoint, expr, tight, count]: equal contributions in a row are added once

        def flush():
            for adj, expr, tight, count in pending:
                if count > 1:  # y * y: both operands give the same term
                    expr = of(f"{count} * ", expr if tight else of("(", expr, ")"))
                self._accumulate(adj, expr, state, depth, out, s.pos)
            pending.clear()

        for inst in instantiate(
            tmpl, values, adjoints, lambda base: self.naming.temp("a"), self.bind
        ):
            if not inst.accumulate:
                flush()
                out.append(code.assign(depth, inst.target, inst.expr, s.pos))
            elif inst.source_param in tuples:
                flush()
                out.append(code.assign(depth, inst.target, inst.expr, s.pos))
                for k, a in enumerate(b.values[inst.source_param]):
                    if isinstance(a, ir.Name) and a.id in self.an.active:
                        self._accumulate(
                            self.naming.adjoint(a.id),
                            fmt(f"{{t}}[{k}]", t=inst.target),
                            state,
                            depth,
                            out,
                            s.pos,
                        )
            else:
                expr, tight = inst.expr, inst.tight
                plan = (
                    self.an.unbroadcast_of(s, b, inst.source_param)
                    if inst.source_param in b.values
                    else None
                )
                if plan is not None and inst.inner is not None:
                    shape = (
                        self.an.shapes.of(b.values[inst.source_param].id)
                        if self.jit and plan
                        else None
                    )
                    expr, tight = (
                        _unbroadcast_known(inst.inner, plan, shape),
                        inst.inner_tight or bool(plan),
                    )
                seeded = self._seeded(inst, g, b, values, depth, out)
                if seeded is not None:
                    expr, tight = seeded, True
                if pending and pending[-1][0] == inst.target and pending[-1][1] == expr:
                    pending[-1][3] += 1
                else:
                    pending.append([inst.target, expr, tight, 1])
        flush()
        return state

    def _seeded(self, inst, g, binding, values, depth, out):
        """``seed_like(x)`` (``mean=True`` for a mean) for ``unreduce(d[y], x, None, False)`` where
        ``d[y]`` is the constant seed 1.0, read before any statement of the backward assigned it:
        the seed folded into the rule, as ``np.ones`` would be written by hand. Else None."""
        if not (self.seed_one and inst.reduces and g == self.seed and depth == 0):
            return None
        axis, keepdims, mean = inst.reduces
        a, k = binding.values.get(axis), binding.values.get(keepdims)
        if not (
            isinstance(a, ir.Const)
            and a.value is None
            and isinstance(k, ir.Const)
            and k.value is False
        ):
            return None
        if any(self.seed in st.writes for st in out):
            return None
        return fmt(
            "{f}({x}, mean=True)" if mean else "{f}({x})",
            f=self.rt("seed_like"),
            x=values[inst.source_param],
        )

    def _loop_invariant_adjoints(self, loop, names):
        """adjoint -> primal, for adjoints in ``names`` whose primal the loop never redefines
        and whose value the backward keeps current (so its shape is known before the loop)."""
        defined = _defined_in(loop.body) | {
            s.target for s in ir.walk(loop.body) if isinstance(s, ir.SetItem)
        }
        primal = self.naming.primal_of
        out = {}
        for n in names:
            p = primal(n)
            if p is not None and p not in defined and p in self.reads:
                out[n] = p
        return out

    def _accumulate(self, adj, expr, state, depth, out, pos):
        st = state.get(adj, ZERO)
        if st == ZERO:
            out.append(code.assign(depth, adj, expr, pos))
        elif st == DENSE and adj in self.owned:
            # a zero array made before the loop, seen by no other name
            out.append(code.augment(depth, adj, expr, pos))
        elif st == DENSE:
            out.append(code.assign(depth, adj, of(Ref(adj), " + ", expr), pos))
        else:
            out.append(
                code.assign(depth, adj, fmt("{f}({a}, {e})", f=self.rt("acc"), a=adj, e=expr), pos)
            )
        state[adj] = DENSE
        if self.check_finite:
            where = f"{adj} at {os.path.basename(pos.filename)}:{pos.line}" if pos else adj
            out.append(
                code.line(
                    depth,
                    fmt("{f}({a}, {w})", f=self.rt("check_finite"), a=adj, w=lit(repr(where))),
                    pos,
                )
            )

    def _bwd_setitem(self, s, depth, state, out):
        adj = self.naming.adjoint(s.target)
        entry = of(Ref(adj), "[", code.index_subscript(s.index), "]")
        if self.an.is_active_stmt(s) and state.get(adj, ZERO) != ZERO:

            def body(st, d):
                v = s.value
                if (
                    isinstance(v, ir.Name)
                    and v.id in self.an.active
                    and s.target in self.an.fn.info.get("sequences", ())
                ):
                    # an entry of a list: its adjoint may be ZERO (no reader reached it)
                    self._entry_adjoint(self.naming.adjoint(v.id), entry, st, d, out, s.pos)
                elif isinstance(v, ir.Name) and v.id in self.an.active:
                    if _basic(s.index):
                        expr = fmt("{f}({e}, {v})", f=self.rt("unbroadcast"), e=entry, v=v.id)
                    else:  # integer arrays may repeat an index: the last write wins
                        expr = fmt(
                            "{f}({a}, {i}, {v})",
                            f=self.rt("written_part"),
                            a=adj,
                            i=code.index_value(s.index),
                            v=v.id,
                        )
                    self._accumulate(self.naming.adjoint(v.id), expr, st, d, out, s.pos)
                out.append(
                    code.assign(
                        d,
                        adj,
                        fmt(
                            "{f}({a}, {i})",
                            f=self.rt("zero_at"),
                            a=adj,
                            i=code.index_value(s.index),
                        ),
                        s.pos,
                    )
                )
                return st

            state = self._guarded(adj, state, depth, out, body)
        self._restore(
            s,
            s.target,
            depth,
            out,
            entry=of(Ref(s.target), "[", code.index_subscript(s.index), "]"),
        )
        return state

    def _bwd_append(self, s, depth, state, out):
        adj = self.naming.adjoint(s.target)
        if self.an.is_active_stmt(s) and state.get(adj, ZERO) != ZERO:
            v = s.value
            split = self.rt("split_last")
            if isinstance(v, ir.Name) and v.id in self.an.active:
                last = self.naming.temp("a")
                out.append(
                    code.line(
                        depth,
                        fmt("{l}, {a} = {f}({a})", l=last, a=adj, f=split),
                        s.pos,
                        writes=(last, adj),
                        reads=(adj, split),
                    )
                )
                self._entry_adjoint(
                    self.naming.adjoint(v.id), code.name(last), state, depth, out, s.pos
                )
            else:
                out.append(code.assign(depth, adj, fmt("{f}({a})[1]", f=split, a=adj), s.pos))
            state[adj] = MAYBE
        if id(s) in self.saves:
            out.append(code.line(depth, fmt("{t}.pop()", t=s.target), s.pos))
        return state

    def _bwd_if(self, s, depth, in_loop, state, out):
        c = self.conds[id(s)]
        if in_loop:
            out.append(code.assign(depth, c, self._pop(c)))
        body, else_ = [], []
        st1 = self._bwd_block(s.body, depth + 1, in_loop, dict(state), body)
        st2 = self._bwd_block(s.orelse, depth + 1, in_loop, dict(state), else_)
        merged, fix1, fix2 = _join(st1, st2)
        body += [self._zero(depth + 1, n) for n in fix1]
        else_ += [self._zero(depth + 1, n) for n in fix2]
        if not body and not else_:
            return merged
        if not body:
            out.append(code.header(depth, fmt("if not {c}:", c=c), s.pos))
            out.extend(else_)
            return merged
        out.append(code.header(depth, fmt("if {c}:", c=c), s.pos))
        out.extend(body)
        if else_:
            out.append(code.header(depth, lit("else:")))
            out.extend(else_)
        return merged

    def _bwd_loop(self, s, depth, in_loop, state, out):
        var = self.counts[id(s)]
        if in_loop:
            out.append(code.assign(depth, var, self._pop(var)))
        if isinstance(s, ir.For):
            header = code.header(
                depth,
                fmt("for {t} in {f}({v}):", t=s.target, f=self.rt("reversed"), v=var),
                s.pos,
                (s.target,),
            )
            trips = fmt("{f}({v})", f=self.rt("len"), v=var)
        else:
            header = code.header(
                depth, fmt("for _ in {f}({v}):", f=self.rt("range"), v=var), s.pos, ("_",)
            )
            trips = code.name(var)
        entry = dict(state)
        snapshot = self.naming.snapshot()
        while True:
            body = []
            end = self._bwd_block(s.body, depth + 1, True, dict(entry), body)
            merged, _, _ = _join(entry, end)
            if merged == entry:
                break
            entry = merged
            self.naming.restore(snapshot)
        before = [n for n in entry if state.get(n, ZERO) == ZERO and entry[n] != ZERO]
        dense = self._loop_invariant_adjoints(s, before)
        if dense:
            # Adjoints of values the loop only reads: start them as zero arrays, so the loop
            # adds into them in place, without a run-time test. Nothing in the loop can alias
            # them: only the (outside) definitions of their values read them.
            entry = {n: (DENSE if n in dense else st) for n, st in entry.items()}
            self.naming.restore(snapshot)
            body = []
            owned_before = set(self.owned)
            self.owned |= set(dense)
            end = self._bwd_block(s.body, depth + 1, True, dict(entry), body)
            self.owned = owned_before
        after = [n for n in entry if end.get(n, ZERO) == ZERO and entry[n] != ZERO]
        for n in before:
            if n in dense:
                out.append(
                    code.assign(depth, n, fmt("{f}({p})", f=self.rt("zeros_like"), p=dense[n]))
                )
            else:
                out.append(self._zero(depth, n))
        folded = (
            not before
            and not after
            and id(s) not in self.pieces
            and _geometric(body, trips, self.rt)
        )
        if folded:
            out.append(code.assign(depth, folded.target, folded.expr, s.pos))
            if isinstance(s, ir.For):
                self._restore(s, s.target, depth, out)
            return entry
        if id(s) in self.pieces and isinstance(s, ir.For):
            self._bwd_revolve(s, depth, body, after, out)
        elif id(s) in self.pieces:
            self._bwd_periodic(s, depth, body, after, out)
        else:
            out.append(header)
            out.extend(body)
            out += [self._zero(depth + 1, n) for n in after]
            if not body and not after:
                out.append(code.user(depth + 1, "pass"))
        if isinstance(s, ir.For):
            self._restore(s, s.target, depth, out)
        return entry


def _join(a, b):
    """Merge two adjoint states; also which names each side must set to ``ZERO``."""
    merged, fix_a, fix_b = {}, [], []
    for n in sorted(set(a) | set(b)):
        x, y = a.get(n, ZERO), b.get(n, ZERO)
        if x == y:
            merged[n] = x
            continue
        merged[n] = MAYBE
        if x == ZERO:
            fix_a.append(n)
        if y == ZERO:
            fix_b.append(n)
    return merged, fix_a, fix_b


def _unbroadcast_known(inner, plan, shape=None):
    """``unbroadcast(E, x)`` where shape inference knows the shapes: ``E`` when they match (plan
    ``()``), else ``E.sum(axis=axes)`` (plan ``(axes, keepdims)`` from ``Analysis.unbroadcast_of``).
    ``shape``: x's shape, for numba, which sums over one axis at a time and has no ``keepdims``:
    ``E.sum(axis=2).sum(axis=0).reshape(shape)``."""
    if not plan:
        return inner
    axes, keepdims = plan
    base = inner if inner.ref() else of("(", inner, ")")
    if shape is not None:
        for a in sorted(axes, reverse=True):
            base = of(base, f".sum(axis={a})")
        return of(base, f".reshape({shape!r})") if keepdims else base
    axis = axes[0] if len(axes) == 1 else axes
    return of(base, f".sum(axis={axis}{', keepdims=True' if keepdims else ''})")


def _basic(index):
    """Is the index made only of constant ints, slices of constants, None and ``...``?"""

    def const(a):
        return a is None or (isinstance(a, ir.Const) and type(a.value) is int)

    for p in index.parts:
        if isinstance(p, ir.Slice):
            if not all(const(a) for a in (p.lower, p.upper, p.step)):
                return False
        elif not (p is None or p is Ellipsis or const(p)):
            return False
    return True


def _geometric(body, trips, rt):
    """A backward loop body that only scales one adjoint by a number, ``g = g * k``, in closed
    form: ``g = scale_repeated(g, k, trips)`` (one multiplication by ``k ** trips``), as a
    hand-written backward folds ``while ...: y = y * 2`` into one scale factor. None otherwise."""
    if len(body) != 1 or body[0].target is None or body[0].augmented:
        return None
    g, parts = body[0].target, body[0].expr.parts
    k = None
    if len(parts) == 2 and parts[0] == g and type(parts[0]) is Ref and type(parts[1]) is not Ref:
        k = parts[1][3:] if parts[1].startswith(" * ") else None
    elif len(parts) == 2 and parts[1] == g and type(parts[1]) is Ref and type(parts[0]) is not Ref:
        k = parts[0][:-3] if parts[0].endswith(" * ") else None
    if k is None or not _is_number(k):
        return None
    return code.assign(
        0, g, fmt("{f}({g}, {k}, {n})", f=rt("scale_repeated"), g=g, k=lit(k), n=trips)
    )


def _is_number(text):
    """A number as ``ir.Const`` renders one: ``2``, ``0.5``, ``1e-3``, ``(-2.0)``."""
    t = text[2:-1] if text.startswith("(-") and text.endswith(")") else text
    try:
        float(t)
    except ValueError:
        return False
    return bool(t) and t[0].isdigit() and "j" not in t


def _reads_of(stmt):
    """Every name ``stmt`` (with the statements inside it) may read."""
    return set().union(*(ir.reads(s) for s in ir.walk([stmt])))


def _exits_early(loop):
    return any(isinstance(t, ir.LoopExit) for t in loop.body)


def _defined_in(stmts):
    out = set()
    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign):
            out.add(s.target)
        elif isinstance(s, ir.For):
            out.add(s.target)
    return out


def _exposed(stmts):
    """The names an iteration of ``stmts`` may read before it writes them."""
    out = set()
    _exposed_block(stmts, set(), out)
    return out


def _exposed_block(stmts, written, out):
    for s in stmts:
        out |= ir.reads(s) - written
        if isinstance(s, ir.If):
            body, orelse = set(written), set(written)
            _exposed_block(s.body, body, out)
            _exposed_block(s.orelse, orelse, out)
            written |= body & orelse
        elif isinstance(s, (ir.For, ir.While)):  # may run no iteration: writes nothing for sure
            _exposed_block(s.body, written | ({s.target} if isinstance(s, ir.For) else set()), out)
        elif isinstance(s, ir.Assign):
            written.add(s.target)
