"""Name resolution: what a name of the user's function means, decided when it is compiled.

Expects: the normalizer's state ``locals`` (every name the function binds), ``rename`` (an
inlined function's names as the generated code spells them), ``static_locals``, ``fn``, ``src``,
``captures`` and ``naming``. Guarantees: a local name resolves to its generated spelling
(``_local``); any other name, or attribute chain of one, resolves to the object it holds now
(from the closure, the globals or the builtins), and every read the compile decides from is
recorded in the captures, whose guard recompiles when it changes (``captures.py``). A name that
does not exist is refused where it is written, with a suggestion.
"""

from __future__ import annotations

import ast
import builtins
import types

import libcst as cst

from .. import fence, ir
from ..captures import is_library
from .syntax import code_of

_TARGETED = (ast.AugAssign, ast.AnnAssign, ast.For)


_CHILD_FIELDS = {}  # ast node class -> the fields that may hold a name


def _child_fields(kind):
    """``kind``'s fields but a load/store context and an operator, which hold no name."""
    return tuple(f for f in kind._fields if f not in ("ctx", "op"))


class Locals:
    """Every name the function binds (assignment and loop targets) and every name it mentions.

    Walks the stdlib ``ast`` of the function: a libcst visitor costs ten times more."""

    def __init__(self, afn):
        self.names = set()
        self.all_names = set()
        self.counts = {}
        # every node below the body, in any order (ast.walk's generators cost more)
        stack = list(afn.body)
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                self.all_names.add(node.id)
                continue
            if kind is ast.Assign:
                for t in node.targets:
                    self._bind(t)
            elif kind in _TARGETED:
                self._bind(node.target)
            fields = _CHILD_FIELDS.get(kind)
            if fields is None:
                fields = _CHILD_FIELDS[kind] = _child_fields(kind)
            for name in fields:
                v = getattr(node, name, None)
                if type(v) is list:
                    stack.extend(x for x in v if isinstance(x, ast.AST))
                elif isinstance(v, ast.AST):
                    stack.append(v)

    def _bind(self, target):
        if isinstance(target, ast.Name):
            self.names.add(target.id)
            self.counts[target.id] = self.counts.get(target.id, 0) + 1
        elif isinstance(target, (ast.Tuple, ast.List)):
            for el in target.elts:
                self._bind(el)
        elif isinstance(target, ast.Starred):
            self._bind(target.value)


def _did_you_mean(obj, name):
    """A hint for ``obj.name`` that does not exist."""
    import difflib

    close = difflib.get_close_matches(name, [n for n in dir(obj) if not n.startswith("_")], n=1)
    return (
        f"did you mean {close[0]}?"
        if close
        else f"{getattr(obj, '__name__', obj)!s} has no attribute {name!r}"
    )


_INF = float("inf")


def _trusted(value):
    """Is ``value`` a library module, whose attributes a guard need not check?"""
    return isinstance(value, types.ModuleType) and is_library(value)


def method_class(fn):
    """The class ``fn`` is a plain method of, found by its qualified name (``Model.loss``), or None
    (a function, a class defined inside a function, a static or class method)."""
    parts = getattr(fn, "__qualname__", "").split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    obj = fn.__globals__.get(parts[0])
    for p in parts[1:-1]:
        obj = getattr(obj, "__dict__", {}).get(p)
    if isinstance(obj, type) and obj.__dict__.get(parts[-1]) is fn:
        return obj
    return None


class Resolve:
    """The name-resolution methods of the ``Normalizer``."""

    def _local(self, name):
        """A local name as the generated code spells it (an inlined function's are renamed)."""
        return self.rename.get(name, name)

    def _is_local_expr(self, node):
        """Does ``node`` compute from local values (so ``node.attr`` is an array attribute)?"""
        while (
            type(node) is cst.Attribute
        ):  # (type(x) is: isinstance with a libcst class, an ABC, costs ten times more when false)
            node = node.value
        if type(node) is cst.Name:
            return node.value in self.locals
        return True

    def _static_callee(self, func):
        """The object a call's ``func`` names when it is known now (a module-level or closure
        value, or a local bound once to one), else None."""
        if type(func) is cst.Name and self._local(func.value) in self.static_locals:
            return self.static_locals[self._local(func.value)]
        if type(func) in (cst.Name, cst.Attribute) and not self._is_local_expr(func):
            return self._static_value(func)
        return None

    def _static_value(self, node, record=True):
        """The value of a module-level or closure name, or of an attribute chain of one. Unless
        ``record`` is False, the compile decides from it: it goes to the captures, whose guard
        recompiles when it changes (``captures.py``)."""
        value, read = self._resolve(node)
        if record and read is not None:
            where, name, attrs, read_value, _ = read
            self.captures.record(where, name, attrs, read_value)
        return value

    def _static_const(self, node):
        """``_static_value`` of ``node`` as the ``Const`` the generated code reads it by; a guard
        can read the parts of a captured object again along its chain (``objects.Path``)."""
        value, read = self._resolve(node)
        if read is not None:
            where, name, attrs, read_value, _ = read
            self.captures.record(where, name, attrs, read_value)
        return self._captured_const(value, self._text(node), read)

    def _resolve(self, node):
        """(value, read): read is (where, name, attrs, the value read, cut) for the part of the
        chain a guard checks, None for a builtin. The chain is cut after a library module
        (``np.tanh`` is checked as ``np``: numpy's attributes are trusted to stay)."""
        if type(node) is cst.Name:
            return self._lookup_global(node)
        if type(node) is cst.Attribute:
            base, read = self._resolve(node.value)
            try:
                value = getattr(base, node.attr.value)
            except AttributeError:
                fence.refuse(
                    self.src,
                    node,
                    msg=f"{code_of(node)} does not exist",
                    hint=_did_you_mean(base, node.attr.value),
                )
            if read is not None and not read[4]:
                read = (read[0], read[1], read[2] + (node.attr.value,), value, _trusted(value))
            return value, read
        fence.refuse(self.src, node)

    def _lookup_global(self, node):
        """A name the function does not bind: (value, read) from its closure, globals or builtins."""
        name = node.value
        fn = self.fn
        code = fn.__code__
        if name in code.co_freevars and fn.__closure__:
            cell = fn.__closure__[code.co_freevars.index(name)]
            try:
                value = cell.cell_contents
                return value, (cell, name, (), value, _trusted(value))
            except ValueError:
                pass
        g = fn.__globals__
        if name in g:
            value = g[name]
            return value, (g, name, (), value, _trusted(value))
        if hasattr(builtins, name):
            self.captures.record(g, name, (), None, "absent")
            return getattr(builtins, name), None
        fence.refuse(
            self.src,
            node,
            msg=f"name {name!r} is not defined",
            hint="define it before differentiating",
        )

    def _alias(self, name, value):
        """A name for ``value`` in the generated code's namespace."""
        for k, v in self.extra_ns.items():
            if v is value:
                return k
        alias = self.naming.unique(name)
        self.extra_ns[alias] = value
        return alias

    def _constant(self, value, hint):
        """An atom for a Python value known at compile time (a default argument): its literal
        where its repr is one, otherwise a name bound to it (``inf``, ``nan``, an array)."""
        if (
            value is None
            or type(value) in (bool, int, str)
            or (type(value) is float and _INF > abs(value))
        ):
            return ir.Const(value, repr(value))
        alias = self.naming.unique(f"_{hint}_default")
        self.extra_ns[alias] = value
        return ir.Const(value, alias)
