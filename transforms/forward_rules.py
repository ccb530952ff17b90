"""Forward mode: a tangent by the kind of its primitive's rule (``rules/tangents.py``).

Expects: an assignment whose operands with a nonzero tangent (``live``) are known, and its
binding. Guarantees: the expression of the result's tangent: ``slope`` reads ``x_dot * SLOPE``
off the adjoint template; ``linear`` calls the same function on the tangents; ``multilinear``
takes one term per operand with a tangent (the product rule); ``template`` fills in a tangent
template; ``custom`` calls a ``sourcegrad.Function``'s ``jvp`` or the second derivatives of a
gradient sourcegrad made. A rule that gives no term for an operand with a tangent is refused.
"""

from __future__ import annotations

from sourcegrad.errors import MissingTangentError

from . import code, fence, ir
from .code import Ref, fmt, of
from .ir import Tup
from .naming import placeholder
from .templates import Template, instantiate

_SLOT = placeholder("slot")  # the result's adjoint in an adjoint template read as a slope


class RuleKinds:
    """The kinds of tangent rule (mixed into ``forward.Forwarder``)."""

    def slope(self, b, values, live, state, s, depth, out):
        """``y_dot = x_dot * SLOPE`` read off the adjoint template (``rules/tangents.py``)."""
        t = b.template
        adjoints = {t.params[0]: _SLOT}
        for p in t.signature():
            adjoints[p] = placeholder(p) if p in live else None
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


def _gradient_alias(template):
    return next(k for k in template.namespace if k != "pullback_of_gradient")


def _custom_alias(template):
    from sourcegrad.runtime import Function

    for k, v in template.namespace.items():
        if isinstance(v, type) and issubclass(v, Function):
            return k
    return None
