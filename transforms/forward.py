"""Forward mode: each primal statement followed by its tangent statement.

Expects: the normalized IR (one operation per statement, ``exits`` lowered, ``sequences``
rewritten), its bindings and an ``Analysis`` for the ``wrt`` parameters. Guarantees: a list of
``code.Stmt`` that computes the primal as the user wrote it and, after every statement that
defines an active value (one that depends on ``wrt`` and reaches the result), the tangent of that
value as ``x_dot`` (``naming.tangent``). Branches and loops are copied through (no tape). Zero
tangents are tracked statically: a value whose tangent is zero on every path gets no tangent
statement at all, and the ``ZERO`` sentinel appears only where a tangent is zero on some path
and not on another (made a real zero array by ``materialize`` where a rule reads it). An
in-place write ``a[i] = v`` writes ``a_dot[i] = v_dot`` into a tangent this function owns (a copy
is made before the first write into a tangent it may share).

Tangent rules come from ``rules/tangents.py``; an active operand reaching a primitive with none is
refused here, at compile time, at the user's line (``MissingTangentError``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sourcegrad.runtime as _runtime
from sourcegrad.runtime import tangents as _rt_tangents

from sourcegrad.errors import MissingTangentError

from . import code, fence, ir
from .code import fmt, lit
from .forward_rules import RuleKinds
from .forward_statements import Statements
from .states import DENSE, MAYBE, ZERO
from .states import join as _join_states


@dataclass
class Forward:
    body: list  # code.Stmt
    result: object  # the returned atom
    tangent_out: object  # Code of the result's tangent
    params: tuple
    tangent_params: tuple  # the tangent parameter of each wrt parameter, in order
    tangent_first: bool = False  # return (tangent, value): the form ``hvp`` differentiates


def forward(src, fn, analysis, naming, wrt, bind):
    return Forwarder(src, fn, analysis, naming, wrt, bind).run()


def _join(a, b):
    """The state after a merge of two paths (zero tangents left out), and the names each path
    must set to ``ZERO``: the reverse pass's join of adjoint states."""
    merged, fix_a, fix_b = _join_states(a, b)
    return {n: s for n, s in merged.items() if s != ZERO}, fix_a, fix_b


class Forwarder(Statements, RuleKinds):
    def __init__(self, src, fn, analysis, naming, wrt, bind):
        self.src, self.fn, self.an, self.naming, self.wrt, self.bind = (
            src,
            fn,
            analysis,
            naming,
            list(wrt),
            bind,
        )
        self.active = analysis.active
        counts = _read_counts(fn.body)
        # for each block statement: the names read outside it (anywhere else in the function)
        self.outside = {
            id(b): {n for n, k in counts.items() if k > _read_counts(_inner(b)).get(n, 0)}
            for b in ir.walk(fn.body)
            if isinstance(b, (ir.If, ir.For, ir.While))
        }
        self.carried = []  # the names the loops around the statement being built carry
        # names bound by the function's top level so far (not in a block)
        self.defined = set(fn.params)
        self.loop_exits = []  # stack: (the head state, the states at each LoopExit) of the loops being built

    # ---- names ---------------------------------------------------------------------------------
    def dot(self, name):
        return self.naming.tangent(name)

    def rt(self, name):
        """The name the generated code calls the runtime's ``name`` by (``runtime/tangents.py`` first)."""
        return self.bind(name, getattr(_rt_tangents, name, None) or getattr(_runtime, name))

    def zero_fix(self, depth, names, out):
        for n in names:
            out.append(code.assign(depth, self.dot(n), code.name(self.rt("ZERO"))))

    # ---- the function ---------------------------------------------------------------------------
    def run(self):
        state = {p: DENSE for p in self.wrt if p in self.active}
        owned = set()
        out = []
        body = self.fn.body
        state, owned = self.block(body[:-1], 0, state, owned, out)
        ret = body[-1]
        result = ret.value
        tangent = self.tangent_value(result, state, 0, out)
        if tangent is None:
            tangent = fmt("{f}({v})", f=self.rt("tangent_zeros"), v=code.atom(result))
        tparams = tuple(self.dot(p) for p in self.wrt)
        return Forward(out, result, tangent, tuple(self.fn.params), tparams)

    def tangent_value(self, atom, state, depth, out):
        """Code of ``atom``'s tangent as a value (materialized), or None where it is zero."""
        if not isinstance(atom, ir.Name) or state.get(atom.id, ZERO) == ZERO:
            return None
        if state[atom.id] == MAYBE:
            self.materialize(atom.id, state, depth, out)
        return code.name(self.dot(atom.id))

    def materialize(self, name, state, depth, out):
        if state.get(name) == MAYBE:
            d = self.dot(name)
            out.append(
                code.assign(depth, d, fmt("{f}({t}, {x})", f=self.rt("materialize"), t=d, x=name))
            )
            state[name] = DENSE

    # ---- blocks ---------------------------------------------------------------------------------
    def block(self, stmts, depth, state, owned, out):
        for s in stmts:
            state, owned = self.stmt(s, depth, state, owned, out)
        return state, owned

    def block_or_pass(self, stmts, depth, state, owned, out):
        n = len(out)
        state, owned = self.block(stmts, depth, state, owned, out)
        if len(out) == n:
            out.append(code.user(depth, "pass"))
        return state, owned

    def stmt(self, s, depth, state, owned, out):
        state = dict(state)
        if isinstance(s, ir.Assign):
            if depth == 0:
                self.defined.add(s.target)  # (read by loops after it: the primal exists there)
            return self.assign(s, depth, state, owned, out)
        if isinstance(s, ir.SetItem):
            return self.setitem(s, depth, state, owned, out)
        if isinstance(s, ir.Append):
            return self.append(s, depth, state, owned, out)
        if isinstance(s, ir.Effect):
            out.append(code.user(depth, s.text, s.pos, ir.reads(s)))
            return state, owned
        if isinstance(s, ir.LoopExit):
            head, exits = self.loop_exits[-1]
            exits.append(dict(state))
            self.zero_fix(depth, sorted(n for n in head if state.get(n, ZERO) == ZERO), out)
            out.append(code.user(depth, f"if {s.test}:", s.pos, ir.reads(s), opens=True))
            out.append(code.user(depth + 1, "break"))
            return state, owned
        if isinstance(s, ir.If):
            return self.if_(s, depth, state, owned, out)
        if isinstance(s, (ir.For, ir.While)):
            return self.loop(s, depth, state, owned, out)
        raise fence.located(
            MissingTangentError,
            self.src,
            s.pos,
            f"forward mode does not handle this statement ({type(s).__name__})",
            "",
        )

    def if_(self, s, depth, state, owned, out):
        out.append(code.user(depth, f"if {s.test}:", s.pos, ir.reads(s), opens=True))
        body, orelse = [], []
        st1, ow1 = self.block_or_pass(s.body, depth + 1, state, owned, body)
        st2, ow2 = self.block(s.orelse, depth + 1, state, owned, orelse)
        # a tangent made and used inside a branch stays there (unless a loop around carries it)
        keep = self.outside[id(s)] | set(state) | set().union(*self.carried)
        merged, fix1, fix2 = _join(_only(st1, keep), _only(st2, keep))
        self.zero_fix(depth + 1, fix1, body)
        self.zero_fix(depth + 1, fix2, orelse)
        out.extend(body)
        if orelse:
            out.append(code.header(depth, lit("else:")))
            out.extend(orelse)
        return merged, ow1 & ow2

    def loop(self, s, depth, state, owned, out):
        """A loop's tangents: the state at its head is the join of the state before it, after its
        body, and at each exit (found by building the body until that join stops changing)."""
        keep = (
            self.outside[id(s)] | _exposed(s.body, set()) | set(state) | set().union(*self.carried)
        )
        self.carried.append(keep)
        try:
            return self._loop(s, depth, state, owned, out, keep)
        finally:
            self.carried.pop()

    def _loop(self, s, depth, state, owned, out, keep):
        settled = self.settle(s, depth, state, owned, keep)
        early = self._written_only(s, settled[0], settled[1])
        if early:
            state, owned = self._own_early(s, early, depth, state, owned, out)
            settled = self.settle(s, depth, state, owned, keep)
        state, settled = self._zeros_before(s, depth, state, owned, keep, settled, out)
        head, head_owned, (body, end, _) = settled
        _, fix_entry, _ = _join(state, head)
        self.zero_fix(depth, [n for n in fix_entry if head.get(n) == MAYBE], out)
        _, fix_end, _ = _join(end, head)
        self.zero_fix(depth + 1, [n for n in fix_end if end.get(n, ZERO) == ZERO], body)
        if isinstance(s, ir.For):
            head_text = f"for {s.target} in {s.range_text}:"
            out.append(code.user(depth, head_text, s.pos, ir.reads(s), (s.target,), True))
        else:
            out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
        out.extend(body if body else [code.user(depth + 1, "pass")])
        return head, head_owned

    def _written_only(self, s, head, head_owned):
        """The tangents loop ``s`` writes into and never redefines, not yet owned at its head:
        made this function's own once, before the loop, rather than copied in every iteration."""
        written = {x.target for x in ir.walk(s.body) if isinstance(x, (ir.SetItem, ir.Append))}
        defined = {x.target for x in ir.walk(s.body) if isinstance(x, ir.Assign)}
        return sorted(
            n for n in (written - defined) & set(head) if n in self.active and n not in head_owned
        )

    def _own_early(self, s, early, depth, state, owned, out):
        state, owned = dict(state), set(owned)
        for n in early:
            t = self.dot(n)
            f = (
                "seq_tangent"
                if any(isinstance(x, ir.Append) and x.target == n for x in ir.walk(s.body))
                else "owned_tangent"
            )
            zero = state.get(n, ZERO) == ZERO
            expr = (
                fmt(
                    "{f}({x})",
                    f=self.rt("tangent_zeros" if f == "owned_tangent" else "seq_zeros"),
                    x=n,
                )
                if zero
                else fmt("{f}({t}, {x})", f=self.rt(f), t=t, x=n)
            )
            out.append(code.assign(depth, t, expr, s.pos))
            state[n] = DENSE
            owned.add(n)
        return state, owned

    def _zeros_before(self, s, depth, state, owned, keep, settled, out):
        """A tangent that is zero on entry and that the loop makes dense starts as a zero array
        before the loop, as the reverse pass starts adjoints a loop adds into: one array instead
        of a ZERO test in every iteration, and shape inference then knows the tangent's shape.
        The state before the loop and the loop settled from it."""
        head = settled[0]
        zeros = [
            n
            for n in sorted(head)
            if head[n] == MAYBE and state.get(n, ZERO) == ZERO and depth == 0 and n in self.defined
        ]
        for _ in range(2):  # (a name some path in the loop still leaves zero keeps its ZERO test)
            if not zeros:
                break
            tried = self.settle(s, depth, {**state, **dict.fromkeys(zeros, DENSE)}, owned, keep)
            if all(tried[0].get(n) == DENSE for n in zeros):
                for n in zeros:
                    made = fmt("{f}({x})", f=self.rt("tangent_zeros"), x=n)
                    out.append(code.assign(depth, self.dot(n), made))
                return {**state, **dict.fromkeys(zeros, DENSE)}, tried
            zeros = [n for n in zeros if tried[0].get(n) == DENSE]
        return state, settled

    def settle(self, s, depth, state, owned, keep):
        """Build the loop's body until the state at its head stops changing."""
        head, head_owned = _only(state, keep), set(owned)
        for _ in range(8):
            body, exits = [], []
            self.loop_exits.append((head, exits))
            end, end_owned = self.block(s.body, depth + 1, head, head_owned, body)
            self.loop_exits.pop()
            joined, _, _ = _join(head, _only(end, keep))
            for st in exits:
                joined, _, _ = _join(joined, _only(st, keep))
            joined_owned = head_owned & end_owned
            if joined == head and joined_owned == head_owned:
                break
            head, head_owned = joined, joined_owned
        else:  # states only rise: this is never reached
            raise AssertionError("forward mode: loop states did not settle")
        return head, head_owned, (body, _only(end, keep), exits)


def _only(state, keep):
    return {n: v for n, v in state.items() if n in keep}


def _inner(block):
    if isinstance(block, ir.If):
        return list(block.body) + list(block.orelse)
    return list(block.body)


def _read_counts(stmts):
    counts = {}
    for x in ir.walk(stmts):
        for n in ir.reads(x):
            counts[n] = counts.get(n, 0) + 1
    return counts


def _exposed(stmts, defined):
    """Names some statement of ``stmts`` may read before the block defines them (a loop body's
    loop-carried values); ``defined`` grows with what the block surely defines."""
    out = set()
    for x in stmts:
        out |= ir.reads(x) - defined
        if isinstance(x, ir.If):
            d1, d2 = set(defined), set(defined)
            out |= _exposed(x.body, d1) | _exposed(x.orelse, d2)
            defined |= d1 & d2
        elif isinstance(x, (ir.For, ir.While)):
            out |= _exposed(x.body, set(defined) | ({x.target} if isinstance(x, ir.For) else set()))
        elif isinstance(x, ir.Assign):
            defined.add(x.target)
    return out
