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
from .syntax import code_of, literal_value

_TARGETED = (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)
_CAPTURES = (ast.MatchAs, ast.MatchStar)
_IMPORTS = (ast.Import, ast.ImportFrom)


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
            elif kind is ast.withitem and node.optional_vars is not None:  # with ... as v
                self._bind(node.optional_vars)
            elif kind is ast.ExceptHandler and node.name is not None:  # except E as e: binds e
                self._bind(ast.Name(node.name))
            elif kind in _CAPTURES and node.name is not None:  # case [n, *rest]: binds n, rest
                self._bind(ast.Name(node.name))
            elif kind in _IMPORTS:  # import numpy as np2, from numpy import tanh: a local name
                for alias in node.names:
                    name = alias.asname or alias.name.partition(".")[0]
                    if name != "*":
                        self._bind(ast.Name(name))
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


def is_static_object(value):
    """Can a local bound once to ``value`` be read as ``value`` itself when compiling: a module, or
    a callable that is not an array (``sqrt = np.sqrt``, ``la = np.linalg``, ``h = partial(...)``)?"""
    return isinstance(value, types.ModuleType) or (callable(value) and not hasattr(value, "shape"))


_NOT_STATIC = object()


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
        """Does ``node`` compute from local values (so ``node.attr`` is an array attribute)? A
        local bound once to a module or a function (``la = np.linalg``, an ``import`` in the
        function, an inlined helper's parameter bound to ``np.tanh``) is not: it is that object,
        and so is ``getattr(obj, "name")`` of such a chain."""
        while True:
            # (type(x) is: isinstance with a libcst class, an ABC, costs ten times more when false)
            if type(node) is cst.Attribute:
                node = node.value
            elif type(node) is cst.Call and self._getattr_parts(node) is not None:
                node = node.args[0].value
            else:
                break
        if type(node) is cst.Name:
            return node.value in self.locals and self._static_object(node.value) is _NOT_STATIC
        return True

    def _static_object(self, name):
        """The object the local ``name`` (as written) is known to hold when compiling: a module or
        a function it is bound to once (``static_locals``), or an inlined function's parameter
        bound to one; else ``_NOT_STATIC``."""
        known = self.static_locals.get(self._local(name))
        if known is not None:
            return known[0]
        atom = self.subst.get(name)
        if type(atom) is ir.Const and is_static_object(atom.value):
            return atom.value
        return _NOT_STATIC

    def _bind_static(self, name, value, node=None, anywhere=False):
        """``name`` (its generated spelling), bound here to ``value``, holds it wherever it is read
        when it is bound once outside loops (``anywhere``: in a loop too, an import) to a module
        or a function: calls and attributes of it are resolved now. ``node``: the expression it
        was bound from, whose reads a guard checks, or the read itself, a tuple (an import)."""
        if (
            is_static_object(value)
            and self.bind_counts.get(self._unrenamed(name), 0) == 1
            and (anywhere or not self._loop_depth)
        ):
            self.static_locals[name] = (value, node)

    def _unrenamed(self, name):
        """The name as written of a local the generated code spells ``name``."""
        for written, spelled in self.rename.items():
            if spelled == name:
                return written
        return name

    def _getattr_parts(self, node):
        """(object node, attribute name) of ``getattr(obj, "name")`` with a literal name (the
        builtin ``getattr``, two arguments), else None."""
        args = node.args
        if not (
            len(args) == 2
            and type(node.func) is cst.Name
            and node.func.value == "getattr"
            and node.func.value not in self.locals
            and all(a.keyword is None and not a.star for a in args)
            and type(args[1].value) is cst.SimpleString
        ):
            return None
        attr = literal_value(args[1].value.value)
        if not (isinstance(attr, str) and attr.isidentifier()):
            return None
        if self._static_value(node.func, record=False) is not builtins.getattr:
            return None
        return args[0].value, attr

    def _static_callee(self, func):
        """The object a call's ``func`` names when it is known now (a module-level or closure
        value, or a local bound once to one), else None."""
        if type(func) is cst.Name:
            known = self._static_object(func.value)
            if known is not _NOT_STATIC:
                return known
        if type(func) in (cst.Name, cst.Attribute, cst.Call) and not self._is_local_expr(func):
            return self._static_value(func)
        return None

    def _static_value(self, node, record=True):
        """The value of a module-level or closure name, or of an attribute chain of one. Unless
        ``record`` is False, the compile decides from it: it goes to the captures, whose guard
        recompiles when it changes (``captures.py``)."""
        value, read = self._resolve(node)
        if record and read is not None:
            where, name, attrs, read_value = read
            self.captures.record(where, name, attrs, read_value)
        return value

    def _static_const(self, node):
        """``_static_value`` of ``node`` as the ``Const`` the generated code reads it by; a guard
        can read the parts of a captured object again along its chain (``objects.Path``)."""
        value, read = self._resolve(node)
        if read is not None:
            where, name, attrs, read_value = read
            self.captures.record(where, name, attrs, read_value)
        return self._captured_const(value, self._text(node), read)

    def _resolve(self, node):
        """(value, read): read is (where, name, attrs, the value read) for the chain a guard
        checks, None for a builtin. The whole chain is checked, a library's too: ``np.tanh =
        np.sin`` after a compile is a new function, which the compile must see."""
        if type(node) is cst.Name:
            if node.value in self.locals:  # a local bound once to a module or a function
                known = self.static_locals.get(self._local(node.value))
                if known is not None and type(known[1]) is tuple:
                    return known[1]  # imported: (value, the read a guard checks, or None)
                if known is not None and known[1] is not None:
                    return self._resolve(known[1])  # guarded as what it was bound from
                value = self._static_object(node.value)
                if value is not _NOT_STATIC:
                    return value, None
            return self._lookup_global(node)
        attr_node = None
        if type(node) is cst.Attribute:
            base_node, attr, attr_node = node.value, node.attr.value, node
        elif type(node) is cst.Call and self._getattr_parts(node) is not None:
            (base_node, attr), attr_node = self._getattr_parts(node), node
            self._static_value(node.func)  # the builtin getattr: recompiled if the name is bound
        if attr_node is not None:
            base, read = self._resolve(base_node)
            try:
                value = getattr(base, attr)
            except AttributeError:
                fence.refuse(
                    self.src,
                    attr_node,
                    msg=f"{code_of(attr_node)} does not exist",
                    hint=_did_you_mean(base, attr),
                )
            if read is not None:
                read = (read[0], read[1], read[2] + (attr,), value)
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
                return value, (cell, name, (), value)
            except ValueError:
                pass
        g = fn.__globals__
        if name in g:
            value = g[name]
            return value, (g, name, (), value)
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
