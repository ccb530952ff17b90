"""Shape inference for one call signature: the shapes of the arrays a function computes, given
the shapes of the arrays it is called with.

Expects: a normalized ``ir.Function``, its call bindings, and a description of each argument
(``describe``: an array's shape, a Python int or float, or nothing known). Guarantees: a
``Shapes`` whose ``of(name)`` is the shape of *every* value the name may hold and whose
``made(stmt)`` is the shape of the value one assignment makes, or None where that is not known.

Sound by construction: the analysis is flow-insensitive (a name's shape is the join of all its
definitions, through loops and branches, so no path can give another shape), it knows a short
list of primitives whose result shape follows from their operands' shapes alone (ufuncs,
broadcasting operators, reductions with literal axes, ``dot``/``matmul``, transposes, reshapes,
basic indexing, ``zeros``/``*_like``, ``x.shape``; each declares its kind of shape with its rule,
``rule(np.sum, ..., shape="reduction")``), and everything else is unknown. Integer
values are tracked where they come from literals and shapes (``np.zeros((x.shape[0], 3))``);
a Python int argument's value is never assumed, so the result holds for any value.

What it is for: with shapes known, the backward drops the ``unbroadcast`` calls (and the shape
saves that feed them) where an operand already has its result's shape, and uses the rank-2 form
of ``dot`` adjoints. ``sourcegrad`` compiles one such specialization per argument signature,
as ``jax.jit`` does, and the general code for everything else.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import numpy as np

from . import ir
from . import rules as R
from .ir import ATTRIBUTE_READ, Tup

# ---- abstract values ------------------------------------------------------------------------


@dataclass(frozen=True)
class Arr:
    """An array (or numpy scalar, or Python float: shape ``()``) of this shape."""

    shape: tuple


@dataclass(frozen=True)
class Int:
    """A Python int (a loop index, a size); ``value`` when it is the same on every run."""

    value: object = None


@dataclass(frozen=True)
class Seq:
    """A tuple of known length (``x.shape``, a tuple literal)."""

    items: tuple


TOP = "unknown"  # any value at all


def describe(value):
    """The abstract value of an argument, from what the call signature records of it."""
    if isinstance(value, tuple) and all(type(k) is int for k in value):
        return Arr(value)  # an array's shape
    if value is float:
        return Arr(())
    if value is int:
        return Int()
    return TOP


def _unchanged_since(step, names, changed_at):
    """Has none of ``names`` changed after ``step``?"""
    for n in names:
        if changed_at.get(n, -1) >= step:
            return False
    return True


def _join(a, b):
    if a is None:
        return b
    if a == b:
        return a
    if isinstance(a, Int) and isinstance(b, Int):
        return Int()
    return TOP


def _shape(v):
    """The shape of an abstract value that behaves as an array in numpy arithmetic."""
    if isinstance(v, Arr):
        return v.shape
    if isinstance(v, Int):
        return ()
    return None


def _broadcast(values):
    shapes = []
    for v in values:
        shape = _shape(v)
        if shape is None:
            return TOP
        shapes.append(shape)
    first = None  # numpy's answer for one shape and scalars, without asking numpy
    for shape in shapes:
        if not shape:
            continue
        if first is None:
            first = shape
        elif shape != first:
            break
    else:
        if first is None:
            return Arr(())
        for k in first:
            if type(k) is not int or k < 0:
                break
        else:
            return Arr(first)
    try:
        return Arr(tuple(np.broadcast_shapes(*shapes)))
    except ValueError:
        return TOP  # the forward raises; nothing to specialize


# ---- integer arithmetic: values the analysis computes, not only shapes ---------------------------

_INT_OPS = {
    operator.add: operator.add,
    operator.sub: operator.sub,
    operator.mul: operator.mul,
    operator.floordiv: operator.floordiv,
    operator.mod: operator.mod,
    np.add: operator.add,
    np.subtract: operator.sub,
    np.multiply: operator.mul,
}


class Shapes:
    """Runs the inference once; ``of`` and ``made`` answer from its result."""

    MAX_PASSES = 50

    def __init__(self, fn, bindings, params):
        self.bindings = bindings
        self.stmts = [s for s in ir.walk(fn.body) if isinstance(s, (ir.Assign, ir.For))]
        defined = {s.target for s in self.stmts} | set(params)
        self.env = {n: TOP for s in ir.walk(fn.body) for n in ir.reads(s) if n not in defined}
        self.env.update(params)
        self._made = {}
        self._solve()

    def of(self, name):
        """The shape every value of ``name`` has, or None."""
        v = self.env.get(name)
        return v.shape if isinstance(v, Arr) else None

    def made(self, stmt):
        """The shape of the value assignment ``stmt`` makes, or None."""
        v = self._made.get(id(stmt))
        return v.shape if isinstance(v, Arr) else None

    def rank(self, name):
        shape = self.of(name)
        return None if shape is None else len(shape)

    def _solve(self):
        # A statement's value depends only on the values of the names it reads: one whose names
        # have not changed since it was last evaluated would give the same again, and is skipped
        # (straight-line code settles in one pass instead of two).
        reads = [() if isinstance(s, ir.For) else s.op.arg_names() for s in self.stmts]
        changed_at = {}  # name -> the step its value last changed
        seen_at = [-1] * len(self.stmts)  # statement -> the step it was last evaluated
        step = 0
        for _ in range(self.MAX_PASSES):
            changed = False
            for k, s in enumerate(self.stmts):
                seen = seen_at[k]
                if seen >= 0 and _unchanged_since(seen, reads[k], changed_at):
                    continue
                step += 1
                seen_at[k] = step
                loop = type(s) is ir.For
                v = Int() if loop else self._eval(s)
                if v is None:  # an operand has no value yet (defined later in a loop)
                    continue
                if not loop:
                    self._made[id(s)] = _join(self._made.get(id(s)), v)
                old = self.env.get(s.target)
                new = _join(old, v)
                if old is None or new != old:
                    self.env[s.target] = new
                    changed_at[s.target] = step
                    changed = True
            if not changed:
                unset = [s.target for s in self.stmts if s.target not in self.env]
                if not unset:
                    return
                for n in unset:  # never computed (only defined from each other): unknown
                    self.env[n] = TOP
                    step += 1
                    changed_at[n] = step
        self.env = {n: TOP for n in self.env}  # did not settle: know nothing
        self._made = {}

    # ---- one assignment ------------------------------------------------------------------------
    def _atom(self, a):
        """An operand's abstract value; None while a name has none yet."""
        if isinstance(a, ir.Name):
            return self.env.get(a.id)
        if isinstance(a, ir.Const):
            v = a.value
            if type(v) is int:
                return Int(v)
            if type(v) is float:
                return Arr(())
            return TOP
        if isinstance(a, Tup) and not a.is_list:  # a list can grow: only tuples keep a length
            items = tuple(self._atom(x) for x in a)
            return None if any(i is None for i in items) else Seq(items)
        return TOP

    def _eval(self, s):
        op = s.op
        args = []
        index = False  # is an operand an index?
        for a in op.args:
            v = self._atom(a)
            if v is None:
                return None
            args.append(v)
            index = index or isinstance(a, ir.Index)
        if op.kind == "copy":
            return args[0]
        if op.kind not in ("call", "nondiff"):
            return TOP
        key = op.key
        try:
            if key is operator.getitem and len(op.args) == 2 and isinstance(op.args[1], ir.Index):
                return self._getitem(op.args[0], op.args[1])
            if index:
                return TOP
            if key == ATTRIBUTE_READ:
                return _attribute(op.text.rsplit(".", 1)[-1], args[0])
            return _call(key, args, op, self.bindings.get(id(op)), self._atom)
        except (TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError):
            return TOP

    def _getitem(self, base, index):
        v = self._atom(base)
        if v is None or any(self.env.get(n) is None for n in index.names()):
            return None
        if isinstance(v, Seq):
            if len(index.parts) == 1 and not index.is_tuple:
                k = self._atom(index.parts[0])
                if (
                    isinstance(k, Int)
                    and k.value is not None
                    and -len(v.items) <= k.value < len(v.items)
                ):
                    return v.items[k.value]
            return TOP
        if not isinstance(v, Arr):
            return TOP
        return _index_shape(v.shape, index.parts, self._atom)


def _attribute(name, v):
    if not isinstance(v, Arr):
        return TOP
    if name == "shape":
        return Seq(tuple(Int(k) for k in v.shape))
    if name == "ndim":
        return Int(len(v.shape))
    if name == "size":
        return Int(math.prod(v.shape))
    return TOP


def _index_shape(shape, parts, atom):
    """The shape of ``x[parts]`` for basic indexing (ints, slices, None, ...), else TOP."""
    if sum(p is Ellipsis for p in parts) > 1:
        return TOP
    used = sum(1 for p in parts if p is not None and p is not Ellipsis)
    if used > len(shape):
        return TOP
    out, axis = [], 0
    for p in parts:
        if p is None:
            out.append(1)
        elif p is Ellipsis:
            n = len(shape) - used
            out.extend(shape[axis : axis + n])
            axis += n
        elif isinstance(p, ir.Slice):
            bounds = [None if b is None else atom(b) for b in (p.lower, p.upper, p.step)]
            if any(
                b is not None and not (isinstance(b, Int) and b.value is not None) for b in bounds
            ):
                return TOP
            out.append(len(range(shape[axis])[slice(*(b and b.value for b in bounds))]))
            axis += 1
        else:
            k = atom(p)
            if not isinstance(k, Int):  # an array index (fancy indexing, masks): unknown
                return TOP
            axis += 1
    return Arr(tuple(out) + tuple(shape[axis:]))


def _int_values(v):
    """A shape given as an int or a tuple of ints, when every entry is known."""
    if isinstance(v, Int) and v.value is not None:
        return (v.value,)
    if isinstance(v, Seq) and all(isinstance(i, Int) and i.value is not None for i in v.items):
        return tuple(i.value for i in v.items)
    return None


def _const(binding, name, default=None):
    """A call's literal argument for parameter ``name`` (its default when not passed), and
    whether it is known; never known without a binding."""
    if binding is None:
        return None, False
    a = binding.values.get(name)
    if a is None:
        return default, True
    if isinstance(a, ir.Const):
        return a.value, True
    if isinstance(a, Tup) and all(isinstance(x, ir.Const) for x in a):
        return tuple(x.value for x in a), True
    return None, False


# ---- the primitives whose result shape the analysis knows -------------------------------------
# A primitive declares its kind of shape where its rule is registered (``transforms/rules/``:
# ``rule(np.sum, ..., shape="reduction")``); each kind is one function below, called with the
# primitive, its operands' abstract values, the operation, its binding and ``atom``.


def _call(key, args, op, binding, atom):
    # elementwise (not a gufunc: matmul, vecdot)
    if isinstance(key, np.ufunc) and key.signature is None:
        return _ufunc(key, args, op)
    kind = R.SHAPES.get(key)
    if kind is not None:
        return _KINDS[kind](key, args, op, binding, atom)
    if getattr(key, "__module__", None) == "math" and all(isinstance(a, (Arr, Int)) for a in args):
        return Arr(())  # math functions return Python floats (or fail on arrays)
    return TOP


def _ufunc(key, args, op):
    if op.kwargs and any(k != "dtype" for k, _ in op.kwargs):
        return TOP  # out=, where=: not a plain elementwise call
    if key.nout != 1 or len(args) != key.nin:
        return TOP
    if key in _INT_OPS and all(isinstance(a, Int) for a in args):
        return _int_op(key, args)
    return _broadcast(args)


def _operator(key, args, op, binding, atom):
    """A Python binary operator: exact on ints, ``+`` concatenates tuples, arrays broadcast."""
    if len(args) != 2:
        return TOP
    if all(isinstance(a, Int) for a in args):
        return _int_op(key, args) if key in _INT_OPS else TOP
    if any(isinstance(a, Seq) for a in args):
        if key is operator.add and all(isinstance(a, Seq) for a in args):
            return Seq(args[0].items + args[1].items)
        return TOP  # tuple repetition and the like
    return _broadcast(args)


def _unary_operator(key, args, op, binding, atom):
    if len(args) != 1:
        return TOP
    if isinstance(args[0], Int):
        return Int(key(args[0].value)) if args[0].value is not None else Int()
    return _broadcast(args)


def _product_call(key, args, op, binding, atom):
    if op.kwargs or len(args) != 2:
        return TOP
    return _product(key, args)


def _transpose(key, args, op, binding, atom):
    axes, known = _const(binding, "axes")
    if not known or not isinstance(args[0], Arr):
        return TOP
    shape = args[0].shape
    return Arr(tuple(reversed(shape)) if axes is None else tuple(shape[a] for a in axes))


def _swapaxes(key, args, op, binding, atom):
    (a1, k1), (a2, k2) = _const(binding, "axis1"), _const(binding, "axis2")
    if not (k1 and k2 and isinstance(args[0], Arr)) or type(a1) is not int or type(a2) is not int:
        return TOP
    shape = list(args[0].shape)
    shape[a1], shape[a2] = shape[a2], shape[a1]
    return Arr(tuple(shape))


def _where(key, args, op, binding, atom):
    return _broadcast(args) if len(args) == 3 and not op.kwargs else TOP


def _create(key, args, op, binding, atom):
    """``np.zeros(shape)`` and its kin: the shape is an argument."""
    shape = (
        _int_values(atom(binding.values["shape"]))
        if binding is not None
        else (_int_values(args[0]) if args else None)
    )
    return Arr(shape) if shape is not None else TOP


def _like(key, args, op, binding, atom):
    """``np.zeros_like(a)`` and its kin: ``a``'s shape (and no ``shape=`` to override it)."""
    if any(k != "dtype" for k, _ in op.kwargs) or len(args) > (2 if key is np.full_like else 1):
        return TOP
    return args[0] if isinstance(args[0], Arr) else TOP


def _operand(key, args, op, binding, atom):
    """The shape of the one operand."""
    if len(args) != 1 or op.kwargs:
        return TOP
    return args[0] if isinstance(args[0], Arr) else TOP


def _scatter(key, args, op, binding, atom):
    """``buf = add_at(buf, idx, v)``: ``buf`` keeps its shape."""
    if len(args) != 3:
        return TOP
    return args[0] if isinstance(args[0], Arr) else TOP


def _copy(key, args, op, binding, atom):
    """The operand's shape, for arrays of rank >= 1 (``np.ascontiguousarray`` makes a 0-d
    array 1-d)."""
    if len(args) != 1 or op.kwargs:
        return TOP
    return args[0] if isinstance(args[0], Arr) and len(args[0].shape) >= 1 else TOP


def _len(key, args, op, binding, atom):
    if len(args) != 1:
        return TOP
    v = args[0]
    if isinstance(v, Arr) and v.shape:
        return Int(v.shape[0])
    return Int(len(v.items)) if isinstance(v, Seq) else TOP


def _int_op(key, args):
    a, b = (x.value for x in args)
    if a is None or b is None:
        return Int()
    return Int(_INT_OPS[key](a, b))


def _product(key, args):
    a, b = (_shape(x) for x in args)
    if a is None or b is None:
        return TOP
    if key is np.dot and (not a or not b):
        return _broadcast(args)  # dot with a scalar multiplies
    if not a or not b:
        return TOP  # matmul refuses scalars
    if len(a) == 1 and len(b) == 1:
        return Arr(()) if a == b else TOP
    if len(b) == 1:
        return Arr(a[:-1]) if a[-1] == b[0] else TOP
    if len(a) == 1:
        return Arr(b[:-2] + b[-1:]) if a[0] == b[-2] else TOP
    if a[-1] != b[-2]:
        return TOP
    if len(a) == 2 and len(b) == 2:
        return Arr((a[0], b[1]))
    if key is np.dot:
        return TOP  # dot of stacks is not matmul's batching: left unknown
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    return Arr(tuple(batch) + (a[-2], b[-1]))


def _reduction_call(key, args, op, binding, atom):
    return _reduction(args[0], binding)


def _reduction(v, binding):
    axis, known_axis = _const(binding, "axis")
    keepdims, known_keep = _const(binding, "keepdims", False)
    if not (known_axis and known_keep) or type(keepdims) is not bool:
        return TOP
    if isinstance(v, Int):
        return Arr(())
    if not isinstance(v, Arr):
        return TOP
    n = len(v.shape)
    if axis is None:
        axes = set(range(n))
    else:
        axes = (
            {operator.index(a) % n for a in (axis if isinstance(axis, tuple) else (axis,))}
            if n
            else None
        )
        if axes is None:
            return TOP
    if keepdims:
        return Arr(tuple(1 if i in axes else k for i, k in enumerate(v.shape)))
    return Arr(tuple(k for i, k in enumerate(v.shape) if i not in axes))


def _reshape_call(key, args, op, binding, atom):
    return _reshape(args[0], binding, atom)


def _reshape(v, binding, atom):
    if binding is None or not isinstance(v, Arr):
        return TOP
    order, known = _const(binding, "order", "C")
    new = binding.values.get("shape")
    if not known or new is None:
        return TOP
    shape = _int_values(atom(new)) if not isinstance(new, Tup) or not new.is_list else None
    if shape is None:
        return TOP
    size = math.prod(v.shape)
    if shape.count(-1) == 1:
        rest = math.prod(k for k in shape if k != -1)
        if rest == 0 or size % rest:
            return TOP
        shape = tuple(size // rest if k == -1 else k for k in shape)
    if any(k < 0 for k in shape) or math.prod(shape) != size:
        return TOP
    return Arr(shape)


# kind (as ``rules.facts`` declares it) -> the function that gives a call's result shape
_KINDS = {
    "operator": _operator,
    "unary_operator": _unary_operator,
    "product": _product_call,
    "transpose": _transpose,
    "swapaxes": _swapaxes,
    "where": _where,
    "reduction": _reduction_call,
    "reshape": _reshape_call,
    "create": _create,
    "like": _like,
    "operand": _operand,
    "scatter": _scatter,
    "copy": _copy,
    "len": _len,
}
