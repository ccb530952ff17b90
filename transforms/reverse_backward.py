"""Reverse mode: the backward sweep, the statements' adjoints in reverse order.

Expects: an ``ir.Function``, its ``Analysis``, the ``reverse_saves.Plan`` and what the forward
sweep left (``reverse_forward.Swept``, the ``reverse_tape.Tape``). Guarantees: statements
(``code.Stmt``) that visit the function's statements last first; at each one every variable the
backward reads holds the value it had at that point of the forward (a saved value is restored as
the backward passes its definition), so the statement is replaced by its adjoint
(``reverse_adjoints``). Adjoints are tracked statically (``states``): the first contribution to a
zero adjoint is an assignment, and only a maybe-zero adjoint (after branches and loops) costs a
run-time test. A branch is reversed under its kept condition, a loop over its kept range or
trip count; a loop that only scales one adjoint by a number is folded into one
``scale_repeated``. The gradient of each ``wrt`` parameter is ``finalize(adjoint, parameter)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import code, ir
from .code import Ref, fmt, is_number, lit, of
from .optimize import read_in_place
from .reverse_adjoints import Contributions
from .reverse_checkpointed import CheckpointedBackward
from .reverse_saves import defined_in
from .states import DENSE, MAYBE, ZERO, join


@dataclass
class Backward:
    """What the backward sweep makes."""

    body: list  # code.Stmt
    outputs: list  # (param, Code) of the gradient, in wrt order
    restored: set  # primal names the backward assigns to


def sweep(fn, analysis, naming, bind, plan, swept, tape, result, **options):
    """The backward sweep of ``fn`` from the adjoint of ``result`` (a ``Backward``); ``options``:
    ``seed``, ``seed_one``, ``check_finite``, ``jit`` (``BackwardSweep``)."""
    return BackwardSweep(fn, analysis, naming, bind, plan, swept, tape, **options).run(result)


class BackwardSweep(CheckpointedBackward, Contributions):
    def __init__(
        self, fn, analysis, naming, bind, plan, swept, tape, *, seed, seed_one, check_finite, jit
    ):
        self.fn = fn
        self.an = analysis
        self.naming = naming
        self.rt = bind  # the name the generated code calls the runtime's ``name`` by
        self.plan = plan
        self.swept = swept
        self.tape = tape
        self.seed = seed  # the result's adjoint: the backward's input
        self.seed_one = seed_one  # is it the constant 1.0? (``_seeded``)
        self.check_finite = check_finite  # a check after every adjoint update
        self.jit = jit  # the variant numba compiles (``_unbroadcast_known``)
        self.owned = set()  # adjoints updated in place: zero arrays of loop-invariant values
        self.restored = set(plan.restored)

    def run(self, result):
        """The backward from the adjoint of ``result`` (``self.seed``) to the gradients."""
        state = {}
        out = []
        if isinstance(result, ir.Name) and result.id in self.an.active:
            adj = self.naming.adjoint(result.id)
            if adj != self.seed:
                out.append(code.assign(0, adj, code.name(self.seed)))
            state[adj] = DENSE
        state = self._block(self.fn.body, 0, False, state, out)
        outputs = []
        for p in self.plan.wrt:
            adj = self.naming.adjoint(p)
            g = self.rt("ZERO") if state.get(adj, ZERO) == ZERO else adj
            outputs.append((p, fmt("{f}({g}, {p})", f=self.rt("finalize"), g=g, p=p)))
        self._rebound()
        return Backward(out, outputs, self.restored)

    def _rebound(self):
        """The backward binds a checkpointed loop's state again (a pullback: nonlocal)."""
        if not self.swept.loops:
            return
        bound = set(self.fn.params).union(*(st.writes for st in self.swept.body))
        for loop, kept in self.swept.loops.items():
            rebinds = set(self.plan.state[loop]).union(*(st.writes for st in kept.taped))
            self.restored |= rebinds & bound

    def _block(self, stmts, depth, in_loop, state, out):
        for s in reversed(stmts):
            if isinstance(s, ir.Assign):
                state = self._assign(s, depth, state, out)
            elif isinstance(s, ir.SetItem):
                state = self._setitem(s, depth, state, out)
            elif isinstance(s, ir.Append):
                state = self._append(s, depth, state, out)
            elif isinstance(s, ir.If) and self.plan.has_backward(s):
                state = self._if(s, depth, in_loop, state, out)
            elif isinstance(s, (ir.For, ir.While)) and self.plan.has_backward(s):
                state = self._loop(s, depth, in_loop, state, out)
        return state

    def _restore(self, s, name, depth, out, entry=None):
        where = self.plan.saves.get(id(s))
        if not where:
            return
        value = self.tape.pop(self.tape.key(s)) if where == "tape" else code.name(where)
        if entry is None:
            out.append(code.assign(depth, name, value, s.pos))
        else:  # x[i] = <saved>: a write into x's array
            out.append(code.line(depth, of(entry, " = ", value), s.pos, writes=(name,)))
        self.restored.add(name)

    def _zero(self, depth, name, pos=None):
        return code.assign(depth, name, code.name(self.rt("ZERO")), pos)

    def _guarded(self, g, state, depth, out, body):
        """Run ``body`` directly if adjoint ``g`` is dense, under ``if g is not ZERO`` if maybe."""
        if state.get(g, ZERO) == DENSE:
            return body(state, depth)
        out.append(code.header(depth, fmt("if {g} is not {z}:", g=g, z=self.rt("ZERO"))))
        inner = body(dict(state), depth + 1)
        merged, _, fix_skip = join(inner, state)
        if fix_skip:  # the skipped path leaves these zero: say so for the merge
            out.append(code.header(depth, lit("else:")))
        for name in fix_skip:
            out.append(self._zero(depth + 1, name))
        return merged

    # ---- statements ------------------------------------------------------------------------------
    def _assign(self, s, depth, state, out):
        adj = self.naming.adjoint(s.target)
        if not self.an.is_active_stmt(s) or state.get(adj, ZERO) == ZERO:
            state[adj] = ZERO
            self._restore(s, s.target, depth, out)
            return state
        self._inexact_part(s, adj, depth, state, out)
        if s.target in s.op.arg_names():
            return self._self_assign(s, adj, depth, state, out)
        state = self._guarded(
            adj, state, depth, out, lambda st, d: self._template(s, adj, s.target, st, d, out)
        )
        state[adj] = ZERO
        self._restore(s, s.target, depth, out)
        return state

    def _inexact_part(self, s, adj, depth, state, out):
        """The adjoint of a value of integers or booleans is zero (``dtypes.py``): where the
        dtype of the value ``s`` makes is not known, the backward tests it (before restoring)."""
        if self.an.guarded(s):
            expr = fmt("{f}({g}, {y})", f=self.rt("inexact_part"), g=adj, y=s.target)
            out.append(code.assign(depth, adj, expr, s.pos))

    def _self_assign(self, s, adj, depth, state, out):
        """``x = f(x, ...)``: the adjoint captured, the old value restored, then the rule."""
        g, result = self.naming.temp("g"), s.target
        start = len(out)
        out.append(code.assign(depth, g, code.name(adj), s.pos))
        state[g] = state[adj]
        if self._reads_result(s) and id(s) in self.plan.saves:
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

    def _reads_result(self, s):
        b = self.an.binding(s.op)
        return b is not None and any(
            b.template.params[0] in t.reads_values for t in self.an.template(b).stmts
        )

    def _setitem(self, s, depth, state, out):
        adj = self.naming.adjoint(s.target)
        entry = of(Ref(adj), "[", code.index_subscript(s.index), "]")
        if self.an.is_active_stmt(s) and state.get(adj, ZERO) != ZERO:
            self._inexact_part(s, adj, depth, state, out)
            body = lambda st, d: self._setitem_adjoint(s, adj, entry, st, d, out)  # noqa: E731
            state = self._guarded(adj, state, depth, out, body)
        written = of(Ref(s.target), "[", code.index_subscript(s.index), "]")
        self._restore(s, s.target, depth, out, entry=written)
        return state

    def _setitem_adjoint(self, s, adj, entry, state, depth, out):
        """``x[i] = v``: the entry's adjoint into v's, then zero at ``i``."""
        v = s.value
        if (
            isinstance(v, ir.Name)
            and v.id in self.an.active
            and s.target in self.an.fn.info.get("sequences", ())
        ):
            # an entry of a list: its adjoint may be ZERO (no reader reached it)
            self._entry_adjoint(self.naming.adjoint(v.id), entry, state, depth, out, s.pos)
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
            self._accumulate(self.naming.adjoint(v.id), expr, state, depth, out, s.pos)
        zeroed = fmt("{f}({a}, {i})", f=self.rt("zero_at"), a=adj, i=code.index_value(s.index))
        out.append(code.assign(depth, adj, zeroed, s.pos))
        return state

    def _append(self, s, depth, state, out):
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
        if id(s) in self.plan.saves and s.target in self.naming.shadows:
            # a list an object holds: the backward reads it as it was, never changing the object's
            out.append(code.assign(depth, s.target, fmt("{t}[:-1]", t=s.target), s.pos))
        elif id(s) in self.plan.saves:
            out.append(code.line(depth, fmt("{t}.pop()", t=s.target), s.pos))
        return state

    # ---- control flow ----------------------------------------------------------------------------
    def _if(self, s, depth, in_loop, state, out):
        c = self.swept.conds[id(s)]
        if in_loop:
            out.append(code.assign(depth, c, self.tape.pop(c)))
        body, else_ = [], []
        st1 = self._block(s.body, depth + 1, in_loop, dict(state), body)
        st2 = self._block(s.orelse, depth + 1, in_loop, dict(state), else_)
        merged, fix1, fix2 = join(st1, st2)
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

    def _loop(self, s, depth, in_loop, state, out):
        var = self.swept.counts[id(s)]
        if in_loop:
            out.append(code.assign(depth, var, self.tape.pop(var)))
            for array, _ in self.tape.allocations.get(id(s), ()):
                out.append(code.assign(depth, array, self.tape.pop(array)))
        header, trips = self._loop_header(s, depth, var)
        entry, body, end, before, dense = self._loop_body(s, depth, state)
        after = [n for n in entry if end.get(n, ZERO) == ZERO and entry[n] != ZERO]
        for n in before:
            if n in dense:
                zeros = fmt("{f}({p})", f=self.rt("zeros_like"), p=dense[n])
                out.append(code.assign(depth, n, zeros))
            else:
                out.append(self._zero(depth, n))
        checkpointed = id(s) in self.swept.loops
        folded = not before and not after and not checkpointed and _geometric(body, trips, self.rt)
        if folded:
            # (the numba variant's fusion moves only statements without info)
            info = None if self.jit else folded.info
            out.append(replace(folded, depth=depth, pos=s.pos, info=info))
        elif checkpointed and isinstance(s, ir.For):
            self._bwd_revolve(s, depth, body, after, out)
        elif checkpointed:
            self._bwd_periodic(s, depth, body, after, out)
        else:
            k = self.tape.counters.get(id(s))
            if k is not None:  # the trip index of the preallocated tapes, counted down
                out.append(code.assign(depth, k, trips))
                body.insert(0, code.augment(depth + 1, k, lit("1"), op="-="))
            out.append(header)
            out.extend(body)
            out += [self._zero(depth + 1, n) for n in after]
            if not body and not after:
                out.append(code.user(depth + 1, "pass"))
        if isinstance(s, ir.For):
            self._restore(s, s.target, depth, out)
        return entry

    def _loop_header(self, s, depth, var):
        """The backward loop's header over ``var``, and its number of trips (Code)."""
        if isinstance(s, ir.For):
            head = fmt("for {t} in {f}({v}):", t=s.target, f=self.rt("reversed"), v=var)
            header = code.header(depth, head, s.pos, (s.target,))
            return header, fmt("{f}({v})", f=self.rt("len"), v=var)
        head = fmt("for _ in {f}({v}):", f=self.rt("range"), v=var)
        return code.header(depth, head, s.pos, ("_",)), code.name(var)

    def _loop_body(self, s, depth, state):
        """The loop's backward body, built until the adjoint state at its head stops changing:
        (the state at its head, the body, the state at its end, the adjoints to start before
        it, those of them started as zero arrays: adjoint -> primal)."""
        entry = dict(state)
        snapshot = self.naming.snapshot()
        while True:
            body = []
            end = self._block(s.body, depth + 1, True, dict(entry), body)
            merged, _, _ = join(entry, end)
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
            end = self._block(s.body, depth + 1, True, dict(entry), body)
            self.owned = owned_before
        return entry, body, end, before, dense

    def _loop_invariant_adjoints(self, loop, names):
        """adjoint -> primal, for adjoints in ``names`` whose primal the loop never redefines
        and whose value the backward keeps current (so its shape is known before the loop)."""
        defined = defined_in(loop.body) | {
            s.target for s in ir.walk(loop.body) if isinstance(s, ir.SetItem)
        }
        primal = self.naming.primal_of
        out = {}
        for n in names:
            p = primal(n)
            if p is not None and p not in defined and p in self.plan.reads:
                out[n] = p
        return out


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
    if k is None or not is_number(k):
        return None
    f = rt("scale_repeated")
    st = code.assign(0, g, fmt("{f}({g}, {k}, {n})", f=f, g=g, k=lit(k), n=trips))
    # what optimize.fold_scales rebuilds the call from, with a factor after the loop
    return replace(st, info={"scale_repeated": (f, g, k, trips)})
