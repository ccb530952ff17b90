"""What a compiled gradient reads from outside the function: names, and what they were read for.

Expects: the normalizer reports every name it resolves outside the function (``record``) and asks
here how the generated code is to spell a captured name (``spell``). Guarantees:

- The generated code reads every captured value live, as the user's code does: the root
  function's globals as written (its own globals), closure variables through the user's own cells
  (``emit.load`` installs them in the generated function's closure), another module's globals
  through that module (``config.BETA``), a builtin shadowed by a local through ``builtins``.
  So rebinding a minibatch variable in an enclosing ``fit()`` or an annealed coefficient in a
  config module changes the gradient as it changes the function.
- What the compiler *decided* from a captured value is recorded as a ``Read`` with the check
  that keeps the decision true: the object itself for what is called (a function, a module, a
  class), the type and value for integers, strings and other small constants (loop bounds,
  axes, shapes, literal options), the type alone for floats, arrays and other data (an operand
  read live: only whether it is a Python number or an array mattered). ``emit.guard`` turns the
  reads into one expression checked before each call; when it fails the gradient is compiled
  again (``sourcegrad.api``).
"""

from __future__ import annotations

import builtins
import sys
import types
from dataclasses import dataclass

from .naming import PREFIX

KEY = "<captures>"  # the Captures' key in the normalizer's extra namespace (never an identifier)


@dataclass(frozen=True, eq=False)
class Read:
    """``where[name].attrs...`` holds what it held at compile time, as ``check`` says."""

    where: object  # the globals dict or the cell the name was read from, an object it is an
    # attribute of, or an ``ArgRoot``: the argument the call passes at that position
    name: str
    attrs: tuple  # the chain after the name: attribute names (``cfg.scale``), and ``Item`` steps
    # (``layers[0]``, ``ACTS["relu"]``)
    check: str  # "is" | "eq" (same type, equal) | "type" (same type) | "absent" (a builtin: name
    # unbound) | "len" (the length) | "code" (a function with the same code, globals and defaults,
    # and no closure) | "distinct" (the objects of ``value``'s reads, all different ones) |
    # "same" (the objects of ``value``'s reads, one object)
    value: (
        object  # the object ("is", "eq"), or its type ("type": no array is kept alive by a guard)
    )

    def describe(self):
        return self.name + "".join(
            f"[{a.key!r}]" if type(a) is Item else f".{a}" for a in self.attrs
        )

    def of_arguments(self):
        """Does checking it need the call's arguments?"""
        if self.check in ("distinct", "same"):
            return any(r.of_arguments() for r in self.value)
        return type(self.where) is ArgRoot


@dataclass(frozen=True)
class Item:
    """A step of a ``Read``'s chain that indexes: ``[key]``."""

    key: object


class ArgRoot:
    """The root of a ``Read`` of the call's arguments: the one at ``index`` (``arg_root``)."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


_ARG_ROOTS = {}


def arg_root(index):
    """The one ``ArgRoot`` of position ``index`` (reads of one argument share it)."""
    root = _ARG_ROOTS.get(index)
    if root is None:
        root = _ARG_ROOTS[index] = ArgRoot(index)
    return root


def code_check(fn):
    """The value a "code" read checks ``fn`` against, or None where it must be the very
    function ("is"): one with a closure (its cells are read live), or defaults that are not plain
    constants."""
    if not isinstance(fn, types.FunctionType) or fn.__closure__:
        return None
    plain = (int, float, bool, str, type(None))
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    if not all(type(d) in plain for d in (*defaults, *kwdefaults.values())):
        return None
    return (fn.__code__, fn.__globals__, fn.__defaults__, fn.__kwdefaults__)


def check_of(value):
    """How a captured value must stay for the compiled code to stay right (see the module doc)."""
    if isinstance(value, (types.MethodType, types.BuiltinMethodType)) and not isinstance(
        getattr(value, "__self__", None), types.ModuleType
    ):
        return "eq"  # a bound method is a new object at each attribute read; equal methods share self and function
    if isinstance(value, types.ModuleType) or callable(value):
        return "is"
    t = type(value)
    if t in (int, bool, str, type(None)) or (
        t is tuple and all(type(v) in (int, bool, str, type(None)) for v in value)
    ):
        return "eq"
    return "type"


class Captures:
    """Shared by a root normalizer and the normalizers of the helpers inlined into it."""

    def __init__(self, root, root_locals, naming, reserved=()):
        self.reads = {}  # (id(where), name, attrs, check) -> Read
        self.cells = {}  # name in the generated code -> the user's cell it reads
        self.objects = {}  # name in the generated code -> the module it reads attributes of
        self.bound = {}  # name in the generated code -> an object of sourcegrad's it binds (bind)
        self._bound_names = {}  # (name asked for, id(object)) -> the name chosen
        self.reserved = dict(reserved)  # sourcegrad's runtime names and their objects
        self.naming = naming
        self.globals = root.__globals__
        # What each name the generated code spells as written means, the root's own reads first:
        # ("cell", id) a closure cell, ("globals", id) the root's globals, ("builtins",), or
        # ("object", id) an object the generated code binds itself (template names, module aliases).
        self._meaning = {n: ("object", id(obj)) for n, obj in dict(reserved).items()}
        cells = dict(zip(root.__code__.co_freevars, root.__closure__ or ()))
        for n in naming.taken - set(root_locals):
            if n in cells:
                self._meaning[n] = ("cell", id(cells[n]))
            elif n in self.globals or not hasattr(builtins, n):
                self._meaning[n] = ("globals", id(self.globals))
            else:
                self._meaning[n] = ("builtins",)

    # ---- what the compile decided from ---------------------------------------------------------
    def record(self, where, name, attrs, value, check=None):
        """The compile depended on ``where[name].attrs`` being ``value`` (as ``check`` says)."""
        check = check or check_of(value)
        key = (id(where), name, attrs, check)
        if key not in self.reads:
            if check == "type":
                value = type(value)
            elif check == "len":
                value = len(value)
            elif check == "code":
                value = code_check(value)
            self.reads[key] = Read(where, name, attrs, check, value)

    def record_distinct(self, reads, same=False):
        """The compile depended on the objects ``reads`` read being distinct objects (``same``:
        one object)."""
        reads = tuple(reads)
        check = "same" if same else "distinct"
        key = (check, tuple((id(r.where), r.name, r.attrs) for r in reads))
        if len(reads) > 1 and key not in self.reads:
            self.reads[key] = Read(reads[0].where, reads[0].name, (), check, reads)

    def record_function(self, fn):
        """The compile read ``fn``'s code and defaults: a reload that patches them in place
        (IPython's autoreload) compiles again."""
        self.record(fn, "__code__", (), fn.__code__, "is")
        self.record(fn, "__defaults__", (), fn.__defaults__, "is")

    # ---- how the generated code spells a captured name ----------------------------------------
    def spell(self, name, where, value=None):
        """The text that reads an inlined helper's captured ``name`` live. ``where``: the helper's
        cell holding it, its globals dict, or None for a builtin. The name as written where it
        means the same in the generated code; otherwise a fresh name bound to the cell, or the
        name read through its module (``config.BETA``, ``builtins.sum``)."""
        if value is not None and self._meaning.get(name) == ("object", id(value)):
            return self.bind(name, value)  # np: the generated code binds that very module
        if isinstance(where, types.CellType):
            meaning = ("cell", id(where))
            if not self._free(name, meaning):
                name = self.naming.unique(f"{name}_")
            self._take(name, meaning)
            self.cells[name] = where
            return name
        root = ("globals", id(self.globals))
        if where is self.globals and self._free(name, root):
            self._take(name, root)
            return name
        if where is None and name not in self.globals and self._free(name, ("builtins",)):
            self._take(name, ("builtins",))
            self.record(self.globals, name, (), None, "absent")
            return name
        if (
            isinstance(value, types.ModuleType)
            and self.globals.get(name) is value
            and self._free(name, root)
        ):
            self._take(name, root)  # import numpy as np in both modules: read the root's np
            self.record(self.globals, name, (), value, "is")
            return name
        return f"{self._module_name(where)}.{name}"

    # ---- names of sourcegrad's own objects --------------------------------------------------------
    def bind(self, name, obj=None):
        """The name the generated code reads ``obj`` by: a runtime helper, a global of an adjoint
        template (``np``, ``unbroadcast``), a builtin the generated code calls (``range``).
        ``obj`` defaults to the runtime's or the builtins' ``name``. It is ``name`` itself where
        nothing of the user's is called so, or where what is (a global, a builtin) is that very
        object; otherwise a fresh name (``_sg_centered``). The user's code is never renamed."""
        if obj is None:
            obj = self.reserved[name] if name in self.reserved else getattr(builtins, name)
        key = (name, id(obj))
        chosen = self._bound_names.get(key)
        if chosen is None:
            chosen = name if self._may_bind(name, obj) else self.naming.unique(f"{PREFIX}{name}")
            self._take(chosen, ("object", id(obj)))
            self.bound[chosen] = obj
            self._bound_names[key] = chosen
        return chosen

    def _may_bind(self, name, obj):
        if self.bound.get(name, obj) is not obj:
            return False
        known = self._meaning.get(name)
        if known == ("object", id(obj)):
            return name in self.bound or name not in self.naming.taken  # not a local of the user's
        if known is None:
            return name not in self.naming.taken
        if known == ("globals", id(self.globals)):
            return self.globals.get(name, _MISSING) is obj  # np: the user's np is numpy
        if known == ("builtins",):
            return getattr(builtins, name, _MISSING) is obj
        return False  # a closure cell: read live, never shadowed

    def _free(self, name, meaning):
        """May the generated code spell ``name`` as written to mean ``meaning``?"""
        known = self._meaning.get(name)
        return known == meaning or (known is None and name not in self.naming.taken)

    def _take(self, name, meaning):
        self._meaning[name] = meaning
        self.naming.reserve(name)

    def _module_name(self, g):
        """A name bound to the module whose dict is ``g`` (``builtins`` for None)."""
        module = builtins if g is None else _module_of(g)
        for alias, obj in self.objects.items():
            if obj is module:
                return alias
        base = getattr(module, "__name__", "") if isinstance(module, types.ModuleType) else ""
        base = base.rpartition(".")[2] or "globals"
        root = ("globals", id(self.globals))
        if self.globals.get(base) is module and self._free(base, root):
            self._take(base, root)  # the root reads the module under this name too
            self.record(self.globals, base, (), module, "is")
            return base
        alias = base if self._free(base, ("object", id(module))) else self.naming.unique(f"{base}_")
        self._take(alias, ("object", id(module)))
        self.objects[alias] = module
        return alias


_MISSING = object()


class _GlobalsView:
    """A globals dict with no module of its own, read as attributes, live (a function made by
    ``types.FunctionType(code, {...})``)."""


def _module_of(g):
    name = g.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is not None and getattr(module, "__dict__", None) is g:
        return module
    view = _GlobalsView()
    view.__dict__ = g  # the instance reads and sees exactly this dict
    return view
