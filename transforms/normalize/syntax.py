"""What the normalizer's passes read off libcst nodes: operator tables, a node's source text,
literal values, the names a subtree reads or binds, the first node of a kind.

Expects: libcst nodes of the user's function. Guarantees: nothing is changed; every function
here is pure (``code_of`` and ``literal_value`` give the text and value Python would).
"""

from __future__ import annotations

import ast
import functools
import operator
import re

import libcst as cst

from .. import ir
from ..ir import Tup

BINOPS = {
    cst.Add: (operator.add, "+"),
    cst.Subtract: (operator.sub, "-"),
    cst.Multiply: (operator.mul, "*"),
    cst.Divide: (operator.truediv, "/"),
    cst.FloorDivide: (operator.floordiv, "//"),
    cst.Modulo: (operator.mod, "%"),
    cst.Power: (operator.pow, "**"),
    cst.MatrixMultiply: (operator.matmul, "@"),
    cst.BitAnd: (operator.and_, "&"),
    cst.BitOr: (operator.or_, "|"),
    cst.BitXor: (operator.xor, "^"),
}


AUGOPS = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply,
}


UNOPS = {
    cst.Minus: (operator.neg, "-"),
    cst.Plus: (operator.pos, "+"),
    cst.Not: (operator.not_, "not "),
    cst.BitInvert: (operator.invert, "~"),
}


CMPOPS = {
    cst.LessThan: (operator.lt, "<"),
    cst.LessThanEqual: (operator.le, "<="),
    cst.GreaterThan: (operator.gt, ">"),
    cst.GreaterThanEqual: (operator.ge, ">="),
    cst.Equal: (operator.eq, "=="),
    cst.NotEqual: (operator.ne, "!="),
    cst.Is: (operator.is_, "is"),
    cst.IsNot: (operator.is_not, "is not"),
}


def code_of(node):
    """The source text of ``node``."""
    # fast paths: libcst's code generation is slow (and isinstance with a libcst class, an
    # ABC, costs ten times more than type(node) is when false)
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute and not node.lpar and not node.rpar:
        base = code_of(node.value)
        if base is not None:
            return f"{base}.{node.attr.value}"
    return _EMPTY.code_for_node(node)


_EMPTY = cst.Module([])


@functools.lru_cache(maxsize=4096)
def literal_value(text):
    """The value of a number or string literal's text, as libcst's ``evaluated_value`` gives it
    (``ast.literal_eval``, which parses and compiles the text): the same literals recur."""
    return ast.literal_eval(text)


def names_read(node):
    """The names ``node`` reads (not attribute names or keyword labels): what a condition or a
    bound kept as text reads. Names a comprehension binds are included (an over-estimate)."""
    v = _NamesRead()
    node.visit(v)
    return v.names


# The visitors are classes of the module, not made per call: a class made in a function is a
# reference cycle, which keeps the tree it visited alive until the garbage collector runs.
class _NamesRead(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.names, self.labels = set(), set()

    def visit_Attribute(self, n):
        self.labels.add(id(n.attr))

    def visit_Arg(self, n):
        if n.keyword is not None:
            self.labels.add(id(n.keyword))

    def visit_Name(self, n):
        if id(n) not in self.labels:
            self.names.add(n.value)


class Renamer(cst.CSTTransformer):
    """Rewrites the names of a tree (``rename``: old -> new name, or the text of a constant), not
    attribute names or keyword labels."""

    def __init__(self, rename):
        self.rename = rename

    def leave_Name(self, original, updated):
        new = self.rename.get(updated.value)
        if not new:
            return updated
        if new.isidentifier():
            return updated.with_changes(value=new)
        return cst.parse_expression(new)  # an inlined parameter bound to a constant

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)


def literal_const(t):
    """A literal whose entries are all constants, as one ``Const`` of its nested Python value."""
    if not isinstance(t, Tup):
        return t
    entries = [literal_const(a) for a in t]
    if not all(isinstance(a, ir.Const) for a in entries):
        return None
    value = [a.value for a in entries] if t.is_list else tuple(a.value for a in entries)
    return _LiteralConst(value, tup(entries, t.is_list).render())


class _LiteralConst(ir.Const):
    """A constant nested literal: its value may hold lists, so it hashes by its text."""

    def __hash__(self):
        return hash(self.text)


def tup(items, is_list):
    """A tuple (or, ``is_list``, list) literal of atoms."""
    t = Tup(items)
    t.is_list = is_list
    return t


def op_text(op):
    """An operator node as Python writes it (``<<=``, ``&``)."""
    return _code_op(op).strip() or type(op).__name__


def _code_op(op):
    tok = getattr(op, "_get_token", None)
    return tok() if tok else ""


def assigned_in(node):
    """Names bound anywhere in a libcst subtree."""
    v = _Assigned()
    node.visit(v)
    return v.names


class _Assigned(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.names = set()

    def visit_AssignTarget(self, n):
        self.names.update(target_names(n.target))

    def visit_AugAssign(self, n):
        self.names.update(target_names(n.target))

    def visit_For(self, n):
        self.names.update(target_names(n.target))


def target_names(target):
    """The names an assignment or loop target binds (``a, (b, c)``)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in target_names(el.value)]
    return []


def indexes_by(body, seq, key):
    """Whether ``body`` reads ``seq[key]`` (``for k in params: ... params[k]``: a dict's keys)."""
    return (
        re.search(rf"\b{re.escape(seq)}\s*\[\s*{re.escape(key)}\s*\]", _EMPTY.code_for_node(body))
        is not None
    )


def find_name(node, names):
    """The first ``Name`` in ``node`` spelled as one of ``names``, or None."""
    return first_node(node, lambda n: type(n) is cst.Name and n.value in names)


def find_node(node, kind):
    """The first node of type ``kind`` in ``node`` (depth first), or None."""
    return first_node(node, lambda n: isinstance(n, kind))


def first_node(node, test):
    """The first node in ``node`` (depth first) for which ``test`` holds, or None."""
    v = _FindFirst(test)
    node.visit(v)
    return v.found


class _FindFirst(cst.CSTVisitor):
    """The first node (depth first) for which ``test`` holds; the walk stops there."""

    def __init__(self, test):
        super().__init__()
        self.test, self.found = test, None

    def on_visit(self, n):
        if self.found is None and self.test(n):
            self.found = n
        return self.found is None


class Unpacked:
    """A ``*seq`` argument whose number of values is known only when the call runs."""

    def __init__(self, atom, node):
        self.atom, self.node = atom, node

    def render(self):
        return f"*{self.atom.render()}"
