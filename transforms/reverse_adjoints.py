"""Reverse mode: one assignment's adjoint, its rule's template filled in and added up.

Expects: an ``ir.Assign`` the backward sweep reaches with its result's adjoint ``g`` not zero,
and the adjoint state there (``states``). Guarantees: the statements of the rule's template
(``templates.instantiate``), each contribution added to its operand's adjoint as the state allows:
assigned to a zero adjoint, added to a dense one (in place where the sweep owns the array),
``acc(a, e)`` for a maybe one. Equal contributions in a row are added once (``y * y``: ``2 * E``);
an ``unbroadcast`` shape inference decided is dropped or summed over known axes
(``Analysis.unbroadcast_of``); the constant seed of ``value_and_grad`` read by a reduction's rule
is folded into it (``seed_like(x)``). With ``check_finite``, a check follows each update.
"""

from __future__ import annotations

import operator
import os

from . import code, ir
from .code import fmt, lit, of
from .ir import Tup
from .states import DENSE, MAYBE, ZERO
from .templates import instantiate


class Contributions:
    """The backward sweep's part (mixed into ``reverse_backward.BackwardSweep``)."""

    def _template(self, s, g, result, state, depth, out):
        if s.op.kind == "copy":
            return self._copy_adjoint(s, g, state, depth, out)
        b = self.an.binding(s.op)
        tmpl = self.an.template(b)
        values, adjoints, tuples = self._operands(b, tmpl, g, result)
        pending = []  # [adjoint, expr, tight, count]: equal contributions in a row are added once

        def flush():
            for adj, expr, tight, count in pending:
                if count > 1:  # y * y: both operands give the same term
                    expr = of(f"{count} * ", expr if tight else of("(", expr, ")"))
                self._accumulate(adj, expr, state, depth, out, s.pos)
            pending.clear()

        temp = lambda base: self.naming.temp("a")  # noqa: E731
        for inst in instantiate(tmpl, values, adjoints, temp, self.rt):
            if not inst.accumulate or inst.source_param in tuples:
                flush()
                out.append(code.assign(depth, inst.target, inst.expr, s.pos))
                if inst.accumulate:
                    self._tuple_entries(s, b, inst, state, depth, out)
                continue
            expr, tight = self._contribution(s, b, inst, g, values, depth, out)
            if pending and pending[-1][0] == inst.target and pending[-1][1] == expr:
                pending[-1][3] += 1
            else:
                pending.append([inst.target, expr, tight, 1])
        flush()
        return state

    def _copy_adjoint(self, s, g, state, depth, out):
        """``t = a``: ``g`` into a's adjoint; ``t = (a, b)``: each entry's adjoint (``ZERO``
        where none came)."""
        src = s.op.args[0]
        if isinstance(src, ir.Name) and src.id in self.an.active:
            self._accumulate(self.naming.adjoint(src.id), code.name(g), state, depth, out, s.pos)
        elif isinstance(src, Tup):
            for k, a in enumerate(src):
                if isinstance(a, ir.Name) and a.id in self.an.active:
                    entry = fmt(f"{{g}}[{k}]", g=g)
                    self._entry_adjoint(self.naming.adjoint(a.id), entry, state, depth, out, s.pos)
        return state

    def _operands(self, b, tmpl, g, result):
        """The template's values, its adjoints (None for an operand without one) and the
        temporaries that take a tuple operand's adjoint (param -> name)."""
        values = {p: code.atom(v) for p, v in b.values.items()}
        values[tmpl.params[0]] = code.name(result)
        adjoints = {tmpl.params[0]: g}
        tuples = {}
        active = self.an.active
        for p in b.diff:
            v = b.values[p]
            if isinstance(v, ir.Name) and v.id in active:
                adjoints[p] = self.naming.adjoint(v.id)
            elif isinstance(v, Tup) and any(isinstance(a, ir.Name) and a.id in active for a in v):
                adjoints[p] = tuples[p] = self.naming.temp("gs")
            else:
                adjoints[p] = None
        return values, adjoints, tuples

    def _tuple_entries(self, s, b, inst, state, depth, out):
        """A tuple operand's adjoint, made in ``inst.target``: each entry into its own. An entry
        of ``(w, b)[k]``'s adjoint is ``ZERO`` but at ``k`` (``unindex`` of a tuple)."""
        picked, pos = s.op.key is operator.getitem, s.pos
        for k, a in enumerate(b.values[inst.source_param]):
            if isinstance(a, ir.Name) and a.id in self.an.active:
                entry = fmt(f"{{t}}[{k}]", t=inst.target)
                adj = self.naming.adjoint(a.id)
                if picked:
                    self._entry_adjoint(adj, entry, state, depth, out, pos)
                else:
                    self._accumulate(adj, entry, state, depth, out, pos)

    def _contribution(self, s, b, inst, g, values, depth, out):
        """The expression a rule adds to an operand's adjoint, and whether it needs no
        parentheses to be multiplied."""
        expr, tight = inst.expr, inst.tight
        param = inst.source_param
        plan = self.an.unbroadcast_of(s, b, param) if param in b.values else None
        if plan is not None and inst.inner is not None:
            shape = self.an.shapes.of(b.values[param].id) if self.jit and plan else None
            expr, tight = (
                _unbroadcast_known(inst.inner, plan, shape),
                inst.inner_tight or bool(plan),
            )
        seeded = self._seeded(inst, g, b, values, depth, out)
        if seeded is not None:
            expr, tight = seeded, True
        return expr, tight

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

    def _accumulate(self, adj, expr, state, depth, out, pos):
        st = state.get(adj, ZERO)
        if st == ZERO:
            out.append(code.assign(depth, adj, expr, pos))
        elif st == DENSE and adj in self.owned:
            # a zero array made before the loop, seen by no other name
            out.append(code.augment(depth, adj, expr, pos))
        elif st == DENSE:
            out.append(code.assign(depth, adj, code.prefixed(adj, " + ", expr), pos))
        else:
            out.append(
                code.assign(depth, adj, fmt("{f}({a}, {e})", f=self.rt("acc"), a=adj, e=expr), pos)
            )
        state[adj] = DENSE
        if self.check_finite:
            where = f"{adj} at {os.path.basename(pos.filename)}:{pos.line}" if pos else adj
            check = fmt("{f}({a}, {w})", f=self.rt("check_finite"), a=adj, w=lit(repr(where)))
            out.append(code.line(depth, check, pos))

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
