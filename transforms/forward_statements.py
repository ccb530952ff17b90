"""Forward mode: the tangent of one statement (an assignment, a write into an array, an append).

Expects: a statement of the normalized IR the forward-mode pass (``forward.py``) reaches, with
the tangent state there (``states``: which tangents are zero, dense or maybe zero) and the
tangents this function owns (may write into). Guarantees: the primal statement as the user wrote
it, then the tangent of the value it defines as ``x_dot``, from the primitive's tangent rule
(``rules/tangents.py``, by kind: ``forward_rules``); a value with no nonzero tangent operand gets
no tangent statement. A write into a tangent the function may share is preceded by a copy (zeros
where the tangent is zero). An active operand reaching a primitive with no tangent rule is
refused at the user's line (``MissingTangentError``).
"""

from __future__ import annotations

from sourcegrad.errors import MissingTangentError

from . import code, fence, ir
from .code import Ref, fmt, lit, of
from .ir import Tup
from .rules import tangents as TR
from .states import DENSE, MAYBE, ZERO
from .reverse_forward import _assigned
from .templates import Template


class Statements:
    """The statements' part of forward mode (mixed into ``forward.Forwarder``)."""

    def primal(self, s, depth, out):
        text = f"{s.target} = {_assigned(s, self.rt)}"
        out.append(code.user(depth, text, s.pos, ir.reads(s), (s.target,)))

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
        self.inexact_part(s, depth, out)
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
        self.inexact_part(s, depth, out)
        state[s.target] = DENSE
        return state, owned

    def inexact_part(self, s, depth, out):
        """A value of integers or booleans has a zero tangent (``dtypes.py``): where the dtype of
        the value ``s`` makes is not known, the code tests it."""
        if self.an.guarded(s):
            t = self.dot(s.target)
            expr = fmt("{f}({t}, {y})", f=self.rt("inexact_part"), t=t, y=s.target)
            out.append(code.assign(depth, t, expr, s.pos))

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
