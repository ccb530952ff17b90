"""Functions as values: ``functools.partial``, ``functools.reduce``, ``map`` and calls of a
function written as an expression (``(lambda t: t * t)(x)``, ``getattr(np, "tanh")(x)``).

Expects: the walk of ``anf``, name resolution (``resolve``), calls (``calls``) and inlining
(``inline``). Guarantees: nothing here is a value at run time. A function value is what a call
of it means, decided when compiling (a function known now, a def or lambda written in the
function, a partial application of one of these), and each call of it is lowered as the call it
stands for, inlined or by its rule:

- ``h = partial(f, a, k=v)`` (bound once, outside loops) records ``f`` and the atoms of ``a`` and
  ``v`` as they are there (a name rebound later is read from a snapshot, as the partial object
  holds the value); ``h(x, k=w)`` is ``f(a, x, k=w)``. A ``functools.partial`` object made at
  module level is the same, its arguments constants.
- ``reduce(op, seq[, init])`` over a list or tuple literal is unrolled, ``op`` called once per
  entry; over any other sequence it is a loop over its entries by index.
- ``map(f, xs, ...)`` is the list ``[f(x, ...) for x, ... in zip(xs, ...)]``, built by a loop:
  ``list(map(...))``, ``sum(map(...))`` and ``for y in map(...)`` read that list.

A function value used any other way (stored, returned, passed to a function of a library) is
refused where it is written.
"""

from __future__ import annotations

import builtins
import functools

import libcst as cst

from .. import fence, ir
from ..ir import Tup
from .resolve import Locals
from .syntax import BINOPS, code_of, names_read, tup

# operator.add(a, b) is a + b: the operator's own rule and text
_OPERATORS = {fn: (fn, sym) for fn, sym in BINOPS.values()}


class _Known:
    """A function known as a Python object, not written in the function (a module-level
    ``functools.partial``'s ``func``)."""

    def __init__(self, value):
        self.value = value


class _Partial:
    """``partial(fn, *args, **kwargs)``: ``fn`` a libcst node or a ``_Known``, the arguments atoms."""

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, tuple(args), tuple(kwargs)


class Functional:
    """The methods of the ``Normalizer`` for functions used as values."""

    def _higher_order_call(self, node):
        """A call whose function is an expression with a meaning known now (a lambda, a local
        partial, ``partial(...)(...)``), or ``functools.reduce`` / ``map``; else None."""
        func = node.func
        kind = type(func)
        if (
            kind is cst.Lambda
            or (kind is cst.Name and self._local(func.value) in self.partials)
            or (kind is cst.Call and self._is_partial(func))
        ):
            args, kwargs = self._call_args(node)
            return self._call_value(node, func, args, kwargs)
        if (
            kind not in (cst.Name, cst.Attribute)
            or (kind is cst.Name and func.value in self.local_defs)
            or self._is_local_expr(func)
        ):
            return None
        callee = self._static_callee(func)
        if callee is functools.reduce:
            return self._reduce(node)
        if callee is builtins.map:
            return self._map(node)
        return None

    # ---- calling a function value -------------------------------------------------------------
    def _call_value(self, node, fn, args, kwargs):
        """The call ``fn(*args, **kwargs)`` (atoms) at ``node``, ``fn`` a libcst expression of a
        function or a ``_Known``: lowered as that function's call (an ``Op`` or an atom)."""
        if isinstance(fn, _Known):
            return self._call_known(node, None, fn.value, args, kwargs)
        kind = type(fn)
        if kind is cst.Lambda:
            return self._call_local_def(node, self._anonymous_def(fn), args, kwargs)
        if kind is cst.Name and fn.value in self.local_defs:
            return self._call_local_def(node, fn.value, args, kwargs)
        if kind is cst.Name and self._local(fn.value) in self.partials:
            return self._call_partial(node, self.partials[self._local(fn.value)], args, kwargs)
        if kind is cst.Call and self._is_partial(fn):
            return self._call_partial(node, self._partial(fn), args, kwargs)
        callee = self._static_callee(fn) if kind in (cst.Name, cst.Attribute, cst.Call) else None
        if callee is None or not callable(callee):
            fence.refuse(
                self.src,
                fn,
                msg=f"{code_of(fn)} is not a function sourcegrad knows when it compiles",
                hint="pass a function named at module level, a numpy function, a def or lambda "
                "written in the function, or functools.partial of one of these",
            )
        return self._call_known(node, fn, callee, args, kwargs)

    def _call_partial(self, node, p, args, kwargs):
        merged = dict(p.kwargs)
        merged.update(kwargs)
        return self._call_value(node, p.fn, p.args + tuple(args), tuple(merged.items()))

    def _anonymous_def(self, lam):
        """A lambda written where a function is expected (``reduce(lambda a, b: a * b, xs)``):
        a local def of a fresh name, made once per lambda."""
        name = self.anonymous.get(id(lam))
        if name is None:
            name = self.anonymous[id(lam)] = self.naming.unique("lam")
            ret = cst.Return(value=lam.body)
            self.src.alias(ret, lam.body)
            tree = cst.FunctionDef(
                name=cst.Name(name), params=lam.params, body=cst.SimpleStatementSuite(body=[ret])
            )
            self.src.alias(tree, lam)
            self._local_def(name, tree, lam, anonymous=True)
        return name

    def _call_known(self, node, func, callee, args, kwargs):
        """The call of ``callee``, a function known now, written ``func`` (a libcst node, or None
        where it is not written: a module-level partial's function)."""
        if isinstance(callee, functools.partial):
            return self._call_partial(
                node,
                _Partial(
                    _Known(callee.func),
                    [self._constant(a, "partial") for a in callee.args],
                    [(k, self._constant(v, k)) for k, v in callee.keywords.items()],
                ),
                args,
                kwargs,
            )
        try:
            known = _OPERATORS.get(callee)
        except TypeError:  # unhashable
            known = None
        if known is not None and len(args) == 2 and not kwargs:
            return self._binop(*known, *args, node)
        if func is None or type(func) is cst.Lambda:
            written = self._alias(getattr(callee, "__name__", "function"), callee)
        else:
            written = self._text(func)
        return self._call_resolved(node, func, callee, args, kwargs, written)

    # ---- functools.partial ----------------------------------------------------------------------
    def _is_partial(self, call):
        """Is ``call`` ``functools.partial(...)``?"""
        func = call.func
        return (
            type(func) in (cst.Name, cst.Attribute)
            and not self._is_local_expr(func)
            and self._static_callee(func) is functools.partial
        )

    def _partial(self, call):
        """The ``_Partial`` of ``functools.partial(fn, ...)``, its arguments evaluated here."""
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            fence.refuse(
                self.src,
                call,
                msg="functools.partial takes the function first, by position",
                hint="functools.partial(f, a, k=v)",
            )
        args, kwargs = self._call_args(call, skip=1)
        pos = self._pos(call)
        return _Partial(
            call.args[0].value,
            [self._snapshot(a, pos) for a in args],
            [(k, self._snapshot(a, pos)) for k, a in kwargs],
        )

    def _snapshot(self, atom, pos):
        """``atom`` as it is now: a user's name is copied (it may be rebound before the call)."""
        if isinstance(atom, ir.Name) and atom.id not in self.naming.temps:
            tmp = self.naming.temp()
            self._emit(ir.Assign(tmp, self._copy_op(atom), pos))
            return ir.Name(tmp)
        if isinstance(atom, Tup):
            return tup([self._snapshot(a, pos) for a in atom], atom.is_list)
        return atom

    def _local_partial(self, name, call):
        """``h = functools.partial(f, ...)``: ``h`` stands for the partial application."""
        if self.bind_counts.get(name, 0) > 1 or self._loop_depth:
            fence.refuse(
                self.src,
                call,
                msg=f"the partial application {name!r} is rebound or made in a loop",
                hint="make it once, before the loop, under a name of its own",
            )
        self.partials[self._local(name)] = self._partial(call)

    def _refuse_partial_value(self, node):
        fence.refuse(
            self.src,
            node,
            msg=f"the partial application {node.value!r} can only be called: sourcegrad "
            "compiles each call of it as the call of its function",
            hint="call it, or pass it to map or functools.reduce",
        )

    # ---- functools.reduce and map ---------------------------------------------------------------
    def _positional(self, node, what, low, high):
        """The argument nodes of ``node``, all positional, ``low`` to ``high`` of them."""
        if (
            any(a.keyword is not None or a.star for a in node.args)
            or not low <= len(node.args) <= high
        ):
            fence.refuse(self.src, node, msg=f"{what}", hint=what)
        return [a.value for a in node.args]

    def _reduce(self, node):
        """``functools.reduce(op, seq[, init])``: unrolled over a literal, else a loop."""
        fn, seq_node, *init = self._positional(
            node, "functools.reduce(function, sequence[, initial]) by position", 2, 3
        )
        pos = self._pos(node)
        seq = self._atom(seq_node)
        acc = self._atom(init[0]) if init else None
        if isinstance(seq, Tup) or (
            isinstance(seq, ir.Const) and isinstance(seq.value, (tuple, list))
        ):
            items = (
                list(seq)
                if isinstance(seq, Tup)
                else [self._constant(v, "item") for v in seq.value]
            )
            if acc is None:
                if not items:
                    fence.refuse(
                        self.src,
                        node,
                        msg="functools.reduce of an empty sequence with no initial value",
                        hint="pass the initial value: functools.reduce(f, xs, initial)",
                    )
                acc, items = items[0], items[1:]
            for item in items:
                acc = self._value_atom(self._call_value(node, fn, (acc, item), ()), node)
            return acc
        seq = self._loop_operand(seq_node, _loop_like(seq_node), pos, atom=seq)
        total = ir.Name(self.naming.unique("acc"))
        start = 0
        if acc is None:
            first = self._getitem_op(seq, ir.Index((ir.Const(0, "0"),), False))
            self._emit(ir.Assign(total.id, first, pos))
            start = 1
        else:
            self._emit(ir.Assign(total.id, self._copy_op(acc), pos))
        k = self.naming.temp("k")
        rng = ir.text(
            f"{self.captures.bind('range')}({start}, {self.captures.bind('len')}({{}}))", seq
        )
        with self._in_loop(), self._collecting() as body:
            item = ir.Name(self.naming.temp())
            self._emit(
                ir.Assign(
                    item.id, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos, node=node
                )
            )
            value = self._call_value(node, fn, (total, item), ())
            self._emit(ir.Assign(total.id, _as_op(self, value), pos, node=node))
        self._emit(ir.For(k, rng, tuple(body), pos))
        return total

    def _map(self, node):
        """``map(f, xs, ...)``: the list of ``f``'s values, built by a loop over the entries (a
        loop over ``map`` itself calls ``f`` lazily: ``_map_loop``; ``_check_eager_map``)."""
        fn, *seq_nodes = self._positional(node, "map(function, sequence, ...) by position", 2, 64)
        pos = self._pos(node)
        literals = [self._atom(s) for s in seq_nodes]
        if all(isinstance(s, Tup) for s in literals):  # map(f, [a, b]): f(a), f(b), in order
            calls = [
                self._value_atom(self._call_value(node, fn, items, ()), node)
                for items in zip(*literals)
            ]
            return tup(calls, True)
        seqs = [
            self._loop_operand(s, _loop_like(s), pos, atom=a) for s, a in zip(seq_nodes, literals)
        ]
        result = self.naming.temp("list")
        self._emit(ir.Assign(result, self._copy_op(tup([], True)), pos))
        k = self.naming.temp("k")
        if len(seqs) == 1:
            rng = self._range_len(seqs[0])
        else:
            rng = self._range(self._zip_trips(seqs))
        with self._in_loop(), self._collecting() as body:
            items = []
            for seq in seqs:
                item = ir.Name(self.naming.temp())
                op = self._getitem_op(seq, ir.Index((ir.Name(k),), False))
                self._emit(ir.Assign(item.id, op, pos, node=node))
                items.append(item)
            value = self._value_atom(self._call_value(node, fn, tuple(items), ()), node)
            self._emit(ir.Append(result, value, pos))
        self._emit(ir.For(k, rng, tuple(body), pos))
        return ir.Name(result)

    def _check_eager_map(self, node, s):
        """``node``, read by loop ``s`` through ``enumerate``, ``zip`` or ``reversed``, is made
        before the loop runs: refuse a ``map`` whose function reads a name the loop rebinds
        (Python would call it lazily, after the loop's body rebinds it)."""
        if not (
            type(node) is cst.Call
            and node.args
            and type(node.func) in (cst.Name, cst.Attribute)
            and not self._is_local_expr(node.func)
            and self._static_callee(node.func) is builtins.map
        ):
            return
        if self._function_reads(node.args[0].value) & self._rebound(s):
            fence.refuse(
                self.src,
                node,
                msg="map of a function that reads a variable this loop rebinds, read through "
                "enumerate, zip or reversed: Python calls the function as the loop runs",
                hint="loop over the sequences and call the function in the loop's body",
            )

    def _function_reads(self, fn):
        """The local names (as generated) a function value written in the function may read."""
        if type(fn) is cst.Lambda:
            names = names_read(fn.body)
        elif type(fn) is cst.Name and fn.value in self.local_defs:
            names = Locals(self.local_defs[fn.value][1]).all_names
        elif type(fn) is cst.Name and self._local(fn.value) in self.partials:
            inner = self.partials[self._local(fn.value)].fn
            return self._function_reads(inner) if isinstance(inner, cst.CSTNode) else set()
        elif type(fn) is cst.Call and self._is_partial(fn) and fn.args:
            return self._function_reads(fn.args[0].value)
        else:
            return set()
        return {self._local(n) for n in names if n in self.locals}

    def _map_loop(self, it, target, s, pos, enter):
        """``for y in map(f, xs, ...)`` (a loop or a comprehension): a loop over the entries whose
        body first binds ``y`` to ``f``'s value, as Python calls ``f`` lazily, one entry before
        each iteration (the loop's body may rebind what ``f`` reads)."""
        fn, *seq_nodes = self._positional(it, "map(function, sequence, ...) by position", 2, 64)
        seqs = [self._loop_operand(q, s, pos) for q in seq_nodes]
        enter()
        k = self.naming.temp("k")
        rng = self._range_len(seqs[0]) if len(seqs) == 1 else self._range(self._zip_trips(seqs))

        def bind():
            items = []
            for seq in seqs:
                item = ir.Name(self.naming.temp())
                op = self._getitem_op(seq, ir.Index((ir.Name(k),), False))
                self._emit(ir.Assign(item.id, op, pos, node=it))
                items.append(item)
            value = self._call_value(it, fn, tuple(items), ())
            self._bind_value(target, _as_op(self, value), pos)

        return rng, k, [bind]

    def _value_atom(self, op, node):
        """An atom holding the value of ``op`` (an ``Op``, or an atom already)."""
        if isinstance(op, (ir.Name, ir.Const, Tup)):
            return op
        tmp = self.naming.temp()
        self._emit(ir.Assign(tmp, op, self._pos(node), node=node))
        return ir.Name(tmp)


def _as_op(normalizer, value):
    return value if isinstance(value, ir.Op) else normalizer._copy_op(value)


def _loop_like(seq_node):
    """A loop over ``seq_node`` that binds nothing (what ``_loop_operand`` asks of a loop)."""
    return cst.For(target=cst.Name("_"), iter=seq_node, body=cst.IndentedBlock(body=[]))


__all__ = ["Functional"]
