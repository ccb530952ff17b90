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

The walk over statements, indexing and attributes is here; the values and the tables of
primitives by kind are in ``values.py``, and how each kind treats rows in ``primitives.py``.
"""

from __future__ import annotations

import operator

import numpy as np

from sourcegrad.errors import LocatedError

from .. import fence, ir
from ..ir import ATTRIBUTE_READ, Tup
from .primitives import Primitives
from .values import (
    Rows,
    Total,
    RowShape,
    Seq,
    Mixed,
    SAME,
    ZERO,
    COUNT,
    IOTA,
    join,
    is_same,
    astype_keys,
    NOT_CONST,
    plain_binding,
    name_of,
    is_in,
    elementwise_key,
)

__all__ = ["RowMixingError", "check"]


class RowMixingError(LocatedError, ValueError):
    """A function that ``sourcegrad.dask.data_parallel`` cannot split over rows: a statement mixes
    rows (or reads them in a way the analysis does not know to be per row)."""


# ---- the walk ---------------------------------------------------------------------------------


def check(src, fn, bindings, shapes, over, args=None):
    """``"sum"`` or ``"mean"``: how ``fn``'s value combines over chunks of the rows of ``over``;
    raises ``RowMixingError`` otherwise (see the module docstring). ``args``: the call's arguments
    by parameter name, where the shapes of arrays inside containers (a ``params`` dict) are read."""
    return _Walker(src, fn, bindings, shapes, over, args or {}).run()


class _Walker(Primitives):
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
        self.astype = astype_keys()

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
        if is_same(v):
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
            env[s.target] = join(env.get(s.target), Seq(self._atom(s.value, env, s)))
        elif isinstance(s, ir.Return):
            self.returns.append((self._atom(s.value, env, s), s))
        elif isinstance(s, (ir.If, ir.While, ir.LoopExit)):
            self._test(s, s.test, env, "a branch or loop test")
            if isinstance(s, ir.If):
                other = dict(env)
                self._block(s.body, env)
                self._block(s.orelse, other)
                for k in set(env) | set(other):
                    env[k] = join(env.get(k), other.get(k))
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
                env[k] = join(before.get(k), env.get(k))
            if env == before:
                return
        raise self._error(s, "the analysis of this loop did not settle", "simplify the loop")

    def _test(self, s, text, env, what):
        for n in sorted(ir.idents(text)):
            v = env.get(n, SAME)
            if not is_same(v):
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
                out = join(out, v)
            return Seq(out if out is not None else SAME)
        if isinstance(a, ir.Index):
            vals = [env.get(n, SAME) for n in a.names()]
            return SAME if all(is_same(v) for v in vals) else Mixed(tuple(vals))
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
        if all(is_same(v) for v in values):
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
        binding = self.bindings.get(id(op)) or plain_binding(op)
        for kinds, method in self._DISPATCH:
            if is_in(key, kinds) or (kinds == "astype" and key in self.astype):
                return method(self, s, binding, env)
        return self._elementwise(s, binding, env) if elementwise_key(key) else self._unknown(s)

    def _unknown(self, s):
        raise self._error(
            s,
            f"{s.op.text.split('(')[0]} reads values that depend on the rows, and the "
            "analysis does not know it to work row by row",
            "only elementwise work, rows @ weights, per-row reductions and gathers, and a final "
            "np.sum or np.mean over the rows are split",
        )

    # -- indexing and attributes --

    def _attribute(self, s, attr, v):
        if isinstance(v, Rows):
            nd = self._rank(name_of(s.op.args[0]))
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
        if all(is_same(pv) for _, pv in parts):
            if is_same(v):
                return SAME
            if isinstance(v, Total):
                return v
            if isinstance(v, RowShape):
                return self._shape_item(s, v, index)
            if isinstance(v, Seq):
                return v.item
            if isinstance(v, Rows):
                return self._basic_index(s, base, v, index, env)
        if is_same(v) and len(parts) == 1 and not index.is_tuple and isinstance(parts[0][1], Rows):
            # table[rows_of_indices]: a per-row gather (an embedding lookup)
            rb, rt = self._rank(name_of(parts[0][0])), self._rank(name_of(base))
            if rb is not None and rt is not None and rt >= 1:
                return Rows(parts[0][1].axis - (rt - 1), rb + rt - 1)
        if (
            isinstance(v, Rows)
            and len(parts) == 2
            and parts[0][1] is IOTA
            and v.axis == -2
            and self._rank(name_of(base)) == 2
            and (is_same(parts[1][1]) or (isinstance(parts[1][1], Rows) and parts[1][1].axis == -1))
            and self._rank(name_of(parts[1][0])) in (0, 1)
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
            return SAME if all(is_same(x) for x in vals) else Mixed(tuple(vals))
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
        nd = self._rank(name_of(base))
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
        if is_same(target) and is_same(value) and all(is_same(x) for x in index_vals):
            return target
        if (
            isinstance(target, Rows)
            and (is_same(value) or value == target)
            and len(s.index.parts) == 1
            and index_vals[0] == target
            and not s.index.is_tuple
        ):
            return target  # h[h < 0] = 0: a mask shaped as the rows
        if (
            isinstance(target, Rows)
            and (is_same(value) or isinstance(value, Rows))
            and all(is_same(x) for x in index_vals)
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
        base = name_of(op.args[0]) if op.args else None
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
        elif elementwise_key(op.key):
            shapes = [() if isinstance(a, ir.Const) else self._shape(name_of(a)) for a in op.args]
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
        return NOT_CONST

    def _error(self, s, what, hint):
        where = getattr(s, "node", None) or getattr(s, "pos", None)
        msg = f"{self.fn.qualname} cannot be split over the rows of {', '.join(self.over)}: {what}"
        if where is None:
            return RowMixingError(msg, hint=hint)
        return fence.located(RowMixingError, self.src, where, msg, hint)
