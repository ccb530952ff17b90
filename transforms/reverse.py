"""Reverse mode: the forward sweep and the backward sweep of a normalized function.

Expects: an ``ir.Function`` and an ``Analysis``. Guarantees: two lists of ``Line`` s. The forward
is the user's code, one operation per line, plus saves of the values that it overwrites and the
backward reads. The backward visits the statements in reverse; at each one every variable the
backward reads holds the value it had at that point of the forward (values are restored as the
backward passes their definitions), so each statement is replaced by its adjoint template.

Adjoint bookkeeping is static where it can be: each adjoint is known to be *zero* (never
written, or reset by a definition), *dense* (holds an array), or *maybe* (either; holds the
``ZERO`` sentinel at run time). The first contribution to a zero adjoint is an assignment, a
contribution read from a zero adjoint is dropped, and only *maybe* adjoints (after branches and
loops) cost a run-time test.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from . import ir
from .normalize import Tup
from .analyze import strip_unbroadcast
from .templates import instantiate

ZERO, DENSE, MAYBE = "zero", "dense", "maybe"


@dataclass
class Line:
    depth: int
    text: str
    pos: object = None  # ir.Pos of the user's statement this line comes from


@dataclass
class Reversed:
    forward: list
    backward: list
    outputs: list  # (param, expression) of the gradient, in wrt order
    restored: set  # primal names the backward assigns to
    uses_tape: bool
    free_names: set = field(default_factory=set)  # template globals the code uses
    result: object = None  # the returned atom
    mutates: bool = False


class Reverser:
    def __init__(self, fn, analysis, naming, wrt, check_finite=False):
        self.fn = fn
        self.an = analysis
        self.naming = naming
        self.wrt = list(wrt)
        self.reads = analysis.backward_reads() | set(self.wrt)
        self.shapes = analysis.shape_reads() - self.reads  # only shape and dtype are read
        self.shape_saves = set()  # ids of definitions that save shape_of(old value)
        self.saves = {}  # id(stmt) -> "tape" | saved variable name
        self.needs_init = set()
        self.conds = {}  # id(If) -> condition variable
        self.counts = {}  # id(loop) -> range/count variable
        self.free = set()  # runtime names the code uses
        self.free_objects = {}  # names adjoint templates use, with their objects
        self.restored = set()
        self.uses_tape = False
        self._bw_cache = {}
        self.check_finite = check_finite
        self.owned = set()  # adjoints updated in place: zero arrays of loop-invariant values

    # ---- planning ----------------------------------------------------------------------------
    def plan(self):
        self.order = {}
        self._number(self.fn.body, frozenset())
        defined = set(self.fn.params)
        self._plan_block(self.fn.body, set(self.fn.params), defined, False)

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
            elif isinstance(s, ir.Append):
                if s.target in self.reads:
                    self.saves[id(s)] = "pop"  # undone by popping: nothing to keep
            elif isinstance(s, ir.If):
                p1, d1 = set(possibly), set(definitely)
                p2, d2 = set(possibly), set(definitely)
                self._plan_block(s.body, p1, d1, in_loop)
                self._plan_block(s.orelse, p2, d2, in_loop)
                possibly |= p1 | p2
                definitely |= d1 & d2
            elif isinstance(s, (ir.For, ir.While)):
                inner = set(possibly) | _defined_in(s.body)
                if isinstance(s, ir.For):
                    self._plan_def(s, s.target, possibly, definitely, in_loop)
                    inner.add(s.target)
                self._plan_block(s.body, inner, set(definitely), True)
                possibly |= inner

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
        out = [Line(0, f"{n} = None") for n in sorted(self.needs_init)]
        self.release = self._releases()
        self._fwd_block(self.fn.body, 0, False, out)
        if self.uses_tape:  # known only now: branch flags and trip counts are taped as emitted
            out.insert(0, Line(0, "_tape = []"))
        return out

    def _save(self, s, expr, depth, out):
        where = self.saves.get(id(s))
        if where and id(s) in self.shape_saves:
            expr = f"shape_of({expr})"  # the backward needs only its shape: keep no array alive
            self.free.add("shape_of")
        if where == "tape":
            out.append(Line(depth, f"_tape.append({expr})", s.pos))
        elif where:
            out.append(Line(depth, f"{where} = {expr}", s.pos))

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
        for n in sorted((self.naming.temps & self.an.active) - self.reads - set(self.fn.params) - self.restored):
            d = defs.get(n, ())
            if len(d) != 1 or id(d[0]) not in top or not isinstance(d[0], ir.Assign):
                continue
            if isinstance(body[-1], ir.Return) and n in ir.atom_names(body[-1].value):
                continue  # the result
            after = max(last.get(n, -1), top[id(d[0])])
            out.setdefault(id(body[after]), []).append(n)
        if any(n in self.shapes for names in out.values() for n in names):
            self.free.add("shape_of")
        return out

    def _fwd_block(self, stmts, depth, in_loop, out):
        for s in stmts:
            self._fwd_stmt(s, depth, in_loop, out)
            for n in self.release.get(id(s), ()):  # top-level statements only
                if n in self.shapes:
                    out.append(Line(depth, f"{n} = shape_of({n})  # the backward needs only its shape"))
                else:
                    out.append(Line(depth, f"del {n}"))

    def _fwd_stmt(self, s, depth, in_loop, out):
        if isinstance(s, ir.Assign):
            self._save(s, s.target, depth, out)
            out.append(Line(depth, f"{s.target} = {s.op.text}", s.pos))
        elif isinstance(s, ir.SetItem):
            sub = f"{s.target}[{s.index.render()}]"
            self._save(s, f"copy_value({sub})", depth, out)
            if id(s) in self.saves:
                self.free.add("copy_value")
            out.append(Line(depth, f"{sub} = {s.value.render()}", s.pos))
        elif isinstance(s, ir.Append):
            out.append(Line(depth, f"{s.target}.append({s.value.render()})", s.pos))
        elif isinstance(s, ir.Effect):
            out.append(Line(depth, s.text, s.pos))
            self.free.update(s.needs)
        elif isinstance(s, ir.LoopExit):
            out.append(Line(depth, f"if {s.test}:", s.pos))
            out.append(Line(depth + 1, "break"))
        elif isinstance(s, ir.Return):
            pass
        elif isinstance(s, ir.If):
            self._fwd_if(s, depth, in_loop, out)
        elif isinstance(s, ir.For):
            self._fwd_for(s, depth, in_loop, out)
        elif isinstance(s, ir.While):
            self._fwd_while(s, depth, in_loop, out)

    def _fwd_if(self, s, depth, in_loop, out):
        if not self.has_backward(s):
            test = s.test
        else:
            test = self.conds[id(s)] = self.naming.temp("c")
            # a Python bool: the backward tests it again, and must not sync with a device again
            out.append(Line(depth, f"{test} = bool({s.test})", s.pos))
        out.append(Line(depth, f"if {test}:", s.pos))
        n = len(out)
        self._fwd_block(s.body, depth + 1, in_loop, out)
        if len(out) == n:
            out.append(Line(depth + 1, "pass"))
        if s.orelse:
            out.append(Line(depth, "else:"))
            self._fwd_block(s.orelse, depth + 1, in_loop, out)
        if in_loop and id(s) in self.conds:
            out.append(Line(depth, f"_tape.append({test})"))
            self.uses_tape = True

    def _fwd_for(self, s, depth, in_loop, out):
        self._save(s, s.target, depth, out)
        if not self.has_backward(s):
            out.append(Line(depth, f"for {s.target} in {s.range_text}:", s.pos))
            n = len(out)
            self._fwd_block(s.body, depth + 1, True, out)
            if len(out) == n:
                out.append(Line(depth + 1, "pass"))
            return
        r = self.counts[id(s)] = self.naming.temp("r")
        out.append(Line(depth, f"{r} = {s.range_text}", s.pos))
        count = _exits_early(s) and self.naming.temp("n")
        if count:
            out.append(Line(depth, f"{count} = 0", s.pos))
        out.append(Line(depth, f"for {s.target} in {r}:", s.pos))
        if count:
            out.append(Line(depth + 1, f"{count} += 1"))
        n = len(out)
        self._fwd_block(s.body, depth + 1, True, out)
        if len(out) == n:
            out.append(Line(depth + 1, "pass"))
        if count:  # the iterations that ran, for the backward to retrace
            out.append(Line(depth, f"{r} = {r}[:{count}]"))
        if in_loop:
            out.append(Line(depth, f"_tape.append({r})"))
            self.uses_tape = True

    def _fwd_while(self, s, depth, in_loop, out):
        if not self.has_backward(s):
            out.append(Line(depth, f"while {s.test}:", s.pos))
            n = len(out)
            self._fwd_block(s.body, depth + 1, True, out)
            if len(out) == n:
                out.append(Line(depth + 1, "pass"))
            return
        n = self.counts[id(s)] = self.naming.temp("n")
        out.append(Line(depth, f"{n} = 0", s.pos))
        out.append(Line(depth, f"while {s.test}:", s.pos))
        out.append(Line(depth + 1, f"{n} += 1"))
        self._fwd_block(s.body, depth + 1, True, out)
        if in_loop:
            out.append(Line(depth, f"_tape.append({n})"))
            self.uses_tape = True

    # ---- backward ----------------------------------------------------------------------------
    def backward(self, seed_name, result):
        state = {}
        out = []
        if isinstance(result, ir.Name) and result.id in self.an.active:
            adj = self.naming.adjoint(result.id)
            if adj != seed_name:
                out.append(Line(0, f"{adj} = {seed_name}"))
            state[adj] = DENSE
        state = self._bwd_block(self.fn.body, 0, False, state, out)
        outputs = []
        for p in self.wrt:
            adj = self.naming.adjoint(p)
            st = state.get(adj, ZERO)
            outputs.append((p, f"finalize({'ZERO' if st == ZERO else adj}, {p})"))
        self.free.update({"finalize", "ZERO"})
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

    def _restore(self, s, name, depth, out, expr=None):
        where = self.saves.get(id(s))
        if not where:
            return
        value = "_tape.pop()" if where == "tape" else where
        out.append(Line(depth, f"{expr or name} = {value}", s.pos))
        self.restored.add(name)

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
            out.append(Line(depth, f"{g} = {adj}", s.pos))
            state[g] = state[adj]
            if self._reads_result(s) and id(s) in self.saves:
                result = self.naming.temp("r")
                out.append(Line(depth, f"{result} = {s.target}", s.pos))
            state[adj] = ZERO
            self._restore(s, s.target, depth, out)
            state = self._guarded(g, state, depth, out, lambda st, d: self._template(s, g, result, st, d, out))
            state.pop(g, None)  # the captured adjoint is used up here
            _read_in_place(out, start, g, adj)
            return state
        state = self._guarded(g, state, depth, out, lambda st, d: self._template(s, g, result, st, d, out))
        state[adj] = ZERO
        self._restore(s, s.target, depth, out)
        return state

    def _reads_result(self, s):
        b = self.an.binding(s.op)
        return b is not None and any(b.template.params[0] in t.reads_values for t in self.an.template(b).stmts)

    def _guarded(self, g, state, depth, out, body):
        """Run ``body`` directly if adjoint ``g`` is dense, under ``if g is not ZERO`` if maybe."""
        if state.get(g, ZERO) == DENSE:
            return body(state, depth)
        self.free.add("ZERO")
        out.append(Line(depth, f"if {g} is not ZERO:"))
        inner = body(dict(state), depth + 1)
        merged, _, fix_skip = _join(inner, state)
        for name in fix_skip:  # the skipped path leaves these zero: say so for the merge
            out.append(Line(depth, "else:"))
            break
        for name in fix_skip:
            out.append(Line(depth + 1, f"{name} = ZERO"))
        return merged

    def _template(self, s, g, result, state, depth, out):
        op = s.op
        if op.kind == "copy":
            src = op.args[0]
            if isinstance(src, ir.Name) and src.id in self.an.active:
                self._accumulate(self.naming.adjoint(src.id), g, state, depth, out, s.pos)
            elif isinstance(src, Tup):  # t = (a, b): each entry's adjoint (ZERO where none came)
                for k, a in enumerate(src):
                    if isinstance(a, ir.Name) and a.id in self.an.active:
                        adj = self.naming.adjoint(a.id)
                        first = state.get(adj, ZERO) == ZERO
                        out.append(Line(depth, f"{adj} = {g}[{k}]" if first else f"{adj} = acc({adj}, {g}[{k}])", s.pos))
                        state[adj] = MAYBE
                        self.free.update({"acc", "ZERO"})
            return state
        b = self.an.binding(op)
        tmpl = self.an.template(b)
        values = {p: _render(v) for p, v in b.values.items()}
        values[tmpl.params[0]] = result
        adjoints = {tmpl.params[0]: g}
        tuples = {}
        for p in b.diff:
            v = b.values[p]
            if isinstance(v, ir.Name) and v.id in self.an.active:
                adjoints[p] = self.naming.adjoint(v.id)
            elif isinstance(v, Tup) and any(isinstance(a, ir.Name) and a.id in self.an.active for a in v):
                adjoints[p] = tuples[p] = self.naming.temp("gs")
            else:
                adjoints[p] = None
        for n in tmpl.free_names:
            obj = tmpl.namespace[n] if n in tmpl.namespace else __builtins__[n]
            if self.free_objects.setdefault(n, obj) is not obj:
                raise NameError(f"two adjoint rules use the name {n!r} for different objects ({tmpl.origin})")
        for inst in instantiate(tmpl, values, adjoints, lambda base: self.naming.temp("a")):
            if not inst.accumulate:
                out.append(Line(depth, f"{inst.target} = {inst.expr}", s.pos))
            elif inst.source_param in tuples:
                out.append(Line(depth, f"{inst.target} = {inst.expr}", s.pos))
                for k, a in enumerate(b.values[inst.source_param]):
                    if isinstance(a, ir.Name) and a.id in self.an.active:
                        self._accumulate(self.naming.adjoint(a.id), f"{inst.target}[{k}]", state, depth, out, s.pos)
            else:
                expr = inst.expr
                plan = self.an.unbroadcast_of(s, b, inst.source_param) if inst.source_param in b.values else None
                if plan is not None:
                    expr = strip_unbroadcast(expr, values[inst.source_param], plan)
                self._accumulate(inst.target, expr, state, depth, out, s.pos)
        return state

    def _loop_invariant_adjoints(self, loop, names):
        """adjoint -> primal, for adjoints in ``names`` whose primal the loop never redefines
        and whose value the backward keeps current (so its shape is known before the loop)."""
        defined = _defined_in(loop.body) | {s.target for s in ir.walk(loop.body) if isinstance(s, ir.SetItem)}
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
            text = f"{adj} = {expr}"
        elif st == DENSE and adj in self.owned:
            text = f"{adj} += {expr}"  # a zero array made before the loop, seen by no other name
        elif st == DENSE:
            text = f"{adj} = {adj} + {expr}"
        else:
            text = f"{adj} = acc({adj}, {expr})"
            self.free.add("acc")
        out.append(Line(depth, text, pos))
        state[adj] = DENSE
        if self.check_finite:
            where = f"{adj} at {os.path.basename(pos.filename)}:{pos.line}" if pos else adj
            out.append(Line(depth, f"check_finite({adj}, {where!r})", pos))
            self.free.add("check_finite")

    def _bwd_setitem(self, s, depth, state, out):
        adj = self.naming.adjoint(s.target)
        if self.an.is_active_stmt(s) and state.get(adj, ZERO) != ZERO:
            def body(st, d):
                v = s.value
                if isinstance(v, ir.Name) and v.id in self.an.active and s.target in self.an.fn.info.get("sequences", ()):
                    # an entry of a list: its adjoint may be ZERO (no reader reached it)
                    vadj = self.naming.adjoint(v.id)
                    entry = f"{adj}[{s.index.render()}]"
                    out.append(Line(d, f"{vadj} = acc({vadj}, {entry})" if st.get(vadj, ZERO) != ZERO else f"{vadj} = {entry}", s.pos))
                    st[vadj] = MAYBE
                    self.free.add("acc")
                elif isinstance(v, ir.Name) and v.id in self.an.active:
                    if _basic(s.index):
                        expr = f"unbroadcast({adj}[{s.index.render()}], {v.id})"
                        self.free.add("unbroadcast")
                    else:  # integer arrays may repeat an index: the last write wins
                        expr = f"written_part({adj}, {s.index.render_value()}, {v.id})"
                        self.free.add("written_part")
                    self._accumulate(self.naming.adjoint(v.id), expr, st, d, out, s.pos)
                out.append(Line(d, f"{adj} = zero_at({adj}, {s.index.render_value()})", s.pos))
                self.free.add("zero_at")
                return st
            state = self._guarded(adj, state, depth, out, body)
        self._restore(s, s.target, depth, out, expr=f"{s.target}[{s.index.render()}]")
        return state

    def _bwd_append(self, s, depth, state, out):
        adj = self.naming.adjoint(s.target)
        if self.an.is_active_stmt(s) and state.get(adj, ZERO) != ZERO:
            v = s.value
            if isinstance(v, ir.Name) and v.id in self.an.active:
                last = self.naming.temp("a")
                out.append(Line(depth, f"{last}, {adj} = split_last({adj})", s.pos))
                vadj = self.naming.adjoint(v.id)
                out.append(Line(depth, f"{vadj} = acc({vadj}, {last})" if state.get(vadj, ZERO) != ZERO else f"{vadj} = {last}", s.pos))
                state[vadj] = MAYBE
                self.free.update({"split_last", "acc"})
            else:
                out.append(Line(depth, f"{adj} = split_last({adj})[1]", s.pos))
                self.free.add("split_last")
            state[adj] = MAYBE
        if id(s) in self.saves:
            out.append(Line(depth, f"{s.target}.pop()", s.pos))
        return state

    def _bwd_if(self, s, depth, in_loop, state, out):
        c = self.conds[id(s)]
        if in_loop:
            out.append(Line(depth, f"{c} = _tape.pop()"))
        body, else_ = [], []
        st1 = self._bwd_block(s.body, depth + 1, in_loop, dict(state), body)
        st2 = self._bwd_block(s.orelse, depth + 1, in_loop, dict(state), else_)
        merged, fix1, fix2 = _join(st1, st2)
        body += [Line(depth + 1, f"{n} = ZERO") for n in fix1]
        else_ += [Line(depth + 1, f"{n} = ZERO") for n in fix2]
        if fix1 or fix2:
            self.free.add("ZERO")
        if not body and not else_:
            return merged
        if not body:
            out.append(Line(depth, f"if not {c}:", s.pos))
            out.extend(else_)
            return merged
        out.append(Line(depth, f"if {c}:", s.pos))
        out.extend(body)
        if else_:
            out.append(Line(depth, "else:"))
            out.extend(else_)
        return merged

    def _bwd_loop(self, s, depth, in_loop, state, out):
        var = self.counts[id(s)]
        if in_loop:
            out.append(Line(depth, f"{var} = _tape.pop()"))
        header = (f"for {s.target} in reversed({var}):" if isinstance(s, ir.For) else f"for _ in range({var}):")
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
            self.free.add("zeros_like")
        after = [n for n in entry if end.get(n, ZERO) == ZERO and entry[n] != ZERO]
        for n in before:
            out.append(Line(depth, f"{n} = zeros_like({dense[n]})" if n in dense else f"{n} = ZERO"))
        folded = not before and not after and _geometric(body, var if isinstance(s, ir.While) else f"len({var})")
        if folded:
            out.append(Line(depth, folded, s.pos))
            self.free.add("scale_repeated")
            if isinstance(s, ir.For):
                self._restore(s, s.target, depth, out)
            return entry
        out.append(Line(depth, header, s.pos))
        out.extend(body)
        out += [Line(depth + 1, f"{n} = ZERO") for n in after]
        if not body and not after:
            out.append(Line(depth + 1, "pass"))
        if before or after:
            self.free.add("ZERO")
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


def _render(v):
    if isinstance(v, (ir.Index, ir.Name, ir.Const)):
        return v.render_value() if isinstance(v, ir.Index) else v.render()
    if isinstance(v, Tup):
        return v.render()
    raise TypeError(v)


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


def release_dead(bwd, fwd, outputs, params):
    """The backward with ``del`` after the last use of each of its own variables (adjoints and
    temporaries it assigns at the top level, never forward values or parameters), so that memory
    is reused as soon as it is free, as in a hand-written backward. Variables last used inside a
    block stay until the end."""
    outer = set(params) | {n for line in fwd for n in ir.IDENT.findall(line.text)}
    outer |= {n for _, e in outputs for n in ir.IDENT.findall(e)}
    own = {m.group(1) for line in bwd if (m := _TARGET.match(line.text))} - outer
    last = {}
    for i, line in enumerate(bwd):
        for n in ir.IDENT.findall(line.text):
            if n in own:
                last[n] = i
    after = {}
    for n, i in last.items():
        if bwd[i].depth == 0 and not bwd[i].text.endswith(":"):
            after.setdefault(i, []).append(n)
    out = []
    for i, line in enumerate(bwd):
        out.append(line)
        if i in after:
            out.append(Line(0, "del " + ", ".join(sorted(after[i]))))
    return out


_TARGET = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:[-+*/]?=)(?!=)")
_COPY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) = ([A-Za-z_][A-Za-z0-9_]*)")
_ASSIGN_OP = re.compile(r"(?<![=!<>])(?:\*\*|//|[-+*/@%])?=(?!=)")


def propagate_copies(bwd, outputs):
    """The backward without copies between adjoints: ``a = b``, where nothing else assigns
    ``a`` and every use of ``a`` follows in the same block, at the same depth, before anything
    assigns ``b`` again, goes, and the uses read ``b``. The two names hold the same object there,
    so nothing changes but the reading (``h_bar = _t8_bar.dot(wh.T)``, not a chain of renames)."""
    out = list(bwd)
    keep = {n for _, e in outputs for n in ir.IDENT.findall(e)}
    i = 0
    while i < len(out):
        m = _COPY.fullmatch(out[i].text)
        if m and m[1] not in keep and m[1] != m[2] and _propagate(out, i, m[1], m[2]):
            del out[i]
        else:
            i += 1
    return out


def _propagate(out, i, a, b):
    depth, uses = out[i].depth, []
    for k, line in enumerate(out):
        if k != i and a in ir.IDENT.findall(line.text):
            if a in _assigned(line.text) or k < i or line.depth != depth:
                return False
            uses.append(k)
    if not uses or any(out[k].depth < depth or b in _assigned(out[k].text) for k in range(i + 1, uses[-1])):
        return False
    use = re.compile(rf"(?<![\w.]){a}\b")
    for k in uses:
        out[k] = Line(out[k].depth, use.sub(b, out[k].text), out[k].pos)
    return True


def _assigned(text):
    """The names a generated line assigns (its targets, a loop's variable): a safe over-estimate."""
    if text.startswith("for "):
        return set(ir.IDENT.findall(text[4: text.find(" in ")]))
    m = _ASSIGN_OP.search(text)
    return set(ir.IDENT.findall(text[: m.start()])) if m else set()


def _read_in_place(out, start, g, adj):
    """``_g = y_bar; y_bar = _g * 2`` -> ``y_bar = y_bar * 2`` where that is the only use of ``_g``."""
    uses = [i for i in range(start + 1, len(out)) if g in ir.IDENT.findall(out[i].text)]
    if len(uses) != 1 or not out[uses[0]].text.startswith(f"{adj} = "):
        return
    if any(adj in ir.IDENT.findall(out[i].text) for i in range(start + 1, uses[0])):
        return
    k = uses[0]
    out[k] = Line(out[k].depth, re.sub(rf"\b{g}\b", adj, out[k].text), out[start].pos)
    del out[start]


_LITERAL = r"[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9]+)?"
_NUMBER = rf"(?:{_LITERAL}|\(-{_LITERAL}\))"  # as ir.Const renders a number
_SCALE = re.compile(rf"(?P<g>[A-Za-z_][A-Za-z0-9_]*) = (?:(?P=g) \* (?P<k>{_NUMBER})|(?P<k2>{_NUMBER}) \* (?P=g))")


def _geometric(body, trips):
    """A backward loop body that only scales one adjoint by a number, ``g = g * k``, in closed
    form: ``g = scale_repeated(g, k, trips)`` (one multiplication by ``k ** trips``), as a
    hand-written backward folds ``while ...: y = y * 2`` into one scale factor. None otherwise."""
    if len(body) != 1:
        return None
    m = _SCALE.fullmatch(body[0].text)
    if m is None:
        return None
    return f"{m['g']} = scale_repeated({m['g']}, {m['k'] or m['k2']}, {trips})"


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
