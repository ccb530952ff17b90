"""Writes through a view of a local array land in the array: ``row = acc[i]; row += f``.

numpy's basic indexing gives a view, so ``row += f`` (or ``row[j] = v``, ``np.add(a, b,
out=row)``) changes ``acc``. The backward reads an in-place write as a new value of the name
written, which for ``row`` would leave ``acc``'s adjoint unaware of it; ``aliasing.py`` refuses
such a write. Where the view is known, this pass writes through the array instead, as numpy
does, and reads the view again after the write::

    row = acc[i]                      row = acc[i]
    row += f              ->          _t0 = acc[i]
                                      _t1 = _t0 + f
                                      acc[i] = _t1      (augmented)
                                      row = acc[i]

Expects: the IR after ``exits``. Guarantees: a write into a name known to hold a view of a
local array is a write into that array; every other write is left as it is (``aliasing.py``
refuses it where another name would see it). A view is known where ``row = acc[index]`` is

- **a view**: ``acc`` is a local array (every binding of it makes new memory, never a list or
  tuple, and it is no argument), and every part of ``index`` is a slice, ``None``, ``...``, an
  integer literal, or a name that only ever holds an integer (a loop's index, ``i = 2``): an
  integer array there would make a copy, which a write must not reach ``acc`` through. An index
  of integers alone must leave an axis (``acc`` of a rank known now, ``np.zeros((n, d))``):
  ``acc[i]`` of a vector is a numpy scalar, a copy;
- **still the view** where the write is: the write is later in the same block, or in a block
  nested in it (a loop body only where nothing in that body rebinds ``row``, ``acc`` or the
  index's names), and nothing between rebinds any of them.

``row[j] = v`` becomes ``acc[i, j] = v`` where ``index`` is integers only and ``j`` basic
(``acc[i][j]`` is then ``acc[i, j]``); ``row[...] = v`` (``out=row``) is ``acc[index] = v``.
"""

from __future__ import annotations

import operator
from dataclasses import replace

import numpy as np

from . import ir
from .aliasing import _makes_container, fresh

# the operators of ``x op= v`` (``normalize/assign.py``), by the symbol their text shows
_AUGMENTED = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.floordiv: "//",
    operator.pow: "**",
    operator.mod: "%",
    operator.matmul: "@",
}


def rewrite(body, params, naming):
    """``body`` with the writes through known views of local arrays made into writes into the
    arrays (a new tuple; the same one where there are none)."""
    stmts = ir.walk(body)
    if not any(_is_write(s) for s in stmts):
        return body
    facts = _Facts(stmts, params)
    if not facts.arrays:
        return body
    return tuple(_Block(facts, naming).run(body, {}))


def _is_write(s):
    return isinstance(s, ir.SetItem) or (isinstance(s, ir.Assign) and s.inplace)


class _Facts:
    """What holds everywhere in the function: the local arrays and the integer names."""

    def __init__(self, stmts, params):
        bindings = {}
        for s in stmts:
            if isinstance(s, ir.Assign) or isinstance(s, ir.For):
                bindings.setdefault(s.target, []).append(s)
        candidates = {n: b for n, b in bindings.items() if n not in params}
        self.arrays = set()
        while True:  # a fixpoint: ``acc = np.zeros(n)`` first, then ``acc2 = acc * w``
            more = {
                n
                for n, binds in candidates.items()
                if n not in self.arrays and all(_makes_array(b, self.arrays) for b in binds)
            }
            if not more:
                break
            self.arrays |= more
        self.integers = {
            name
            for name, binds in bindings.items()
            if name not in params and all(_binds_integer(b) for b in binds)
        }
        self.ranks = {}
        for name in self.arrays:
            ranks = {_rank(b, self.ranks) for b in bindings[name] if not b.inplace}
            if len(ranks) == 1 and None not in ranks:
                self.ranks[name] = ranks.pop()


# functions whose first argument is the shape of the array they make
_MADE_OF_SHAPE = {np.zeros, np.ones, np.empty, np.full}
_MATRICES = {np.outer, np.eye, np.identity}


def _rank(s, ranks):
    """The number of dimensions of the array ``s`` makes, where it is known now (a shape
    written out, ``np.outer``, a copy or a scalar multiple of an array of known rank), or None."""
    op = s.op
    key = op.key
    if _member(key, _MADE_OF_SHAPE) and op.args:
        shape = op.args[0]
        if isinstance(shape, ir.Tup):
            return len(shape)
        if isinstance(shape, ir.Const):
            v = shape.value
            return 1 if type(v) is int else len(v) if isinstance(v, tuple) else None
        return None
    if _member(key, _MATRICES):
        return 2
    names = [a for a in op.args if isinstance(a, ir.Name)]
    if (key is np.copy or _is_augmented(key) or key is operator.neg) and len(names) == 1:
        if all(isinstance(a, ir.Name) or type(a.value) in (int, float) for a in op.args):
            return ranks.get(names[0].id)
    return None


def _member(key, group):
    try:
        return key in group
    except TypeError:
        return False


def _makes_array(s, arrays):
    """Does the binding ``s`` leave its target an array of its own memory (or update it in
    place), given the names ``arrays`` known to hold arrays? A library call that makes new
    memory does (``np.zeros``, ``np.copy``, a ufunc); a Python operator does where an operand
    is such an array or a float (``[a] + [b]``, ``t * 2`` of a tuple make sequences)."""
    if not isinstance(s, ir.Assign):
        return False
    op = s.op
    if s.inplace:
        return True  # x op= v, np.add.at(x, ...): updates what the other bindings made
    if _is_augmented(op.key) or op.key is operator.neg:
        return any(
            (isinstance(a, ir.Name) and a.id in arrays)
            or (isinstance(a, ir.Const) and type(a.value) in (float, complex))
            for a in op.args
        )
    if op.kind == "copy" or _makes_container(op):
        return False
    if op.key is np.copy and op.text.endswith(".copy()"):  # xs.copy() of a list is a list
        return isinstance(op.args[0], ir.Name) and op.args[0].id in arrays
    return fresh(op) and ir.module_of(op.key).partition(".")[0] not in (
        "builtins",
        "operator",
        "_operator",
    )


def _is_augmented(key):
    try:
        return key in _AUGMENTED
    except TypeError:  # an unhashable key (a dataclass instance): no operator
        return False


def _binds_integer(s):
    if isinstance(s, ir.For):
        return True  # every loop is over a range (``normalize/loops.py``)
    op = s.op
    return (
        not s.inplace
        and op.kind == "copy"
        and isinstance(op.args[0], ir.Const)
        and type(op.args[0].value) is int
    )


class _Block:
    def __init__(self, facts, naming):
        self.facts = facts
        self.naming = naming

    def basic(self, part, integers_only=False):
        """Is ``part`` of an index one that keeps it basic (a view)?"""
        if isinstance(part, ir.Const):
            return type(part.value) is int
        if isinstance(part, ir.Name):
            return part.id in self.facts.integers
        if integers_only:
            return False
        return part is None or part is Ellipsis or isinstance(part, ir.Slice)

    def view_of(self, s):
        """(array, index) when ``s`` binds its target to a view of a local array, else None. An
        index of integers alone picks a numpy scalar, a copy, where it has one for every axis:
        it is a view only where the array's rank is known to be larger."""
        op = s.op
        if s.inplace or op.key is not operator.getitem or op.kind != "call":
            return None
        base, index = op.args
        if not (isinstance(base, ir.Name) and base.id in self.facts.arrays):
            return None
        if not all(self.basic(p) for p in index.parts):
            return None
        if all(self.basic(p, integers_only=True) for p in index.parts):
            rank = self.facts.ranks.get(base.id)
            if rank is None or len(index.parts) >= rank:
                return None
        return base.id, index

    def run(self, stmts, views):
        """The statements rewritten, given the views known where they start (``views``: name ->
        (array, index), updated to those known after them)."""
        out = []
        for s in stmts:
            kind = type(s)
            if kind is ir.Assign:
                if s.inplace and s.target in views:
                    written = self.augmented(s, views[s.target])
                    if written is not None:
                        out.extend(written)
                        continue
                if not s.inplace:
                    _forget(views, {s.target})
                    found = self.view_of(s)
                    if found is not None and found[0] != s.target:
                        views[s.target] = found
                out.append(s)
            elif kind is ir.SetItem and s.target in views:
                out.extend(self.setitem(s, views[s.target]))
            elif kind is ir.If:
                body = self.run(s.body, dict(views))
                orelse = self.run(s.orelse, dict(views))
                _forget(views, _bound(s.body) | _bound(s.orelse))
                out.append(replace(s, body=tuple(body), orelse=tuple(orelse)))
            elif kind in (ir.For, ir.While):
                bound = _bound(s.body) | ({s.target} if kind is ir.For else set())
                inner = dict(views)
                _forget(inner, bound)
                body = self.run(s.body, inner)
                _forget(views, bound)
                out.append(replace(s, body=tuple(body)))
            else:
                out.append(s)
        return out

    def augmented(self, s, view):
        """``row op= v`` of a view ``row = acc[index]``: ``acc[index] op= v``, then ``row``
        read again (None where ``s`` is no ``x op= v``)."""
        op = s.op
        sym = _AUGMENTED.get(op.key) if _is_augmented(op.key) else None
        if (
            sym is None
            or len(op.args) != 2
            or not isinstance(op.args[0], ir.Name)
            or op.args[0].id != s.target
        ):
            return None
        array, index = view
        cur, new = self.naming.temp(), self.naming.temp()
        value = op.args[1]
        return [
            ir.Assign(cur, _getitem(array, index), s.pos),
            ir.Assign(
                new,
                ir.Op(op.key, (ir.Name(cur), value), (), f"{cur} {sym} {value.render()}", op.kind),
                s.pos,
                node=s.node,
            ),
            ir.SetItem(array, index, ir.Name(new), s.pos, augmented=sym),
            ir.Assign(s.target, _getitem(array, index), s.pos),
        ]

    def setitem(self, s, view):
        """``row[j] = v`` of a view ``row = acc[index]``: ``acc[index, j] = v`` (``acc[index] = v``
        for ``row[...] = v``), then ``row`` read again; as written where the two indexes do not
        combine so."""
        array, index = view
        if s.index.parts == (Ellipsis,):
            combined = index
        elif all(self.basic(p, integers_only=True) for p in index.parts) and all(
            self.basic(p) for p in s.index.parts
        ):
            combined = ir.Index(tuple(index.parts) + tuple(s.index.parts), True)
        else:
            return [s]
        return [
            ir.SetItem(array, combined, s.value, s.pos, augmented=s.augmented),
            ir.Assign(s.target, _getitem(array, index), s.pos),
        ]


def _getitem(array, index):
    return ir.Op(operator.getitem, (ir.Name(array), index), (), f"{array}[{index.render()}]")


def _bound(stmts):
    """The names a block rebinds (not an in-place update, which keeps a view a view)."""
    out = set()
    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign) and not s.inplace or isinstance(s, ir.For):
            out.add(s.target)
    return out


def _forget(views, names):
    """Drop the views that ``names`` rebinding ends: their own name's, their array's, their index's."""
    if not views or not names:
        return
    for v, (array, index) in list(views.items()):
        if v in names or array in names or names.intersection(index.names()):
            del views[v]
