"""How each kind of primitive treats rows: elementwise work, reductions, products, reshapes,
gathers along an axis, joins, sizes (the methods of ``Primitives``, a part of the batch walk).

Expects: the walk of ``batch/__init__.py`` (``self._atom``, ``self._rank``, ``self._shape``,
``self._const``, ``self._error``, ``self._unknown``). Guarantees: each method returns the abstract
value of the statement's result, or raises ``RowMixingError`` at a statement that mixes rows;
``_DISPATCH`` pairs each kind with its method, in the order the walk tries them.
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import ir
from ..ir import Tup
from .values import (
    Rows,
    Total,
    RowShape,
    Seq,
    SAME,
    ZERO,
    COUNT,
    IOTA,
    is_same,
    SUMS,
    MEANS,
    REDUCTIONS,
    ALONG_AXIS,
    MATMUL,
    LIKE,
    LINEAR_UNARY,
    STOP,
    NOT_CONST,
    name_of,
    is_in,
)


class Primitives:
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
            if is_same(v):
                self._check_broadcast(s, a, row)
            ranks.append(0 if isinstance(a, (ir.Const, Tup)) else self._rank(name_of(a)))
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
        if key in (operator.mul, np.multiply) and all(is_same(v) for v in others):
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
                total.kind == "mean" and all(is_same(v) for v in others)
            ):
                return total
            raise self._error(
                s,
                "this adds a term that does not depend on the rows to a sum over the rows: "
                "every chunk would add it once",
                "use np.mean over the rows (the chunks' shares then add up to one), or add the term "
                "outside the split function",
            )
        if key in LINEAR_UNARY or key is builtins.float:
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
        if any(not is_same(x) for q, _, x in rest if q not in ("axis", "keepdims")):
            return self._unknown(s)
        if isinstance(v, Total):
            if is_in(key, SUMS | MEANS):
                return v
            return self._unknown(s)
        if not isinstance(v, Rows):
            return self._unknown(s)
        axis, keepdims = self._const(binding, "axis"), self._const(binding, "keepdims", False)
        nd = self._rank(a.id if isinstance(a, ir.Name) else None)
        if nd is None or axis is NOT_CONST or keepdims is NOT_CONST:
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
            if is_in(key, SUMS):
                return Total("sum")
            if is_in(key, MEANS):
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
        if not isinstance(v, Rows) or any(not is_same(x) for _, _, x in rest):
            return self._unknown(s)
        axis = self._const(binding, "axis")
        nd = self._rank(a.id if isinstance(a, ir.Name) else None)
        if axis is None or axis is NOT_CONST or nd is None or isinstance(axis, (tuple, list)):
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
        if any(not is_same(v) for _, _, v in ops[2:]):
            return self._unknown(s)
        totals = [v for v in (va, vb) if isinstance(v, Total)]
        if (
            totals
            and all(isinstance(v, Total) or is_same(v) for v in (va, vb))
            and len(totals) == 1
        ):
            return totals[0]
        if not all(isinstance(v, Rows) or is_same(v) for v in (va, vb)):
            return self._unknown(s)
        if isinstance(va, Rows) and isinstance(vb, Rows):
            raise self._error(
                s,
                "this multiplies rows with rows (a product over the rows, as x.T @ x)",
                "only rows @ weights and weights @ rows.T are split",
            )
        ra, rb = self._rank(name_of(a)), self._rank(name_of(b))
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
        nd = self._rank(name_of(a))
        if not isinstance(v, Rows) or nd is None or axes is NOT_CONST:
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
        before = self._shape(name_of(a))
        if (
            not isinstance(v, Rows)
            or before is None
            or v.axis != -len(before)
            or shape_atom is None
            or self._rank(name_of(a)) != len(before)
        ):
            return self._unknown(s)
        parts = list(shape_atom) if isinstance(shape_atom, Tup) else [shape_atom]
        first = self._atom(parts[0], env, s)
        rest = [self._atom(x, env, s) for x in parts[1:]]
        if not all(is_same(x) for x in rest):
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
        if isinstance(v, Rows) and all(is_same(x) for _, _, x in rest):
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
        nd = self._rank(name_of(a))
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
        nd = {self._rank(name_of(x)) for x in items}
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
        nd = self._rank(name_of(s.op.args[0]))
        if s.op.key is np.shape:
            return RowShape(nd + vals[0].axis, nd) if nd is not None else self._unknown(s)
        if s.op.key is np.size or (nd is not None and nd + vals[0].axis == 0):
            return COUNT
        return SAME if nd is not None else self._unknown(s)

    def _stop(self, s, binding, env):
        return self._atom(s.op.args[0], env, s)

    _DISPATCH = (
        (REDUCTIONS, _reduction),
        (ALONG_AXIS, _along_axis),
        (MATMUL, _matmul),
        ({np.transpose}, _transpose),
        ({np.reshape}, _reshape),
        (LIKE, _like),
        ({np.arange}, _arange),
        ({np.take_along_axis}, _take_along_axis),
        ({np.concatenate}, _concatenate),
        ({builtins.sum}, _builtin_sum),
        ({builtins.len, np.size, np.shape}, _sizes),
        (STOP, _stop),
        ("astype", _like),
    )
