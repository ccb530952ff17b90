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
from sourcegrad.errors import MissingTangentError
from sourcegrad.runtime import tangents as _rt_tangents

from . import code, fence, ir
from .code import Ref, fmt, lit, of
from .ir import Tup
from .rules import tangents as TR
from .templates import Template, instantiate

from .reverse import DENSE, MAYBE, ZERO, _join as _join_states  # noqa: E402  (one join for both modes)

_SLOT = "__sg_slot__"  # the result's adjoint in an adjoint template read as a slope


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


class Forwarder:
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
        written = {x.target for x in ir.walk(s.body) if isinstance(x, (ir.SetItem, ir.Append))}
        defined = {x.target for x in ir.walk(s.body) if isinstance(x, ir.Assign)}
        head, head_owned, owned_early = self.settle(s, depth, state, owned, keep)
        # a tangent written into in the loop, never redefined there: made this function's own once,
        # before the loop, rather than copied in every iteration
        early = sorted(
            n for n in (written - defined) & set(head) if n in self.active and n not in head_owned
        )
        if early:
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
            head, head_owned, owned_early = self.settle(s, depth, state, owned, keep)
        # a tangent that is zero on entry and that the loop makes dense starts as a zero array
        # before the loop, as the reverse pass starts adjoints a loop adds into: one array instead
        # of a ZERO test in every iteration, and shape inference then knows the tangent's shape
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
                    out.append(
                        code.assign(
                            depth, self.dot(n), fmt("{f}({x})", f=self.rt("tangent_zeros"), x=n)
                        )
                    )
                state = {**state, **dict.fromkeys(zeros, DENSE)}
                head, head_owned, owned_early = tried
                break
            zeros = [n for n in zeros if tried[0].get(n) == DENSE]
        body, end, exits = owned_early
        _, fix_entry, _ = _join(state, head)
        self.zero_fix(depth, [n for n in fix_entry if head.get(n) == MAYBE], out)
        _, fix_end, _ = _join(end, head)
        self.zero_fix(depth + 1, [n for n in fix_end if end.get(n, ZERO) == ZERO], body)
        if isinstance(s, ir.For):
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
        else:
            out.append(code.user(depth, f"while {s.test}:", s.pos, ir.reads(s), opens=True))
        out.extend(body if body else [code.user(depth + 1, "pass")])
        return head, head_owned

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

    # ---- statements -----------------------------------------------------------------------------
    def primal(self, s, depth, out):
        out.append(code.user(depth, f"{s.target} = {s.op.text}", s.pos, ir.reads(s), (s.target,)))

    def assign(self, s, depth, state, owned, out):
        owned = owned - {s.target}
        op = s.op
        if s.target not in self.active or op.kind not in ("call", "copy"):
            self.primal(s, depth, out)
            state.pop(s.target, None)
            return state, owned
        if op.kind == "copy":
            return self.copy(s, depth, state, owned, out)
        b = self.an.binding(op)
        live = {p for p in b.diff if self._has_tangent(b.values[p], state)}
        if not live:
            self.primal(s, depth, out)
            state.pop(s.target, None)
            return state, owned
        rule = TR.lookup(op.key, b.template) if not isinstance(op.key, Template) else None
        custom = isinstance(op.key, Template) and (
            _custom_class(op.key) or _gradient_callee(op.key)
        )
        if rule is None and not custom:
            self.refuse(s, b, live)
        for p in sorted(live):  # a rule reads each tangent as a value
            for a in _names(b.values[p]):
                if state.get(a) == MAYBE:
                    self.materialize(a, state, depth, out)
        old = self.naming.temp("old") if s.target in op.arg_names() else None
        before = len(out)
        self.primal(s, depth, out)
        values = self.values(b, s.target, old)
        if custom:
            expr = self.custom(op, b, custom, values, state, s, depth, out)
        elif rule.kind == "slope":
            expr = self.slope(b, values, live, state, s, depth, out)
        elif rule.kind == "linear":
            expr = self.linear(op, b, live, state, old, s, depth, out)
        elif rule.kind == "multilinear":
            expr = self.multilinear(op, b, live, state, old, s, depth, out)
        else:
            expr = self.template(rule.template, b, values, live, state, s, depth, out)
        out.append(code.assign(depth, self.dot(s.target), expr, s.pos))
        if custom or (rule.kind == "slope" and _bare(expr)):
            # the tangent may be an operand's tangent itself where the primal is a new array
            # (``b = a + 0.0``: ``b_dot = a_dot``): a write into either must copy first
            owned = owned - set(op.arg_names())
        elif rule.kind == "slope":  # arithmetic on the tangent: a new array of this function's own
            owned = owned | {s.target}
        if old is not None and any(old in st.mentions for st in out[before:]):
            out.insert(before, code.assign(depth, old, code.name(s.target), s.pos))
        state[s.target] = DENSE
        return state, owned

    def _has_tangent(self, atom, state):
        return any(state.get(n, ZERO) != ZERO for n in _names(atom))

    def values(self, b, target, old):
        def value(a):
            if old is not None and isinstance(a, ir.Name) and a.id == target:
                return code.name(old)
            if old is not None and isinstance(a, (Tup, ir.Index)) and target in ir.atom_names(a):
                return code.atom(a).rename({target: old})
            return code.atom(a)

        out = {p: value(v) for p, v in b.values.items()}
        out[b.template.params[0]] = code.name(target)
        return out

    def refuse(self, s, b, live):
        callee = s.op.text.split("(")[0] if "(" in s.op.text else s.op.text
        param = sorted(live)[0]
        raise fence.located(
            MissingTangentError,
            self.src,
            s.node if s.node is not None else s.pos,
            f"no tangent rule for {callee} (forward mode; its parameter {param!r} gets a value that depends on "
            f"the differentiated input, in {self.src.fn.__qualname__})",
            "sourcegrad.jvp and jacfwd need a tangent rule for every primitive an input's tangent reaches; "
            "use sourcegrad.vjp or sourcegrad.jacobian (reverse mode), or wrap the value in "
            "sourcegrad.stop_gradient(...) if no derivative should flow through it",
        )

    def copy(self, s, depth, state, owned, out):
        src = s.op.args[0]
        self.primal(s, depth, out)
        if isinstance(src, ir.Name):
            st = state.get(src.id, ZERO)
            if st == ZERO:
                state.pop(s.target, None)
            else:
                out.append(
                    code.assign(depth, self.dot(s.target), code.name(self.dot(src.id)), s.pos)
                )
                state[s.target] = st
            return state, owned
        if isinstance(src, Tup) and any(self._has_tangent(a, state) for a in src):
            items = [self.entry_tangent(a, state, depth, out) for a in src]
            inner = code.join(items)
            expr = (
                of("[", inner, "]")
                if src.is_list
                else of("(", inner, ",)" if len(items) == 1 else ")")
            )
            out.append(code.assign(depth, self.dot(s.target), expr, s.pos))
            state[s.target] = DENSE
            return state, owned
        state.pop(s.target, None)
        return state, owned

    def entry_tangent(self, a, state, depth, out):
        """An operand's tangent as a value, zeros shaped like it where it has none."""
        if isinstance(a, Tup):
            items = [self.entry_tangent(x, state, depth, out) for x in a]
            inner = code.join(items)
            return (
                of("[", inner, "]")
                if a.is_list
                else of("(", inner, ",)" if len(items) == 1 else ")")
            )
        t = self.tangent_value(a, state, depth, out) if isinstance(a, ir.Name) else None
        return t if t is not None else fmt("{f}({v})", f=self.rt("tangent_zeros"), v=code.atom(a))

    # ---- the kinds of rule ------------------------------------------------------------------------
    def slope(self, b, values, live, state, s, depth, out):
        """``y_dot = x_dot * SLOPE`` read off the adjoint template (``rules/tangents.py``)."""
        t = b.template
        adjoints = {t.params[0]: _SLOT}
        for p in t.signature():
            adjoints[p] = f"__sg_{p}__" if p in live else None
        terms = []
        for inst in instantiate(t, values, adjoints, lambda base: self.naming.temp("a"), self.bind):
            if not inst.accumulate:
                out.append(code.assign(depth, inst.target, inst.expr, s.pos))
                continue
            expr = inst.inner if inst.inner is not None else inst.expr
            tangent = self.dot(b.values[inst.source_param].id)
            terms.append(expr.rename({_SLOT: tangent}))
        if len(terms) == 2 and terms[0] == terms[1]:  # y * y: both operands give the same term
            terms = [of("2 * (", terms[0], ")")]
        total = code.join(terms, " + ")
        if any(
            p not in live and not (isinstance(v, ir.Const) and type(v.value) in (int, float))
            for p, v in b.values.items()
            if p != t.params[0]
        ):
            # keep the result's shape
            total = fmt("{f}({e}, {z})", f=self.rt("expand"), e=total, z=s.target)
        return total

    def substituted(self, op, b, replace, required=()):
        """The call ``op`` with the operands of the parameters in ``replace`` (param -> Code)
        replaced. Operands are matched to parameters by identity, in order."""
        targets = []  # (param, atom) to find among the call's operands
        for p, c in replace.items():
            targets.append((p, b.values[p], c, p in required))
        args = list(op.args)
        kwargs = list(op.kwargs)
        rendered_args = [None] * len(args)
        rendered_kw = [None] * len(kwargs)
        for p, atom, c, needed in targets:
            for i, a in enumerate(args):
                if a is atom and rendered_args[i] is None:
                    rendered_args[i] = c
                    break
            else:
                for i, (k, a) in enumerate(kwargs):
                    if a is atom and rendered_kw[i] is None:
                        rendered_kw[i] = c
                        break
                else:
                    if needed:
                        return None
        parts = [
            rendered_args[i] if rendered_args[i] is not None else code.atom(a)
            for i, a in enumerate(args)
        ]
        parts += [
            of(f"{k}=", rendered_kw[i] if rendered_kw[i] is not None else code.atom(a))
            for i, (k, a) in enumerate(kwargs)
        ]
        return self.call(op.key, parts, args)

    def call(self, key, parts, args):
        import operator

        import numpy as np

        if key is operator.getitem:
            return of(
                parts[0],
                "[",
                code.index_subscript(args[1]) if isinstance(args[1], ir.Index) else parts[1],
                "]",
            )
        infix = {operator.matmul: " @ ", operator.mul: " * "}.get(key)
        if infix is not None:
            return of(parts[0], infix, parts[1])
        return of(self.callee(key, np), "(", code.join(parts), ")")

    def callee(self, key, np):
        name = getattr(key, "__name__", None)
        for prefix, module in (("", np), ("linalg.", np.linalg), ("fft.", np.fft)):
            if name and getattr(module, name, None) is key:
                return of(Ref(self.bind("np", np)), f".{prefix}{name}")
        ufunc_of = getattr(key, "__self__", None)  # np.add.reduce
        if isinstance(ufunc_of, np.ufunc) and getattr(np, ufunc_of.__name__, None) is ufunc_of:
            return of(Ref(self.bind("np", np)), f".{ufunc_of.__name__}.{name}")
        return code.name(self.bind(name or "f", key))

    def linear(self, op, b, live, state, old, s, depth, out):
        """The same function of the tangents; a differentiated operand without one is zeros."""
        replace = {}
        for p in b.diff:
            v = b.values[p]
            if p in live:
                replace[p] = self.entry_tangent(v, state, depth, out)
            elif not (isinstance(v, ir.Const) and v.value is None):  # None: not given
                replace[p] = (
                    self.entry_tangent(v, state, depth, out)
                    if isinstance(v, Tup)
                    else fmt("{f}({v})", f=self.rt("tangent_zeros"), v=code.atom(v))
                )
        expr = self.substituted(op, b, replace, live)
        if expr is None:
            self.refuse(s, b, live)
        if old is not None:
            expr = expr.rename({s.target: old})
        return expr

    def multilinear(self, op, b, live, state, old, s, depth, out):
        """The product rule: one term per operand with a tangent."""
        terms = []
        for p in sorted(live, key=lambda p: b.template.params.index(p)):
            term = self.substituted(
                op, b, {p: self.entry_tangent(b.values[p], state, depth, out)}, {p}
            )
            if term is None:
                self.refuse(s, b, live)
            terms.append(term.rename({s.target: old}) if old is not None else term)
        return code.join(terms, " + ")

    def template(self, t, b, values, live, state, s, depth, out):
        """A tangent template: one ``d[y] += E`` term per operand with a tangent."""
        tangents = {p: (self.dot(b.values[p].id) if p in live else None) for p in t.signature()}
        for p in live:
            if not isinstance(b.values[p], ir.Name):
                self.refuse(s, b, live)
        covered = set().union(*(st.reads_adjoints for st in t.stmts if st.accumulate))
        if live - covered:  # the rule gives no term for that operand's tangent
            self.refuse(s, b, live - covered)
        kept = tuple(
            st
            for st in t.stmts
            if not st.accumulate or all(tangents.get(r) for r in st.reads_adjoints)
        )
        adjoints = dict(tangents)
        adjoints[t.params[0]] = _SLOT
        view = Template(t.params, t.defaults, kept, t.free_names, t.namespace, t.origin)
        terms = []
        for inst in instantiate(
            view, values, adjoints, lambda base: self.naming.temp("a"), self.bind
        ):
            if inst.accumulate:
                terms.append(inst.expr)
            else:
                out.append(code.assign(depth, inst.target, inst.expr, s.pos))
        return code.join(terms, " + ")

    def custom(self, op, b, cls, values, state, s, depth, out):
        tuple_of = lambda items: of("(", code.join(items), ",)" if len(items) == 1 else ")")  # noqa: E731
        if not isinstance(cls, type):  # a gradient made by sourcegrad: its second derivatives
            xs = list(b.template.signature())
            ts = [
                self.tangent_value(b.values[p], state, depth, out) or code.name(self.rt("ZERO"))
                for p in xs
            ]
            return fmt(
                "{f}({g}, {xs}, {ts})",
                f=self.rt("tangent_of_gradient"),
                g=code.name(_gradient_alias(op.key)),
                xs=tuple_of([values[p] for p in xs]),
                ts=tuple_of(ts),
            )
        if getattr(cls, "jvp", None) is None:
            raise fence.located(
                MissingTangentError,
                self.src,
                s.node if s.node is not None else s.pos,
                f"{cls.__qualname__} has no jvp: forward mode through a sourcegrad.Function needs "
                f"jvp(ctx, *tangents) (in {self.src.fn.__qualname__})",
                f"define @staticmethod jvp(ctx, *tangents) on {cls.__qualname__} returning the output's tangent, "
                "or use reverse mode (sourcegrad.vjp, sourcegrad.jacobian)",
            )
        xs = [p for p in b.template.signature() if p != "ctx"]
        ctx = values["ctx"]
        ts = [
            self.tangent_value(b.values[p], state, depth, out) or code.name(self.rt("ZERO"))
            for p in xs
        ]
        return fmt(
            "{f}({c}, {ctx}, {xs}, {ts})",
            f=self.rt("custom_jvp"),
            c=code.name(_custom_alias(op.key)),
            ctx=ctx,
            xs=tuple_of([values[p] for p in xs]),
            ts=tuple_of(ts),
        )

    # ---- writes ---------------------------------------------------------------------------------
    def setitem(self, s, depth, state, owned, out):
        entry = of(Ref(s.target), "[", code.index_subscript(s.index), "]")
        line = code.line(depth, of(entry, " = ", code.atom(s.value)), s.pos)
        has_v = self._has_tangent(s.value, state)
        if s.target not in self.active or (not has_v and state.get(s.target, ZERO) == ZERO):
            out.append(line)
            if s.target not in self.active:
                state.pop(s.target, None)
            return state, owned
        t = self.dot(s.target)
        if s.target not in owned:  # the tangent may be shared: write into a copy (zeros where ZERO)
            out.append(
                code.assign(
                    depth,
                    t,
                    fmt("{f}({t}, {x})", f=self.rt("owned_tangent"), t=t, x=s.target)
                    if state.get(s.target, ZERO) != ZERO
                    else fmt("{f}({x})", f=self.rt("tangent_zeros"), x=s.target),
                    s.pos,
                )
            )
            owned = owned | {s.target}
        out.append(line)
        v = self.tangent_value(s.value, state, depth, out) if isinstance(s.value, ir.Name) else None
        out.append(
            code.line(
                depth,
                of(
                    Ref(t),
                    "[",
                    code.index_subscript(s.index),
                    "] = ",
                    v if v is not None else lit("0.0"),
                ),
                s.pos,
            )
        )
        state[s.target] = DENSE
        return state, owned

    def append(self, s, depth, state, owned, out):
        line = code.line(depth, fmt("{t}.append({v})", t=s.target, v=code.atom(s.value)), s.pos)
        has_v = self._has_tangent(s.value, state)
        if s.target not in self.active or (not has_v and state.get(s.target, ZERO) == ZERO):
            out.append(line)
            return state, owned
        if any(
            isinstance(x, ir.Assign)
            and x.op.kind == "copy"
            and s.target in ir.atom_names(x.op.args[0])
            for x in ir.walk(self.fn.body)
        ):
            raise fence.located(
                MissingTangentError,
                self.src,
                s.pos,
                f"forward mode cannot append to {s.target}: another name holds the same list",
                f"build a new list instead ({s.target} = {s.target} + [value])",
            )
        t = self.dot(s.target)
        if s.target not in owned:
            out.append(
                code.assign(
                    depth,
                    t,
                    fmt(
                        "{f}({t}, {x})",
                        f=self.rt("seq_tangent"),
                        t=t if state.get(s.target, ZERO) != ZERO else self.rt("ZERO"),
                        x=s.target,
                    ),
                    s.pos,
                )
            )
            owned = owned | {s.target}
        out.append(line)
        out.append(
            code.line(
                depth,
                fmt("{t}.append({v})", t=t, v=self.entry_tangent(s.value, state, depth, out)),
                s.pos,
            )
        )
        state[s.target] = DENSE
        return state, owned


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


def _bare(expr):
    """Is ``expr`` a name, or ``expand(name, like)`` (which may give the name's value back)?"""
    if expr.ref() is not None:
        return True
    parts = expr.parts
    return (
        len(parts) == 6
        and parts[1] == "("
        and type(parts[2]) is Ref
        and parts[3] == ", "
        and parts[5] == ")"
    )


def _names(atom):
    return ir.atom_names(atom) if isinstance(atom, (ir.Name, Tup)) else []


def _custom_class(template):
    from sourcegrad.runtime import Function

    for v in template.namespace.values():
        if isinstance(v, type) and issubclass(v, Function):
            return v
    return None


def _gradient_callee(template):
    """The gradient made by sourcegrad that a call's template (``templates.gradient_call_template``)
    calls, or None."""
    if "pullback_of_gradient" not in template.namespace:
        return None
    return next(v for k, v in template.namespace.items() if k != "pullback_of_gradient")


def _gradient_alias(template):
    return next(k for k in template.namespace if k != "pullback_of_gradient")


def _custom_alias(template):
    from sourcegrad.runtime import Function

    for k, v in template.namespace.items():
        if isinstance(v, type) and issubclass(v, Function):
            return k
    return None
