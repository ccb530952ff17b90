"""Batch-axis analysis: does a function's value separate over the rows of some of its arguments?

Expects: a normalized ``ir.Function`` (after ``sequences.rewrite``), its call bindings, its
``shapes.Shapes`` for one call signature (ranks are read from it), and the parameters whose axis 0
holds the rows (``over``). Guarantees: ``check`` returns how the value combines over any split of
the rows into chunks, ``"sum"`` (the value of all rows is the sum of the chunks' values) or
``"mean"`` (the sum of the chunks' values weighted by their shares of the rows), so the gradient
combines the same way; or it raises ``RowMixingError`` at the first statement that mixes rows.

An abstract interpretation, flow-sensitive, deny by default. Each value is one of:

- ``SAME``: the same on every chunk (parameters, constants, what only they give);
- ``Rows(axis)``: an array whose entries along ``axis`` (counted from the end, as broadcasting
  aligns) are the rows, each computed from its own row alone (elementwise work, ``rows @ w``,
  reductions over other axes, per-row gathers);
- ``Total("sum")`` / ``Total("mean")``: a linear function of the sum (mean) over the rows of
  per-row values (``np.sum(rows)``, then scaled, added, indexed);
- ``COUNT`` (a multiple of the number of rows, ``x.shape[0]``, ``len(x)``), ``IOTA``
  (``np.arange`` of it: row positions, only as an index along the rows), ``RowShape`` (the shape
  of a ``Rows`` array);
- ``Mixed``: a name that holds different kinds on different paths (refused where it is read).

Anything that combines rows with rows (``x.T @ x``, ``z - np.mean(z, axis=0)``, sorting or
``cumsum`` along the rows, a branch or loop bound on rows) or that an operation not listed here
reads is refused, located at the user's line.
"""

from __future__ import annotations

import builtins
import math
import operator
from dataclasses import dataclass

import numpy as np

from sourcegrad.errors import LocatedError

from . import fence, ir
from .ir import ATTRIBUTE_READ, Tup

__all__ = ["RowMixingError", "check"]


class RowMixingError(LocatedError, ValueError):
    """A function that ``sourcegrad.dask.data_parallel`` cannot split over rows: a statement mixes
    rows (or reads them in a way the analysis does not know to be per row)."""


# ---- abstract values --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rows:
    axis: int  # negative: counted from the end
    ndim: object = None  # the rank, where known


@dataclass(frozen=True)
class Total:
    kind: str  # "sum" | "mean"


@dataclass(frozen=True)
class RowShape:
    position: int  # the rows' axis, counted from the start
    ndim: int


@dataclass(frozen=True)
class Seq:
    item: object  # the join of a list's entries


@dataclass(frozen=True)
class Mixed:
    kinds: tuple


SAME, ZERO, COUNT, IOTA = "same", "zero", "count", "iota"  # ZERO: a literal 0 (a sum's start)


def _join(a, b):
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a, b} <= {SAME, ZERO}:
        return SAME
    if a is ZERO and isinstance(b, Total):  # total = 0.0; for ...: total += np.sum(rows)
        return b
    if b is ZERO and isinstance(a, Total):
        return a
    if isinstance(a, Seq) and isinstance(b, Seq):
        return Seq(_join(a.item, b.item))
    if isinstance(a, Rows) and isinstance(b, Rows) and a.axis == b.axis:
        return Rows(a.axis)  # ranks differ: not known
    return Mixed((a, b))


def _same(v):
    return v is SAME or v is ZERO or (isinstance(v, Seq) and _same(v.item))


# ---- primitives by kind -----------------------------------------------------------------------

_OPERATORS = {
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.neg,
    operator.pos,
    operator.abs,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.invert,
    operator.not_,
}
_ELEMENTWISE = {
    np.where,
    np.clip,
    np.real,
    np.imag,
    np.conj,
    np.asarray,
    np.array,
    np.copy,
    np.asanyarray,
    np.nan_to_num,
    np.heaviside,
    builtins.abs,
    builtins.float,
    builtins.complex,
}
_SUMS = {np.sum, np.nansum, np.add.reduce}
_MEANS = {np.mean}
_REDUCTIONS = (
    _SUMS
    | _MEANS
    | {
        np.max,
        np.amax,
        np.min,
        np.amin,
        np.prod,
        np.var,
        np.std,
        np.nanmax,
        np.nanmin,
        np.nanmean,
        np.median,
        np.all,
        np.any,
        np.argmax,
        np.argmin,
        np.ptp,
        np.maximum.reduce,
        np.minimum.reduce,
        np.multiply.reduce,
        np.logaddexp.reduce,
        np.linalg.norm,
    }
)
_ALONG_AXIS = {np.cumsum, np.cumprod, np.sort, np.argsort, np.flip, np.diff}
_MATMUL = {operator.matmul, np.matmul, np.dot}
_LIKE = {np.zeros_like, np.ones_like, np.full_like, np.empty_like}
_LINEAR_UNARY = {
    operator.neg,
    operator.pos,
    np.negative,
    np.positive,
    np.real,
    np.imag,
    np.conj,
    np.asarray,
    np.array,
    np.copy,
    builtins.float,
    builtins.complex,
}


def _optional(module, *names):
    out = set()
    for name in names:
        try:
            mod = __import__(module, fromlist=["_"])
            out.add(getattr(mod, name))
        except (ImportError, AttributeError):
            pass
    return out


_REDUCTIONS |= _optional("scipy.special", "logsumexp")
_ALONG_AXIS |= _optional("scipy.special", "softmax", "log_softmax")
_STOP = _optional("sourcegrad.runtime", "stop_gradient")


def _astype_keys():
    from .rules import indexing  # x.astype(...) is a call of a function of the rules' own

    return {k for k in (getattr(indexing, "_astype", None),) if k is not None}


# ---- the walk ---------------------------------------------------------------------------------


def check(src, fn, bindings, shapes, over, args=None):
    """``"sum"`` or ``"mean"``: how ``fn``'s value combines over chunks of the rows of ``over``;
    raises ``RowMixingError`` otherwise (see the module docstring). ``args``: the call's arguments
    by parameter name, where the shapes of arrays inside containers (a ``params`` dict) are read."""
    return _Walker(src, fn, bindings, shapes, over, args or {}).run()


class _Walker:
    MAX_PASSES = 20

    def __init__(self, src, fn, bindings, shapes, over, args):
        self.src, self.fn, self.bindings, self.shapes, self.over = (
            src,
            fn,
            bindings,
            shapes,
            tuple(over),
        )
        self.returns = []
        self.objects = {k: v for k, v in args.items() if isinstance(v, (dict, list, tuple))}
        self.local = {}  # name -> shape, of values the same on every chunk that shape inference missed
        self.env = {}
        self.astype = _astype_keys()

    def run(self):
        env = {}
        for p in self.fn.params:
            if p in self.over:
                nd = self._rank(p)
                if not nd:
                    raise self._error(
                        self.fn.body[0] if self.fn.body else None,
                        f"{p} is split over its rows (axis 0), but it is "
                        f"{'a scalar' if nd == 0 else 'not an array of known rank'}",
                        f"pass {p} as an array with the rows on axis 0",
                    )
                env[p] = Rows(-nd, nd)
            else:
                env[p] = SAME
        self._block(self.fn.body, env)
        kinds = {r for r, _ in self.returns}
        for value, s in self.returns:
            if not isinstance(value, Total):
                raise self._error(
                    s,
                    self._return_problem(value),
                    "return np.sum(...) or np.mean(...) of per-row values (a loss that adds up over rows)",
                )
        if len(kinds) != 1:
            raise self._error(
                self.returns[-1][1],
                "the returns mix a sum over the rows with a mean over them",
                "return the same kind of reduction on every path",
            )
        return kinds.pop().kind

    def _return_problem(self, v):
        if _same(v):
            return "the value does not depend on the rows of " + ", ".join(self.over)
        if isinstance(v, Rows):
            return "the value still has a value per row: reduce it over the rows with np.sum or np.mean"
        return "the value is not a sum or mean over the rows"

    # -- statements --

    def _block(self, stmts, env):
        for s in stmts:
            self._stmt(s, env)

    def _stmt(self, s, env):
        self.env = env
        if isinstance(s, ir.Assign):
            env[s.target] = self._assign(s, env)
        elif isinstance(s, ir.SetItem):
            env[s.target] = self._setitem(s, env)
        elif isinstance(s, ir.Append):
            env[s.target] = _join(env.get(s.target), Seq(self._atom(s.value, env, s)))
        elif isinstance(s, ir.Return):
            self.returns.append((self._atom(s.value, env, s), s))
        elif isinstance(s, (ir.If, ir.While, ir.LoopExit)):
            self._test(s, s.test, env, "a branch or loop test")
            if isinstance(s, ir.If):
                other = dict(env)
                self._block(s.body, env)
                self._block(s.orelse, other)
                for k in set(env) | set(other):
                    env[k] = _join(env.get(k), other.get(k))
            elif isinstance(s, ir.While):
                self._loop(s, env)
        elif isinstance(s, ir.For):
            self._test(s, s.range_text, env, "a loop's range")
            env[s.target] = SAME
            self._loop(s, env)
        elif isinstance(s, ir.Effect):
            pass  # print, checks: they run on each chunk, reading its values

    def _loop(self, s, env):
        for _ in range(self.MAX_PASSES):
            before = dict(env)
            self._block(s.body, env)
            if isinstance(s, ir.While):
                self._test(s, s.test, env, "a loop test")
            for k in set(env) | set(before):
                env[k] = _join(before.get(k), env.get(k))
            if env == before:
                return
        raise self._error(s, "the analysis of this loop did not settle", "simplify the loop")

    def _test(self, s, text, env, what):
        for n in sorted(ir.idents(text)):
            v = env.get(n, SAME)
            if not _same(v):
                raise self._error(
                    s,
                    f"{what} reads {n}, which depends on the rows (each chunk could take "
                    "another path)",
                    "branch on parameters or constants only, or use np.where",
                )

    # -- values --

    def _atom(self, a, env, s):
        if isinstance(a, ir.Name):
            v = env.get(a.id, SAME)
            if isinstance(v, Mixed):
                raise self._error(
                    s,
                    f"{a.id} depends on the rows on some paths only",
                    "give it the same kind of value on every path",
                )
            return v
        if isinstance(a, ir.Const):
            return ZERO if type(a.value) in (int, float) and a.value == 0 else SAME
        if isinstance(a, Tup):
            items = [self._atom(x, env, s) for x in a]
            out = None
            for v in items:
                out = _join(out, v)
            return Seq(out if out is not None else SAME)
        if isinstance(a, ir.Index):
            vals = [env.get(n, SAME) for n in a.names()]
            return SAME if all(_same(v) for v in vals) else Mixed(tuple(vals))
        return SAME

    def _assign(self, s, env):
        op = s.op
        if op.kind == "copy":
            return self._atom(op.args[0], env, s) if op.args else SAME
        if op.key is operator.getitem and len(op.args) == 2 and isinstance(op.args[1], ir.Index):
            out = self._getitem(s, op.args[0], op.args[1], env)
            if out is SAME:
                self._same_shape(s)
            return out
        values = [self._atom(a, env, s) for a in op.args] + [
            self._atom(a, env, s) for _, a in op.kwargs
        ]
        if all(_same(v) for v in values):
            self._same_shape(s)
            return SAME
        if op.kind not in ("call", "nondiff"):
            raise self._error(
                s,
                f"{op.text} ({op.kind}) reads values that depend on the rows, and the analysis "
                "does not know it to work row by row",
                "compute it outside the split function",
            )
        key = op.key
        if key == ATTRIBUTE_READ:
            return self._attribute(s, op.text.rsplit(".", 1)[-1], values[0])
        binding = self.bindings.get(id(op)) or _plain_binding(op)
        for kinds, method in self._DISPATCH:
            if _is_in(key, kinds) or (kinds == "astype" and key in self.astype):
                return method(self, s, binding, env)
        return self._elementwise(s, binding, env) if _elementwise_key(key) else self._unknown(s)

    def _unknown(self, s):
        raise self._error(
            s,
            f"{s.op.text.split('(')[0]} reads values that depend on the rows, and the "
            "analysis does not know it to work row by row",
            "only elementwise work, rows @ weights, per-row reductions and gathers, and a final "
            "np.sum or np.mean over the rows are split",
        )

    # -- kinds of primitives --

    def _operands(self, s, binding, env):
        """(parameter, atom, value) of each operand, bound as the rule binds them."""
        if binding is None:
            return [(None, a, self._atom(a, env, s)) for a in s.op.args]
        return [(p, a, self._atom(a, env, s)) for p, a in binding.values.items()]

    def _elementwise(self, s, binding, env):
        key = s.op.key
        ops = [(p, a, v) for p, a, v in self._operands(s, binding, env) if p not in ("dtype",)]
        vals = [v for _, _, v in ops]
        if IOTA in vals or any(isinstance(v, (RowShape, Seq)) for v in vals):
            raise self._error(
                s, "row positions or shapes are used as values here", "use them only as indices"
            )
        if COUNT in vals:
            return self._count_arith(s, key, vals)
        totals = [v for v in vals if isinstance(v, Total)]
        rows = {v for v in vals if isinstance(v, Rows)}
        if totals and rows:
            raise self._error(
                s,
                "this combines each row with a sum or mean over all rows (a statistic of the "
                "batch): the chunks would each use their own",
                "compute such statistics outside",
            )
        if totals:
            return self._linear(s, key, vals, totals)
        if len(rows) > 1:
            raise self._error(
                s,
                "this combines arrays whose rows lie on different axes (rows with rows)",
                "keep the rows on the same axis",
            )
        row = rows.pop()
        ranks = []
        for _, a, v in ops:
            if _same(v):
                self._check_broadcast(s, a, row)
            ranks.append(0 if isinstance(a, (ir.Const, Tup)) else self._rank(_name(a)))
        return Rows(row.axis, None if None in ranks else max(ranks))

    def _count_arith(self, s, key, vals):
        others = [v for v in vals if v is not COUNT]
        if key in (builtins.float, builtins.int) and not others:
            return COUNT
        if (
            key is operator.truediv
            and len(vals) == 2
            and vals[0] == Total("sum")
            and vals[1] is COUNT
        ):
            return Total("mean")  # np.sum(per_row) / len(x): a mean over the rows
        if key in (operator.mul, np.multiply) and all(_same(v) for v in others):
            return COUNT
        raise self._error(
            s,
            "the number of rows is used as a value: each chunk has its own",
            "divide a sum over the rows by it (a mean), or use np.mean",
        )

    def _linear(self, s, key, vals, totals):
        kinds = {t.kind for t in totals}
        if len(kinds) > 1:
            raise self._error(
                s,
                "this combines a sum over the rows with a mean over them",
                "use the same reduction for every term",
            )
        total = totals[0]
        others = [v for v in vals if not isinstance(v, Total)]
        if key in (operator.add, operator.sub, np.add, np.subtract):
            if all(v is ZERO for v in others) or (
                total.kind == "mean" and all(_same(v) for v in others)
            ):
                return total
            raise self._error(
                s,
                "this adds a term that does not depend on the rows to a sum over the rows: "
                "every chunk would add it once",
                "use np.mean over the rows (the chunks' shares then add up to one), or add the term "
                "outside the split function",
            )
        if key in _LINEAR_UNARY or key is builtins.float:
            return total
        if key in (operator.mul, np.multiply) and len(totals) == 1:
            return total
        if (
            key in (operator.truediv, np.true_divide, np.divide)
            and len(totals) == 1
            and isinstance(vals[0], Total)
        ):
            return total
        raise self._error(
            s,
            f"{s.op.text} is not linear in a sum or mean over the rows: the chunks' values do "
            "not add up to it",
            "make the loss a sum or mean over rows of per-row terms",
        )

    def _check_broadcast(self, s, a, row):
        """An operand the same on every chunk must have no length along the rows (else a chunk's
        rows would meet all rows' entries, or a chunk of one row would broadcast against them)."""
        if isinstance(a, ir.Const):
            return
        if isinstance(a, Tup):
            return  # a literal of numbers
        name = a.id if isinstance(a, ir.Name) else None
        shape = self._shape(name)
        if shape is None:
            raise self._error(
                s,
                f"cannot tell whether {name} has a length along the rows (its shape is not known)",
                "make its shape follow from the arguments' shapes",
            )
        k = len(shape) + row.axis
        if k >= 0 and shape[k] != 1:
            raise self._error(
                s,
                f"{name}, the same for every chunk, has length {shape[k]} along the rows' axis: "
                "it would meet every chunk whole",
                f"pass {name} in over, split with the rows",
            )

    def _reduction(self, s, binding, env):
        key = s.op.key
        ops = self._operands(s, binding, env)
        (p, a, v), rest = ops[0], ops[1:]
        if any(not _same(x) for q, _, x in rest if q not in ("axis", "keepdims")):
            return self._unknown(s)
        if isinstance(v, Total):
            if _is_in(key, _SUMS | _MEANS):
                return v
            return self._unknown(s)
        if not isinstance(v, Rows):
            return self._unknown(s)
        axis, keepdims = self._const(binding, "axis"), self._const(binding, "keepdims", False)
        nd = self._rank(a.id if isinstance(a, ir.Name) else None)
        if nd is None or axis is _NOT_CONST or keepdims is _NOT_CONST:
            raise self._error(
                s,
                "cannot tell which axes this reduces over (the rank or axis is not known)",
                "pass a literal axis",
            )
        axes = (
            tuple(range(nd))
            if axis is None
            else tuple(
                sorted(x % nd for x in (axis if isinstance(axis, (tuple, list)) else (axis,)))
            )
        )
        pos = nd + v.axis
        if pos in axes:
            if _is_in(key, _SUMS):
                return Total("sum")
            if _is_in(key, _MEANS):
                return Total("mean")
            raise self._error(
                s,
                f"{s.op.text.split('(')[0]} reduces over the rows: only a sum or a mean over "
                "the rows adds up over chunks",
                "reduce over the rows with np.sum or np.mean",
            )
        if keepdims:
            return Rows(v.axis, nd)
        newpos = pos - sum(1 for x in axes if x < pos)
        return Rows(newpos - (nd - len(axes)), nd - len(axes))

    def _along_axis(self, s, binding, env):
        ops = self._operands(s, binding, env)
        (p, a, v), rest = ops[0], ops[1:]
        if not isinstance(v, Rows) or any(not _same(x) for _, _, x in rest):
            return self._unknown(s)
        axis = self._const(binding, "axis")
        nd = self._rank(a.id if isinstance(a, ir.Name) else None)
        if axis is None or axis is _NOT_CONST or nd is None or isinstance(axis, (tuple, list)):
            raise self._error(
                s,
                "cannot tell that this works along an axis other than the rows'",
                "pass a literal axis other than the rows'",
            )
        if axis % nd == nd + v.axis:
            raise self._error(
                s,
                f"{s.op.text.split('(')[0]} runs along the rows: each row would see the others",
                "work along another axis",
            )
        return Rows(v.axis, nd)

    def _matmul(self, s, binding, env):
        ops = self._operands(s, binding, env)
        (_, a, va), (_, b, vb) = ops[0], ops[1]
        if any(not _same(v) for _, _, v in ops[2:]):
            return self._unknown(s)
        totals = [v for v in (va, vb) if isinstance(v, Total)]
        if totals and all(isinstance(v, Total) or _same(v) for v in (va, vb)) and len(totals) == 1:
            return totals[0]
        if not all(isinstance(v, Rows) or _same(v) for v in (va, vb)):
            return self._unknown(s)
        if isinstance(va, Rows) and isinstance(vb, Rows):
            raise self._error(
                s,
                "this multiplies rows with rows (a product over the rows, as x.T @ x)",
                "only rows @ weights and weights @ rows.T are split",
            )
        ra, rb = self._rank(_name(a)), self._rank(_name(b))
        if ra is None or rb is None:
            raise self._error(
                s,
                "cannot tell which axes this product contracts (a rank is not known)",
                "make the shapes follow from the arguments' shapes",
            )
        if isinstance(va, Rows):
            pos = ra + va.axis
            if ra < 2 or pos == ra - 1:
                raise self._error(
                    s, "this product contracts over the rows", "put the rows on another axis"
                )
            if s.op.key is np.dot:
                out = ra - 1 + max(rb - 1, 0)
            else:
                if rb > 2:
                    raise self._error(
                        s,
                        "a product of rows with a stack of matrices is not split",
                        "use einsum outside the split function",
                    )
                out = ra - 1 if rb == 1 else ra
            return Rows(pos - out, out)
        pos = rb + vb.axis  # same @ rows: the rows must be the columns of a matrix
        if rb != 2 or pos != 1 or ra > 2:
            raise self._error(
                s, "this product contracts over the rows", "multiply rows @ weights instead"
            )
        return Rows(-1, ra)

    def _transpose(self, s, binding, env):
        ops = self._operands(s, binding, env)
        (_, a, v) = ops[0]
        if isinstance(v, Total):
            return v
        axes = self._const(binding, "axes")
        nd = self._rank(_name(a))
        if not isinstance(v, Rows) or nd is None or axes is _NOT_CONST:
            return self._unknown(s)
        pos = nd + v.axis
        new = nd - 1 - pos if axes is None else [x % nd for x in axes].index(pos)
        return Rows(new - nd, nd)

    def _reshape(self, s, binding, env):
        ops = self._operands(s, binding, env)
        (_, a, v) = ops[0]
        if isinstance(v, Total):
            return v
        shape_atom = binding.values.get("shape") if binding is not None else None
        before = self._shape(_name(a))
        if (
            not isinstance(v, Rows)
            or before is None
            or v.axis != -len(before)
            or shape_atom is None
            or self._rank(_name(a)) != len(before)
        ):
            return self._unknown(s)
        parts = list(shape_atom) if isinstance(shape_atom, Tup) else [shape_atom]
        first = self._atom(parts[0], env, s)
        rest = [self._atom(x, env, s) for x in parts[1:]]
        if not all(_same(x) for x in rest):
            return self._unknown(s)
        if first is COUNT and len(parts) >= 1:
            return Rows(-len(parts), len(parts))
        if (
            isinstance(parts[0], ir.Const)
            and parts[0].value == -1
            and all(isinstance(x, ir.Const) for x in parts[1:])
        ):
            if math.prod(x.value for x in parts[1:]) == math.prod(before[1:]):
                return Rows(-len(parts), len(parts))
        raise self._error(
            s,
            "this reshape may move entries between rows",
            "keep the rows as the first axis: x.reshape(x.shape[0], ...) or x.reshape(-1, <the "
            "product of the other lengths>)",
        )

    def _like(self, s, binding, env):
        ops = self._operands(s, binding, env)
        (_, a, v), rest = ops[0], ops[1:]
        if isinstance(v, Rows) and all(_same(x) for _, _, x in rest):
            return v
        return self._unknown(s)

    def _arange(self, s, binding, env):
        vals = [self._atom(a, env, s) for a in s.op.args] + [
            self._atom(a, env, s) for _, a in s.op.kwargs
        ]
        if vals and vals[0] is COUNT and len(s.op.args) == 1 and not s.op.kwargs:
            return IOTA
        if (
            len(vals) == 2
            and isinstance(s.op.args[0], ir.Const)
            and s.op.args[0].value == 0
            and vals[1] is COUNT
        ):
            return IOTA
        raise self._error(
            s,
            "np.arange here depends on the number of rows",
            "use np.arange(len(x)) as a row index",
        )

    def _take_along_axis(self, s, binding, env):
        ops = {p: (a, v) for p, a, v in self._operands(s, binding, env)}
        (a, va), (_, vi) = ops.get("arr", (None, None)), ops.get("indices", (None, None))
        axis = self._const(binding, "axis")
        nd = self._rank(_name(a))
        if (
            isinstance(va, Rows)
            and isinstance(vi, Rows)
            and vi.axis == va.axis
            and nd is not None
            and isinstance(axis, int)
            and axis % nd != nd + va.axis
        ):
            return va
        return self._unknown(s)

    def _concatenate(self, s, binding, env):
        ops = {p: (a, v) for p, a, v in self._operands(s, binding, env)}
        arrays, v = ops.get("arrays", (None, None))
        axis = self._const(binding, "axis")
        items = list(arrays) if isinstance(arrays, Tup) else None
        if (
            not isinstance(v, Seq)
            or not isinstance(v.item, Rows)
            or items is None
            or not isinstance(axis, int)
        ):
            return self._unknown(s)
        nd = {self._rank(_name(x)) for x in items}
        vals = {self._atom(x, env, s) for x in items}
        if (
            len(nd) != 1
            or None in nd
            or vals != {v.item}
            or axis % next(iter(nd)) == next(iter(nd)) + v.item.axis
        ):
            return self._unknown(s)
        return v.item

    def _builtin_sum(self, s, binding, env):
        ops = self._operands(s, binding, env)
        v = ops[0][2]
        start = ops[1][2] if len(ops) > 1 else ZERO
        if isinstance(v, Seq) and isinstance(v.item, Total) and start is ZERO:
            return v.item
        return self._unknown(s)

    def _sizes(self, s, binding, env):
        """``len(x)``, ``np.size(x)``, ``np.shape(x)`` of rows: the number of rows (times the other
        lengths), or their shape."""
        vals = [self._atom(a, env, s) for a in s.op.args]
        if len(vals) != 1 or s.op.kwargs or not isinstance(vals[0], Rows):
            return self._unknown(s)
        nd = self._rank(_name(s.op.args[0]))
        if s.op.key is np.shape:
            return RowShape(nd + vals[0].axis, nd) if nd is not None else self._unknown(s)
        if s.op.key is np.size or (nd is not None and nd + vals[0].axis == 0):
            return COUNT
        return SAME if nd is not None else self._unknown(s)

    def _stop(self, s, binding, env):
        return self._atom(s.op.args[0], env, s)

    _DISPATCH = (
        (_REDUCTIONS, _reduction),
        (_ALONG_AXIS, _along_axis),
        (_MATMUL, _matmul),
        ({np.transpose}, _transpose),
        ({np.reshape}, _reshape),
        (_LIKE, _like),
        ({np.arange}, _arange),
        ({np.take_along_axis}, _take_along_axis),
        ({np.concatenate}, _concatenate),
        ({builtins.sum}, _builtin_sum),
        ({builtins.len, np.size, np.shape}, _sizes),
        (_STOP, _stop),
        ("astype", _like),
    )

    # -- indexing and attributes --

    def _attribute(self, s, attr, v):
        if isinstance(v, Rows):
            nd = self._rank(_name(s.op.args[0]))
            if attr == "shape" and nd is not None:
                return RowShape(nd + v.axis, nd)
            if attr == "size":
                return COUNT
            if attr in ("ndim", "dtype"):
                return SAME
            if attr in ("real", "imag"):
                return v
        if isinstance(v, Total) and attr in ("shape", "ndim", "dtype", "size"):
            return SAME
        raise self._error(
            s,
            f"{s.op.text} of a value that depends on the rows is not split",
            "read .shape, .ndim or .dtype",
        )

    def _getitem(self, s, base, index, env):
        v = self._atom(base, env, s)
        parts = [(p, self._part(p, env, s)) for p in index.parts]
        if all(_same(pv) for _, pv in parts):
            if _same(v):
                return SAME
            if isinstance(v, Total):
                return v
            if isinstance(v, RowShape):
                return self._shape_item(s, v, index)
            if isinstance(v, Seq):
                return v.item
            if isinstance(v, Rows):
                return self._basic_index(s, base, v, index, env)
        if _same(v) and len(parts) == 1 and not index.is_tuple and isinstance(parts[0][1], Rows):
            # table[rows_of_indices]: a per-row gather (an embedding lookup)
            rb, rt = self._rank(_name(parts[0][0])), self._rank(_name(base))
            if rb is not None and rt is not None and rt >= 1:
                return Rows(parts[0][1].axis - (rt - 1), rb + rt - 1)
        if (
            isinstance(v, Rows)
            and len(parts) == 2
            and parts[0][1] is IOTA
            and v.axis == -2
            and self._rank(_name(base)) == 2
            and (_same(parts[1][1]) or (isinstance(parts[1][1], Rows) and parts[1][1].axis == -1))
            and self._rank(_name(parts[1][0])) in (0, 1)
        ):
            return Rows(-1, 1)  # p[np.arange(len(y)), y]: each row's own entry
        raise self._error(
            s,
            "this indexing picks or mixes rows",
            "index along the other axes only, with "
            "x[:, ...], or gather each row's own entry with x[np.arange(len(x)), labels]",
        )

    def _part(self, p, env, s):
        if isinstance(p, ir.Name):
            return self._atom(p, env, s)
        if isinstance(p, ir.Slice):
            vals = [self._atom(b, env, s) for b in (p.lower, p.upper, p.step) if b is not None]
            return SAME if all(_same(x) for x in vals) else Mixed(tuple(vals))
        if isinstance(p, tuple):
            return self._atom(Tup(p), env, s)
        return SAME

    def _shape_item(self, s, v, index):
        if (
            len(index.parts) == 1
            and isinstance(index.parts[0], ir.Const)
            and isinstance(index.parts[0].value, int)
        ):
            return COUNT if index.parts[0].value % v.ndim == v.position else SAME
        raise self._error(
            s,
            "this reads the shape of rows in a way the analysis does not follow",
            "read x.shape[k] with a literal k",
        )

    def _basic_index(self, s, base, v, index, env):
        nd = self._rank(_name(base))
        if nd is None:
            raise self._error(
                s,
                "cannot tell which axis this indexes (the rank is not known)",
                "make the shapes follow from the arguments' shapes",
            )
        pos = nd + v.axis
        parts = list(index.parts)
        used = sum(1 for p in parts if p is not None and p is not Ellipsis)
        axis, out, newpos = 0, 0, None
        for p in parts:
            if p is None:
                out += 1
                continue
            if p is Ellipsis:
                n = nd - used
                if axis <= pos < axis + n:
                    newpos = out + pos - axis
                axis += n
                out += n
                continue
            is_int = isinstance(p, ir.Const) or (isinstance(p, ir.Name) and self._rank(p.id) == 0)
            if not is_int and not isinstance(p, ir.Slice):
                raise self._error(
                    s,
                    "this indexing with an array picks rows or entries in a way the analysis "
                    "does not follow",
                    "index rows with slices and integers along other axes",
                )
            if axis == pos:
                if not (
                    isinstance(p, ir.Slice)
                    and p.lower is None
                    and p.upper is None
                    and p.step is None
                ):
                    raise self._error(
                        s,
                        "this indexing picks rows (the same positions mean other rows in each "
                        "chunk)",
                        "keep every row: x[:, ...]",
                    )
                newpos = out
            axis += 1
            out += 0 if is_int else 1
        if newpos is None:  # the rows' axis is among the trailing, unindexed ones
            newpos = out + pos - axis
        total = out + nd - axis
        return Rows(newpos - total, total)

    # -- setitem --

    def _setitem(self, s, env):
        target = env.get(s.target, SAME)
        value = self._atom(s.value, env, s)
        index_vals = [self._part(p, env, s) for p in s.index.parts]
        if _same(target) and _same(value) and all(_same(x) for x in index_vals):
            return target
        if (
            isinstance(target, Rows)
            and (_same(value) or value == target)
            and len(s.index.parts) == 1
            and index_vals[0] == target
            and not s.index.is_tuple
        ):
            return target  # h[h < 0] = 0: a mask shaped as the rows
        if (
            isinstance(target, Rows)
            and (_same(value) or isinstance(value, Rows))
            and all(_same(x) for x in index_vals)
        ):
            # refuses a write that picks rows
            self._basic_index(s, ir.Name(s.target), target, s.index, env)
            return target
        raise self._error(
            s,
            "this write mixes rows (or writes rows into an array that has none)",
            "write along the other axes only",
        )

    # -- helpers --

    def _same_shape(self, s):
        """Record the shape of a value the same on every chunk where shape inference has none: an
        entry of a container argument (``params["w"]``), and elementwise work on known shapes."""
        op, target = s.op, s.target
        self.local.pop(target, None)
        self.objects.pop(target, None)
        base = _name(op.args[0]) if op.args else None
        if (
            op.key is operator.getitem
            and base in self.objects
            and len(op.args[1].parts) == 1
            and isinstance(op.args[1].parts[0], ir.Const)
        ):
            try:
                obj = self.objects[base][op.args[1].parts[0].value]
            except (KeyError, IndexError, TypeError):
                return
            if isinstance(obj, (dict, list, tuple)):
                self.objects[target] = obj
            elif getattr(obj, "shape", None) is not None:
                self.local[target] = tuple(obj.shape)
            elif isinstance(obj, (int, float)):
                self.local[target] = ()
        elif op.kind == "copy" and base is not None and self._shape(base) is not None:
            self.local[target] = self._shape(base)
        elif _elementwise_key(op.key):
            shapes = [() if isinstance(a, ir.Const) else self._shape(_name(a)) for a in op.args]
            if None not in shapes:
                try:
                    self.local[target] = tuple(np.broadcast_shapes(*shapes))
                except ValueError:
                    pass

    def _shape(self, name):
        if name is None:
            return None
        if name in self.local:
            return self.local[name]
        v = self.shapes.env.get(name) if self.shapes is not None else None
        shape = getattr(v, "shape", None)
        if shape is not None:
            return tuple(shape)
        if type(v).__name__ == "Int":
            return ()
        return None

    def _rank(self, name):
        v = self.env.get(name) if name is not None else None
        if isinstance(v, Rows) and v.ndim is not None:
            return v.ndim
        shape = self._shape(name)
        return None if shape is None else len(shape)

    def _const(self, binding, param, default=None):
        if binding is None:
            return default
        a = binding.values.get(param)
        if a is None:
            return default
        if isinstance(a, ir.Const):
            return default if a.value is getattr(np, "_NoValue", None) else a.value
        if isinstance(a, Tup) and all(isinstance(x, ir.Const) for x in a):
            return tuple(x.value for x in a)
        return _NOT_CONST

    def _error(self, s, what, hint):
        where = getattr(s, "node", None) or getattr(s, "pos", None)
        msg = f"{self.fn.qualname} cannot be split over the rows of {', '.join(self.over)}: {what}"
        if where is None:
            return RowMixingError(msg, hint=hint)
        return fence.located(RowMixingError, self.src, where, msg, hint)


_NOT_CONST = object()


@dataclass(frozen=True)
class _Bound:
    values: dict


def _plain_binding(op):
    """Operands by parameter for a call no rule binds (``np.argmax``, which carries no gradient),
    from the function's own signature, or None."""
    import inspect

    try:
        bound = inspect.signature(op.key).bind(*op.args, **dict(op.kwargs))
    except (TypeError, ValueError):
        return None
    values = {}
    for name, param in bound.signature.parameters.items():
        if name in bound.arguments:
            values[name] = bound.arguments[name]
        elif param.default is not inspect.Parameter.empty and param.kind != param.VAR_KEYWORD:
            values[name] = ir.Const(param.default, repr(param.default))
    return _Bound(values)


def _name(a):
    return a.id if isinstance(a, ir.Name) else None


def _is_in(key, kinds):
    if isinstance(kinds, str):
        return False
    try:
        return key in kinds
    except TypeError:  # an unhashable key
        return False


def _elementwise_key(key):
    if isinstance(key, np.ufunc):
        return key.signature is None and key.nout == 1
    return _is_in(key, _OPERATORS) or _is_in(key, _ELEMENTWISE) or _is_in(key, _LINEAR_UNARY)
