"""Objects as people build models: what a value holds, known when the function is compiled for a
call, and writes into objects' attributes.

Expects: the walk of ``anf``, name resolution (``resolve``), calls (``calls``), inlining
(``inline``) and the normalizer's state. Guarantees:

- **What a value holds** (``Known``): the compile is given the call's arguments (``examples``),
  so it knows what a parameter holds, and through it what an attribute, a list's entry or a
  dict's entry read from it holds (``self.net.layers[0].act_fn``), as it knows a module-level
  value; and the class of an object the function makes (``ReLU()``). It follows the program: a
  name rebound forgets, a branch keeps what both sides agree on, a loop forgets what its body
  rebinds. What the compile *decides* from such a value is recorded with the check that keeps
  the decision true, a ``captures.Read`` of the argument (or of the captured value) along the
  same chain: the class of an object whose method is inlined, the very function (or its code)
  that is called, a dict's key, a list's length. The compiled code's ``arg_guard`` checks them
  before each call, and a call whose arguments fail them runs code compiled for them
  (``sourcegrad/compiled.py``): swapping a layer's activation compiles again, never runs stale
  code.
- **Calls through values**: ``obj.method(...)`` of a known object is its class's method,
  inlined (static and class methods too, and ``super().method(...)``); ``obj(...)`` its
  ``__call__``; a function held in a parameter, an attribute, a dict's entry or returned by a
  helper is inlined (the user's) or called with its rule (a library's); a library object's
  method (``rs.randn(*shape)``) runs as a constant; a ``@property`` is inlined as a method is.
  ``for layer in self.layers:`` over objects is unrolled, one body per entry.
- **Writes into attributes** run on the live object, as Python runs them, and the function's
  later reads of that attribute (and of a list held there that it appends to) read the value
  written, differentiated as a local variable is: each written *location* (an object and an
  attribute, or a dict and a key) has a *shadow*, a local the reads read. Its value when the
  call starts is read once, at the top (``read_or_missing``), so it is defined on every path, in
  loops and branches too; the locations are found by a first lowering and the function lowered
  again knowing them all (``transforms._normalized``). An object is told apart by the identity of
  what the example held; the guard checks that objects told apart are still distinct, and that
  one reached along several chains still is one.
- ``if`` tests on strings and ``None`` known now are decided now (``get_activation("relu")``
  returns one function), guarded as above: ``_fold``, which ``static._decided_test`` asks after
  its own constants and captured values. ``f(*seq)`` of a list or tuple an argument holds passes
  its entries one by one (``_held_entries``, its length guarded: ``calls._call_args``).
"""

from __future__ import annotations

import builtins
import inspect
import operator
import types

import libcst as cst
import numpy as np

from sourcegrad.runtime import structures as _structures

from .. import fence, ir
from .. import rules as R
from ..captures import Item, arg_root
from .syntax import Unpacked, assigned_in, code_of, find_node, literal_value, target_names

MISSING = object()  # the value of a ``Known`` of which only the class is known

# ``read_or_missing(obj, name)`` (the value a written attribute holds when the call starts) and
# ``item_or_missing(d, key)`` are read as ``obj.name`` and ``d[key]`` are; a dict literal used as
# a value gives each of its values its entry's adjoint.
R.internal_rule(
    _structures.read_or_missing,
    ["y", "obj", "name"],
    "d[obj] += field_adjoint(d[y], obj, name)",
    {"field_adjoint": _structures.field_adjoint},
    {"name": "an attribute name"},
    "attribute read",
)
R.internal_rule(
    _structures.item_or_missing,
    ["y", "obj", "key"],
    "d[obj] += item_adjoint(d[y], obj, key)",
    {"item_adjoint": _structures.item_adjoint},
    {"key": "a dict's key"},
    "dict entry read",
)
R.internal_rule(
    _structures.make_dict,
    ["y", "keys", "xs"],  # (xs: a sequence, never made an array: sequences.py)
    "d[xs] += dict_values_adjoint(d[y], keys)",
    {"dict_values_adjoint": _structures.dict_values_adjoint},
    {"keys": "a dict literal's keys"},
    "dict literal",
)

_FIELD_READS = (_structures.field, _structures.read_or_missing)
_PLAIN = (int, float, complex, bool, str, bytes, type(None))
_STATIC = (int, bool, str, type(None))  # values that carry no gradient (float, complex do)


class Path:
    """How a guard reads a value again: from the argument at a position (``captures.ArgRoot``)
    or a captured name (``where[name]``), along ``attrs`` (attribute names and ``Item`` steps)."""

    __slots__ = ("where", "name", "attrs")

    def __init__(self, where, name, attrs=()):
        self.where, self.name, self.attrs = where, name, attrs

    def step(self, s):
        return Path(self.where, self.name, self.attrs + (s,))

    def __eq__(self, other):
        return (
            type(other) is Path
            and self.where is other.where
            and self.name == other.name
            and self.attrs == other.attrs
        )

    def __hash__(self):
        return hash((id(self.where), self.name, self.attrs))

    def read(self):
        """A ``captures.Read`` of the object itself (for the distinctness guards)."""
        from ..captures import Read

        return Read(self.where, self.name, self.attrs, "is", None)

    def describe(self):
        return self.read().describe()


class Known:
    """What a value holds when the function is compiled for a call: ``value`` (or ``MISSING``
    where only its class ``cls`` is known: an object the function makes), ``path`` (how a guard
    reads it again; None where it is certain: a literal, an object made in the call, a captured
    value whose own capture guards it), ``deps`` (``(Known, check)`` pairs it also depends on:
    the key a dict was read at) and ``loc`` (the location it was read from: the identity of an
    object and the step, an attribute name or an ``Item``; None)."""

    __slots__ = ("value", "cls", "path", "deps", "loc")

    def __init__(self, value, cls=None, path=None, deps=(), loc=None):
        self.value = value
        self.cls = type(value) if cls is None else cls
        self.path, self.deps, self.loc = path, deps, loc

    def same(self, other):
        """Does ``other`` say the same (a branch's two sides agree)?"""
        return other is self or (
            other is not None
            and self.value is not MISSING
            and other.value is self.value
            and other.path == self.path
            and other.loc == self.loc
        )

    def ident(self):
        """The identity of the object (what a written location is keyed by)."""
        return ("new", id(self)) if self.value is MISSING else ("id", id(self.value))


def is_data(value):
    """Is ``value`` an array or a number (its methods are numpy's, its attributes an array's)?"""
    return isinstance(value, _PLAIN + (np.generic,)) or (
        hasattr(value, "shape") and hasattr(value, "dtype")
    )


def object_like(value):
    """Are ``value``'s methods its class's, called as an object's (not an array's, a number's,
    or a dict's: ``d.get(k, default)`` is the normalizer's own, ``Dicts``)?"""
    return value is MISSING or not (is_data(value) or isinstance(value, dict))


def _is_users(fn):
    top = ir.module_of(fn).partition(".")[0]
    import sys

    return top not in sys.stdlib_module_names and top not in ("numpy", "scipy", "sourcegrad")


def static_attribute(obj, name, cls=None):
    """``obj.name`` as Python finds it, without running user code: ``("value", v)`` (an instance
    attribute, a slot, a namedtuple's field, a class attribute), ``("method", raw)`` (a function,
    static or class method, or a library's method descriptor, found on the class),
    ``("property", p)``, or None (not found, or found only by ``__getattr__``). ``cls`` alone
    (``obj`` is ``MISSING``): what the class holds."""
    if obj is MISSING:
        try:
            raw = inspect.getattr_static(cls, name)
        except AttributeError:
            return None
        if isinstance(raw, property):
            return ("property", raw)
        if isinstance(raw, (types.FunctionType, staticmethod, classmethod)):
            return ("method", raw)
        if hasattr(type(raw), "__get__"):
            return ("method", raw) if callable(raw) else None
        return ("value", raw)
    try:
        raw = inspect.getattr_static(obj, name)
    except AttributeError:
        return None
    instance = getattr(obj, "__dict__", None)
    if isinstance(instance, dict) and name in instance and instance[name] is raw:
        if not _data_descriptor(inspect.getattr_static(type(obj), name, None)):
            return ("value", raw)
    if isinstance(raw, property):
        return ("property", raw)
    if isinstance(raw, (types.FunctionType, staticmethod, classmethod)):
        return ("method", raw)
    if _data_descriptor(raw):  # a slot, a namedtuple's field, a C type's getset
        try:
            return ("value", raw.__get__(obj, type(obj)))
        except Exception:
            return None
    if hasattr(type(raw), "__get__") and callable(raw):
        return ("method", raw)  # a library's method descriptor (RandomState.randn)
    return ("value", raw)


def _data_descriptor(raw):
    kind = type(raw)
    return hasattr(kind, "__get__") and (hasattr(kind, "__set__") or hasattr(kind, "__delete__"))


class Written:
    """What one lowering learned of the locations the function writes, for the next: each
    location's object (a ``Path`` to read it again by) and step, and the locations each loop
    writes (by its node)."""

    def __init__(self):
        self.locs = {}  # (identity, step) -> the object's Path
        self.loops = {}  # id(loop node) -> {location}


class ObjectState:
    """Shared by a root normalizer and the normalizers of the helpers inlined into it."""

    def __init__(self, examples, written):
        self.examples = examples
        self.written = written or Written()  # the locations known from the lowering before
        self.found = Written()  # the locations this lowering writes
        self.known = {}  # local name (as generated) -> Known
        self.shadows = {}  # location -> the local holding what it holds
        self.shadowed = {}  # the local holding what a location holds -> the location
        self.loops = []  # the ids of the loops being lowered (innermost last)
        self.paths = {}  # object identity -> the paths it was reached by
        self.readers = {}  # step -> the identities read or written there
        self.consts = {}  # id(ir.Const) -> (the Const, its Path): captured objects
        self.made = {}  # identity of an object made in the call -> the loops around where
        self.live = {}  # location -> the loops around each read before its first write
        self.blind = False  # decided without the arguments what they would have decided

    def again(self):
        """A ``Written`` for another lowering when this one wrote a location the one before did
        not know (None: it knew them all)."""
        if set(self.found.locs) <= set(self.written.locs):
            return None
        out = Written()
        out.locs = {**self.written.locs, **self.found.locs}
        out.loops = {k: set(v) for k, v in self.written.loops.items()}
        for k, v in self.found.loops.items():
            out.loops.setdefault(k, set()).update(v)
        return out


class Objects:
    """The object methods of the ``Normalizer``."""

    # ---- what a value holds ------------------------------------------------------------------------
    def _known(self, atom):
        """The ``Known`` of an atom, or None."""
        if type(atom) is ir.Name:
            return self.objects.known.get(atom.id)
        if isinstance(atom, ir.Const):
            entry = self.objects.consts.get(id(atom))
            if entry is not None and entry[0] is atom:
                return Known(atom.value, path=entry[1])
            return Known(atom.value)
        return None

    def _captured_const(self, value, text, read):
        """The ``Const`` of a captured value (``read``: the resolver's), whose parts a guard can
        read again along its capture's chain."""
        const = ir.Const(value, text)
        if read is not None and not is_data(value):
            self.objects.consts[id(const)] = (const, Path(read[0], read[1], read[2]))
        return const

    def _require(self, k, check):
        """Record that the compile decided from ``k``'s value (as ``check`` says)."""
        for dep, dep_check in k.deps:
            self._require(dep, dep_check)
        if k.path is None or k.value is MISSING:
            return
        if check == "code" and _code_check(k.value) is None:
            check = "is"
        p = k.path
        self.captures.record(p.where, p.name, p.attrs, k.value, check)

    def _learn(self, s):
        """What the statement ``s`` (just emitted) makes known, or forgets."""
        known = self.objects.known
        kind = type(s)
        if kind is ir.Assign:
            k = self._known_of_op(s.op)
            if k is None:
                known.pop(s.target, None)
            else:
                known[s.target] = k
        elif kind is ir.SetItem or kind is ir.Append:
            k = known.get(s.target)
            if k is not None and k.value is not MISSING:  # its entries changed: its class stays
                known[s.target] = Known(MISSING, k.cls)

    def _known_of_op(self, op):
        if op.kind == "copy":
            return self._known(op.args[0])
        key = op.key
        if key in _FIELD_READS:
            base, name = op.args[0], op.args[1].value
            return self._attribute_known(self._known(base), name)
        if key is operator.getitem and isinstance(op.args[1], ir.Index):
            parts = op.args[1].parts
            if len(parts) == 1 and isinstance(parts[0], (ir.Name, ir.Const)):
                return self._item_known(self._known(op.args[0]), self._known(parts[0]))
            return None
        if key is _structures.item_or_missing:
            return self._item_known(self._known(op.args[0]), self._known(op.args[1]))
        if isinstance(key, type) and op.kind in ("nondiff", "call") and not is_data_type(key):
            return Known(MISSING, key)  # an object made in the call (ReLU()): its class
        return None

    def _attribute_known(self, k, name):
        """What ``obj.name`` holds, ``k`` what ``obj`` does (None: unknown)."""
        if k is None or (k.value is not MISSING and is_data(k.value)):
            return None
        found = static_attribute(k.value, name, k.cls)
        if found is None or found[0] != "value":
            return None
        value = found[1]
        path = k.path.step(name) if k.path is not None and k.value is not MISSING else None
        if path is None and k.value is MISSING:
            return None  # a class attribute of an object made in the call: not followed
        return Known(value, path=path, deps=k.deps, loc=(k.ident(), name))

    def _item_known(self, k, key):
        """What ``obj[key]`` holds, ``k`` what ``obj`` does and ``key`` the index's (None)."""
        if k is None or key is None or k.value is MISSING or key.value is MISSING:
            return None
        container, index = k.value, key.value
        if not isinstance(container, (list, tuple, dict)) or type(index) not in (int, str, bool):
            return None
        try:
            value = container[index]
        except (KeyError, IndexError, TypeError):
            return None
        deps = k.deps + (((key, "eq"),) if key.path is not None else ()) + key.deps
        path = k.path.step(Item(index)) if k.path is not None else None
        loc = (k.ident(), Item(index)) if isinstance(container, dict) else None
        return Known(value, path=path, deps=deps, loc=loc)

    def _read_kind(self, k, fn):
        """How a read of what ``k`` says is differentiated: not at all where it holds an int, a
        bool, a string or None (a hyperparameter, a seed, a layer's size: ``rs.randn(self.n_in,
        ...)`` runs as a constant even where the object is differentiated), which the guard
        keeps so."""
        if k is not None and k.path is not None and type(k.value) in _STATIC:
            self._require(k, "type")
            return "nondiff"
        return self._kind(fn)

    def _root_knowledge(self):
        """The root function's parameters hold the call's arguments (as far as they were given)."""
        examples = self.objects.examples
        if not examples:
            return
        for i, (p, value) in enumerate(zip(self.params, examples)):
            self.objects.known[p] = Known(value, path=Path(arg_root(i), p))

    # ---- flow: branches and loops ------------------------------------------------------------------
    def _branches(self, lower_body, lower_orelse):
        """Lower an ``if``'s two sides, each from what was known before it; after it, what both
        sides agree on is known."""
        before = dict(self.objects.known)
        body = lower_body()
        after_body = self.objects.known
        self.objects.known = dict(before)
        orelse = lower_orelse()
        after_else = self.objects.known
        self.objects.known = {n: k for n, k in after_body.items() if k.same(after_else.get(n))}
        return body, orelse

    def _forget_in_loop(self, node, targets=None):
        """At a loop's head (and after it): forget what its body (or ``targets``) rebinds."""
        names = set(assigned_in(node.body)) if hasattr(node, "body") else set()
        if targets is not None:
            names.update(target_names(targets))
        known = self.objects.known
        for n in names:
            if n in self.locals:
                known.pop(self._local(n), None)
        for loc in self.objects.written.loops.get(id(node), ()):
            shadow = self.objects.shadows.get(loc)
            if shadow is not None:
                known.pop(shadow, None)

    def _in_user_loop(self, node):
        """A context for lowering the body of the loop ``node`` (its writes are recorded)."""
        return _UserLoop(self, node)

    # ---- calls through values --------------------------------------------------------------------
    def _call_held(self, node, atom, args, kwargs, what):
        """``f(...)`` where ``f`` is the atom ``atom`` (a local, an entry, an attribute's value)."""
        k = self._known(atom)
        if k is None or (k.value is not MISSING and (is_data(k.value) or not callable(k.value))):
            held = (
                f"it holds a {type(k.value).__name__}"
                if k is not None
                else f"sourcegrad cannot tell what {what} holds when it compiles the function"
            )
            fence.refuse(
                self.src,
                node.func,
                msg=f"{code_of(node.func)}(...): only functions known when the function is compiled "
                f"can be called (named at module level, passed in, held by an object passed in, "
                f"or returned by a helper): {held}",
                hint="call a module-level function, a method of an object passed in, or a function "
                "passed as an argument (the gradient is compiled for what each call passes)",
            )
        return self._call_held_value(node, atom, k, args, kwargs)

    def _call_held_value(self, node, atom, k, args, kwargs):
        """Call the value ``k`` (held by ``atom``) with ``args``."""
        value = k.value
        text = f"{atom.render()}({self._render_args(args, kwargs)})"
        if value is MISSING:
            return self._call_object(node, atom, k, args, kwargs)
        if isinstance(value, types.FunctionType):
            self._require(k, "code")
            if _is_users(value):
                return self._inline(node, value, self._expanded(node, args, True), kwargs)
            return self._call_op(node, value, args, kwargs, text, value.__name__)
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            self._require(k, "eq")
            fn, obj = value.__func__, value.__self__
            if _is_users(fn) and not isinstance(obj, type):
                this = self._field_read(node.func, self._named_atom(atom, node), "__self__")
                this = self._atom_of(this, node)
                return self._inline(
                    node, fn, (this,) + self._expanded(node, args, True), kwargs, type(obj)
                )
            if _is_users(fn):  # a class method
                return self._inline(
                    node, fn, (self._class_const(obj),) + self._expanded(node, args, True), kwargs
                )
            return self._call_op(node, value, args, kwargs, text, fn.__name__)
        if isinstance(value, type) or not _user_object(value):
            self._require(k, "is")
            return self._call_op(node, value, args, kwargs, text, getattr(value, "__name__", text))
        return self._call_object(node, atom, k, args, kwargs)

    def _call_object(self, node, atom, k, args, kwargs):
        """``obj(...)`` of an object of a class of the user's: its ``__call__``, inlined."""
        found = static_attribute(MISSING, "__call__", k.cls)
        fn = found[1] if found is not None and found[0] == "method" else None
        if not isinstance(fn, types.FunctionType) or not _is_users(fn):
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(node.func)}(...): a {k.cls.__name__} object is not callable by sourcegrad "
                "(its class has no __call__ method of Python source)",
                hint="give the class a def __call__(self, ...), or call one of its methods",
            )
        self._require(k, "type")
        this = self._named_atom(atom, node)
        return self._inline(node, fn, (this,) + self._expanded(node, args, True), kwargs, k.cls)

    def _call_attribute(self, node, func, x, k, args, kwargs):
        """``x.name(...)`` of an object ``x`` whose class is known (``k``): its class's method
        (inlined when it is the user's, run as a constant when a library's), or a callable its
        instance holds there."""
        name = func.attr.value
        found = static_attribute(k.value, name, k.cls)
        if found is None:
            fence.refuse(
                self.src,
                func,
                msg=f"{code_of(func)}: a {k.cls.__name__} object has no attribute {name!r} that "
                "sourcegrad can read when it compiles the function (none, or one made by __getattr__)",
                hint="call a method its class defines, or a callable stored on the object",
            )
        kind, raw = found
        if kind == "value":  # self.act_fn(z): a callable the object holds
            held = self._atom_of(self._field_read(func, x, name), func)
            return self._call_held(node, held, args, kwargs, code_of(func))
        if kind == "property":
            held = self._atom_of(self._property_read(func, x, k, raw), func)
            return self._call_held(node, held, args, kwargs, code_of(func))
        self._require(k, "type")
        return self._call_method(node, func, x, k.cls, raw, name, args, kwargs)

    def _call_method(self, node, func, x, cls, raw, name, args, kwargs):
        """Call the class attribute ``raw`` (found on ``cls`` for ``x.name``) with ``x`` bound."""
        if isinstance(raw, staticmethod):
            fn, first = raw.__func__, ()
        elif isinstance(raw, classmethod):
            fn, first = raw.__func__, (self._class_const(cls),)
        else:
            fn, first = raw, (self._named_atom(x, node),)
        if isinstance(fn, types.FunctionType) and _is_users(fn):
            this_class = cls if first and not isinstance(raw, classmethod) else None
            return self._inline(
                node, fn, first + self._expanded(node, args, True), kwargs, this_class
            )
        # a library's method (RandomState.randn, dict.get): run as written, with its rule if any
        text = f"{x.render()}.{name}({self._render_args(args, kwargs)})"
        bound = () if isinstance(raw, staticmethod) else (x,)
        return self._call_op(node, raw, bound + args, kwargs, text, f"{cls.__name__}.{name}")

    def _super_call(self, node, func, args, kwargs):
        """``super().name(...)`` (or ``super(C, self)``) in a method: the method the class after
        the one defining it (in ``self``'s class's order) defines, inlined."""
        sup = func.value
        cell = dict(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ())).get("__class__")
        if sup.args:
            if len(sup.args) != 2:
                fence.refuse(self.src, sup, msg="super() takes no arguments or two here")
            owner = self._atom(sup.args[0].value)
            this = self._atom(sup.args[1].value)
            owner = owner.value if isinstance(owner, ir.Const) else None
        else:
            owner = cell.cell_contents if cell is not None else None
            this = self._atom(cst.Name(self.params[0])) if self.params else None
        k = self._known(this) if this is not None else None
        cls = k.cls if k is not None else self.self_class
        if not isinstance(owner, type) or cls is None or owner not in cls.__mro__:
            fence.refuse(
                self.src,
                func,
                msg=f"{code_of(func)}: sourcegrad cannot tell which class's method super() finds here",
                hint="call super() in a method of a class defined at module level, on self",
            )
        mro = cls.__mro__
        name = func.attr.value
        for c in mro[mro.index(owner) + 1 :]:
            if name in c.__dict__:
                raw = c.__dict__[name]
                break
        else:
            fence.refuse(
                self.src,
                func,
                msg=f"{code_of(func)}: no class after {owner.__name__} defines {name!r}",
            )
        if k is not None:
            self._require(k, "type")
        return self._call_method(node, func, this, cls, raw, name, args, kwargs)

    def _property_read(self, node, x, k, prop):
        """``x.name`` where the class defines ``name`` as a ``@property``: its getter, inlined."""
        fget = prop.fget
        if not isinstance(fget, types.FunctionType) or not _is_users(fget):
            return None
        self._require(k, "type")
        return self._inline(node, fget, (self._named_atom(x, node),), (), k.cls)

    def _class_const(self, cls):
        return ir.Const(cls, self._alias(cls.__name__, cls))

    def _named_atom(self, atom, node):
        """``atom`` as a local name (a constant object is copied to one: ``self.w`` reads a field)."""
        if isinstance(atom, ir.Name):
            return atom
        tmp = ir.Name(self.naming.temp())
        self._emit(ir.Assign(tmp.id, self._copy_op(atom), self._pos(node)))
        return tmp

    def _atom_of(self, op, node):
        """An atom holding ``op``'s value (an atom already, or a temporary assigned it)."""
        if isinstance(op, (ir.Name, ir.Const, ir.Tup)):
            return op
        tmp = self.naming.temp()
        self._emit(ir.Assign(tmp, op, self._pos(node), node=node))
        return ir.Name(tmp)

    def _object_call(self, func):
        """Is ``func`` (a call's) an attribute of an object known now (``self.act(...)``,
        ``rs.randn(...)`` of an argument): its class's method, or what it holds, is called?"""
        if type(func) is not cst.Attribute or not self._is_local_expr(func.value):
            return False
        k = self._peek(func.value)
        return k is not None and object_like(k.value)

    def _held_entries(self, atom, node):
        """The atoms of the entries of the list or tuple ``atom`` holds, known now (an argument's,
        its length checked by the guard), for ``f(*seq)``; None where it is not known."""
        k = self._known(atom)
        if k is None or not isinstance(k.value, (list, tuple)):
            return None
        self._require(k, "len")
        held = self._named_atom(atom, node)
        out = []
        for i in range(len(k.value)):
            index = ir.Index((ir.Const(i, str(i)),), False)
            out.append(self._atom_of(self._getitem_op(held, index), node))
        return out

    def _expanded(self, node, args, inline):
        """The positional atoms of a call (``_call_args``: a ``*seq`` of a length known now is
        expanded there); a call that is inlined needs each argument, so a ``*seq`` of a length
        not known is refused there."""
        if inline and any(isinstance(a, Unpacked) for a in args):
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(node.func)}(*...): sourcegrad compiles this call inline and must "
                "know how many arguments *... passes",
                hint="pass the arguments one by one, or a tuple written in the call",
            )
        return tuple(args)

    # ---- attribute writes --------------------------------------------------------------------------
    def _location(self, node, x, step, what):
        """The location ``x.step`` (``step`` an attribute name or an ``Item``), ``x`` an atom of
        an object the compile can tell apart; its object's identity is recorded, with the path it
        was reached by."""
        k = self._known(x)
        if k is None or (k.value is not MISSING and is_data(k.value)):
            why = (
                f"it holds a {type(k.value).__name__}"
                if k is not None
                else "sourcegrad cannot tell which object this is when it compiles the function"
            )
            fence.refuse(
                self.src,
                node,
                msg=f"{what}: only attributes of objects told apart when the function is compiled "
                f"can be assigned to (their writes are followed per object): {why}",
                hint="write attributes of self, of an object passed in or reached from one, or of "
                "one made in the function; keep other values in a variable",
            )
        ident = k.ident()
        if k.path is not None:
            paths = self.objects.paths.setdefault(ident, [])
            if k.path not in paths:
                paths.append(k.path)
        return (ident, step), k

    def _shadow_of(self, loc, k, node, pos, first_write):
        """The local holding what location ``loc`` holds (``k``: its object), made at the first
        write where the lowering before did not know it."""
        state = self.objects
        shadow = state.shadows.get(loc)
        if shadow is not None:
            return shadow
        if not first_write:
            return None
        ident, step = loc
        made = state.made.get(ident)
        loops = set(state.loops)
        if made is not None:
            for read_loops in state.live.get(loc, ()):
                if (read_loops & loops) - made:
                    fence.refuse(
                        self.src,
                        node,
                        msg=f"{_step_text(step)} of an object made in the function is read before "
                        "this write in a loop that also writes it",
                        hint="keep the value in a local variable in the loop, and write it once after",
                    )
        name = self.naming.unique(_shadow_name(step))
        self.naming.shadows.add(name)
        state.shadows[loc] = name
        state.shadowed[name] = loc
        return name

    def _attribute_write(self, target, value, pos, step=None, obj=None):
        """``obj.attr = value`` (or, with ``step`` an ``Item``, ``d[key] = value`` into a dict an
        object holds): on the live object, and into the location's shadow."""
        what = code_of(target) if target is not None else "setattr(...)"
        x = self._atom(target.value) if obj is None else obj
        step = target.attr.value if step is None else step
        loc, k = self._location(target, x, step, what)
        found = static_attribute(k.value, step, k.cls) if isinstance(step, str) else None
        if found is not None and found[0] == "property":
            fence.refuse(
                self.src,
                target,
                msg=f"{what}: {k.cls.__name__}.{step} is a property: its setter would run as a "
                "constant, and what it stores would not be seen by the gradient",
                hint="write the attribute the property reads (self._value = ...)",
            )
        self._record_write(loc, k)
        shadow = self._shadow_of(loc, k, target, pos, True)
        value = self._named(value, pos)
        if isinstance(value, ir.Name) and value.id == shadow:
            pass
        else:
            self._emit(ir.Assign(shadow, self._copy_op(value), pos))
        xs = self._named_atom(x, target) if isinstance(x, ir.Const) else x
        write = (
            f"{xs.render()}.{step} = {shadow}"
            if isinstance(step, str)
            else f"{xs.render()}[{step.key!r}] = {shadow}"
        )
        self._emit(ir.Effect(ir.ObjectWrite(write, ir.atom_names(xs) + [shadow]), pos))

    def _record_write(self, loc, k):
        state = self.objects
        if k.path is not None and loc not in state.found.locs:
            state.found.locs[loc] = k.path
        elif k.path is None and loc not in state.found.locs:
            state.found.locs[loc] = None
        for loop in state.loops:
            state.found.loops.setdefault(loop, set()).add(loc)
        state.readers.setdefault(loc[1], set()).add(loc[0])

    def _read_location(self, node, x, step):
        """The shadow a read of ``x.step`` reads, or None (a read of the live object). A read of
        a step the function writes, of an object it cannot tell apart, is refused: it may be
        the object written, whose write the gradient would not see."""
        k = self._known(x)
        if k is None and any(loc[1] == step for loc in self.objects.written.locs):
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(node)}: the function writes {_step_text(step)} of an object, and "
                "sourcegrad cannot tell whether this is that object when it compiles the function "
                "(a write it does not see would be missed by the gradient)",
                hint="read it from self, from an object passed in or reached from one, or keep "
                "the value in a local variable",
            )
        if k is None or (k.value is not MISSING and is_data(k.value)):
            return None
        state = self.objects
        loc = (k.ident(), step)
        if k.path is not None:
            paths = state.paths.setdefault(loc[0], [])
            if k.path not in paths:
                paths.append(k.path)
        shadow = state.shadows.get(loc)
        if shadow is None:
            if k.value is MISSING:
                state.live.setdefault(loc, []).append(set(state.loops))
            if any(l[1] == step for l in state.found.locs) or any(
                l[1] == step for l in state.written.locs
            ):
                state.readers.setdefault(step, set()).add(loc[0])
            return None
        state.readers.setdefault(step, set()).add(loc[0])
        return shadow

    def _list_append(self, func, v, s):
        """``self.cache.append(v)`` (``extend``): into a list an object holds, as Python does, and
        into the list the function's later reads of it read."""
        pos = self._pos(s)
        lst = self._atom(func.value)
        k = self._known(lst)
        if isinstance(lst, ir.Name) and lst.id in self.objects.shadowed:
            k = Known(MISSING, list, loc=self.objects.shadowed[lst.id])  # (self.hs = [] before)
        if k is None or k.loc is None or not isinstance(lst, ir.Name):
            fence.refuse(
                self.src,
                s,
                msg=f"{code_of(func)}(...): sourcegrad cannot tell which list this changes when it "
                "compiles the function",
                hint="append to a list held in a local variable, or in an attribute of self or of "
                "an object passed in",
            )
        loc = k.loc
        self._record_write(loc, Known(MISSING, object, self._path_of_ident(loc[0])))
        shadow = self.objects.shadows.get(loc)
        target = lst.id if shadow is None else shadow
        if shadow is not None and lst.id != shadow:
            self._emit(ir.Assign(shadow, self._copy_op(lst), pos))
        if func.attr.value == "append":
            if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                fence.refuse(self.src, v, msg="append takes one value")
            self._emit(ir.Append(target, self._atom(v.args[0].value), pos))
        else:
            if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                fence.refuse(self.src, v, msg="extend takes one sequence")
            self._extend(target, self._atom(v.args[0].value), pos)

    def _path_of_ident(self, ident):
        paths = self.objects.paths.get(ident)
        return paths[0] if paths else None

    def _setattr(self, call, s):
        """``setattr(obj, name, value)``: an attribute write where ``name`` is known now."""
        args, kwargs = self._call_args(call)
        if kwargs or len(args) != 3:
            fence.refuse(self.src, call, msg="setattr takes an object, a name and a value")
        k = self._known(args[1])
        if k is None or type(k.value) is not str:
            fence.refuse(
                self.src,
                call,
                msg="setattr(obj, name, value): the name must be known when the function is "
                "compiled (a string written there, a constant, or one the arguments hold)",
                hint="write obj.attribute = value",
            )
        self._require(k, "eq")
        self._attribute_write(call, args[2], self._pos(s), step=k.value, obj=args[0])

    def _prologue(self):
        """At the top of the root function: each location the function writes (known from the
        lowering before), read once into its shadow, so the shadow holds what the location holds
        on every path. Locations of objects made in the call are read where they are made."""
        state = self.objects
        pos = self.src.stmt_pos(self.src.tree)
        objects = {}  # path -> the atom the prologue read it into (prefixes read once)
        containers = []  # what the written locations hold that is a list or a dict
        for loc, path in state.written.locs.items():
            if path is None:
                continue
            obj = self._read_path(path, objects)
            ident, step = loc
            name = self.naming.unique(_shadow_name(step))
            self.naming.shadows.add(name)
            state.shadows[loc] = name
            state.shadowed[name] = loc
            if isinstance(step, str):
                fn, arg, text = (
                    _structures.read_or_missing,
                    ir.Const(step, repr(step)),
                    "read_or_missing",
                )
            else:
                fn, arg, text = (
                    _structures.item_or_missing,
                    ir.Const(step.key, repr(step.key)),
                    "item_or_missing",
                )
            helper = self._alias(text, fn)
            if isinstance(step, str):
                k = self._attribute_known(self._known(obj), step)
            else:
                k = self._item_known(self._known(obj), Known(step.key))
            if k is not None and k.path is not None and isinstance(k.value, (list, dict)):
                containers.append(k)
            op = ir.Op(
                fn,
                (obj, arg),
                (),
                f"{helper}({obj.render()}, {arg.render()})",
                self._read_kind(k, fn),
            )
            self._emit(ir.Assign(name, op, pos))
        self._distinct_containers(containers)

    def _distinct_containers(self, containers):
        """The lists and dicts the written locations hold are distinct objects (each shadow
        follows its own: two objects sharing one list, a mutable default, would not see each
        other's appends): refused where they are not now, guarded to stay so."""
        seen = {}
        for k in containers:
            other = seen.setdefault(id(k.value), k)
            if other is not k:
                fence.refuse(
                    self.src,
                    self.src.tree,
                    msg=f"{other.path.describe()} and {k.path.describe()} are one "
                    f"{type(k.value).__name__}, which the function changes: sourcegrad follows "
                    "what each object's attribute holds apart",
                    hint="give each object a list of its own (a mutable default argument is "
                    "shared: write =None and make the list in __init__)",
                )
        self.captures.record_distinct([k.path.read() for k in containers])

    def _read_path(self, path, read):
        """An atom holding what ``path`` reads, from the parameter or the captured value it starts
        at (the root's parameters are its own names at the top); ``read``: the paths read so far
        and their atoms, whose prefixes are not read again."""
        from ..captures import ArgRoot

        if path in read:
            return read[path]
        tree = self.src.tree
        if path.attrs:
            base = self._read_path(Path(path.where, path.name, path.attrs[:-1]), read)
            step = path.attrs[-1]
            if isinstance(step, Item):
                op = self._getitem_op(base, ir.Index((ir.Const(step.key, repr(step.key)),), False))
            else:
                op = self._field_read(tree, base, step)
            read[path] = atom = self._named_atom(self._atom_of(op, tree), tree)
            return atom
        if type(path.where) is ArgRoot:
            atom = ir.Name(self.params[path.where.index])
        else:
            atom = None
            for const, p in self.objects.consts.values():
                if p.where is path.where and p.name == path.name and not p.attrs:
                    atom = const
                    break
            if atom is None:
                value = (
                    path.where[path.name]
                    if isinstance(path.where, dict)
                    else path.where.cell_contents
                )
                atom = self._captured_const(
                    value, self.captures.spell(path.name, path.where, value), None
                )
        read[path] = atom = self._named_atom(atom, tree)
        return atom

    def _distinct_guards(self):
        """Guards that the objects the compile told apart (one shadow each) are distinct objects,
        and that one reached along several chains is one object."""
        state = self.objects
        written_steps = {loc[1] for loc in state.written.locs}
        for step in written_steps:
            idents = [i for i in state.readers.get(step, ()) if i[0] == "id"]
            reads = [state.paths[i][0].read() for i in idents if state.paths.get(i)]
            if len(reads) > 1:
                self.captures.record_distinct(reads)
        for ident, paths in state.paths.items():
            if len(paths) > 1 and any(loc[0] == ident for loc in state.written.locs):
                self.captures.record_distinct([p.read() for p in paths], same=True)

    # ---- loops over objects --------------------------------------------------------------------
    def _object_loop(self, s):
        """``for layer in self.layers:`` (or ``enumerate``) over a list or tuple of objects known
        now: unrolled, each entry's body compiled for the entry's class. True when done."""
        it, target = s.iter, s.target
        index_target = None
        if isinstance(it, cst.Call) and self._static_callee_peek(it.func) is builtins.enumerate:
            if (
                len(it.args) != 1
                or it.args[0].keyword is not None
                or not isinstance(target, cst.Tuple)
                or len(target.elements) != 2
            ):
                return False
            index_target, target = target.elements[0].value, target.elements[1].value
            it = it.args[0].value
        if isinstance(it, (cst.List, cst.Tuple)):
            if not it.elements or any(isinstance(e, cst.StarredElement) for e in it.elements):
                return False
            entries = [self._peek(e.value) for e in it.elements]
            if not any(e is not None and _worth_unrolling(e.value) for e in entries):
                return False
            seq = None
        else:
            k = self._peek(it)
            if (
                k is None
                or type(k.value) not in (list, tuple)
                or not any(_worth_unrolling(v) for v in k.value)
            ):
                return False
            entries = None
        if find_node(s.body, (cst.Break, cst.Continue, cst.Return)) is not None:
            fence.refuse(
                self.src,
                s,
                msg="a loop over objects (whose methods it calls) is compiled once per entry; "
                "break, continue and return inside it are not supported",
                hint="loop over the objects with no early exit, or over range(len(...)) of arrays",
            )
        pos = self._pos(s)
        if entries is None:
            seq = self._named_atom(self._atom(it), s)
            k = self._known(seq)
            if k is None or type(k.value) not in (list, tuple):
                return False
            self._require(k, "type")
            self._require(k, "len")
            count = len(k.value)
        else:
            atoms = [self._atom(e.value) for e in it.elements]
            count = len(atoms)
        outer = self._unrolled  # (a loop unrolled inside counts these copies: loops.py)
        self._unrolled = outer * max(1, count)
        try:
            for i in range(count):
                if index_target is not None:
                    self._assign_target(index_target, ir.Const(i, str(i)), pos)
                if seq is not None:
                    entry = self._getitem_op(seq, ir.Index((ir.Const(i, str(i)),), False))
                    self._bind_value(target, entry, pos)
                else:
                    self._assign_target(target, atoms[i], pos)
                self._statements(s.body)
        finally:
            self._unrolled = outer
        return True

    def _written_known(self, base, step):
        """(does the function write the location ``base.step``, what it holds here): a written
        location is what its shadow holds here (None inside a loop that writes it, after a
        branch that did), never what the example held when the call started."""
        if base is None or (base.value is not MISSING and is_data(base.value)):
            return False, None
        shadow = self.objects.shadows.get((base.ident(), step))
        if shadow is None:
            return False, None
        return True, self.objects.known.get(shadow)

    def _static_callee_peek(self, func):
        if type(func) is cst.Name and func.value not in self.locals:
            value, _ = self._resolve(func)
            return value
        return None

    def _peek(self, node):
        """What ``node`` holds, known now, without lowering it or recording anything (None)."""
        kind = type(node)
        if kind is cst.Name:
            n = node.value
            if n in self.subst:
                return self._known(self.subst[n])
            if n in self.locals:
                return self.objects.known.get(self._local(n))
            if n in ("True", "False", "None"):
                return Known({"True": True, "False": False, "None": None}[n])
            try:
                value, read = self._resolve(node)
            except Exception:
                return None
            path = Path(read[0], read[1], read[2]) if read is not None else None
            return Known(value, path=path)
        if kind is cst.Attribute:
            base = self._peek(node.value)
            if base is None:
                return None
            if base.value is not MISSING and isinstance(base.value, types.ModuleType):
                value = getattr(base.value, node.attr.value, MISSING)
                return None if value is MISSING else Known(value)
            written, k = self._written_known(base, node.attr.value)
            return k if written else self._attribute_known(base, node.attr.value)
        if kind is cst.Subscript:
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                return None
            base, key = self._peek(node.value), self._peek(node.slice[0].slice.value)
            if key is not None and type(key.value) is str:
                written, k = self._written_known(base, Item(key.value))
                if written:
                    return k
            return self._item_known(base, key)
        if kind in (cst.SimpleString, cst.Integer):
            return Known(literal_value(node.value))
        return None

    # ---- tests decided now ---------------------------------------------------------------------
    def _fold(self, test):
        """The value of an ``if`` test decided now, or None: comparisons of strings, ``is None``,
        ``isinstance`` and ``callable`` of values known now (guarded as the decision needs)."""
        pending = []
        try:
            value = self._fold_expr(test, pending)
        except _Undecided:
            return None
        for k, check in pending:
            self._require(k, check)
        return bool(value)

    def _fold_expr(self, node, pending):
        kind = type(node)
        if kind is cst.UnaryOperation and isinstance(node.operator, cst.Not):
            return not self._fold_expr(node.expression, pending)
        if kind is cst.BooleanOperation:
            left = self._fold_expr(node.left, pending)
            if isinstance(node.operator, cst.And):
                return left and self._fold_expr(node.right, pending)
            return left or self._fold_expr(node.right, pending)
        if kind is cst.Comparison and len(node.comparisons) == 1:
            c = node.comparisons[0]
            op = type(c.operator)
            if op in (cst.Is, cst.IsNot):
                left, right = (
                    self._fold_value(node.left, pending, none=True),
                    self._fold_value(c.comparator, pending, none=True),
                )
                if left is not None and right is not None:
                    raise _Undecided  # (only `x is None` is decided)
                same = (left is None) == (right is None)
                return same if op is cst.Is else not same
            if op in (cst.Equal, cst.NotEqual, cst.In, cst.NotIn):
                left = self._fold_value(node.left, pending)
                right = self._fold_value(c.comparator, pending)
                if op is cst.Equal:
                    return left == right
                if op is cst.NotEqual:
                    return left != right
                if not isinstance(right, (tuple, list, str)):
                    raise _Undecided
                return (left in right) if op is cst.In else (left not in right)
            raise _Undecided
        if kind is cst.Call and type(node.func) is cst.Name and not node.func.value in self.locals:
            fn = self._static_callee_peek(node.func)
            if fn is builtins.isinstance and len(node.args) == 2:
                k = self._peek(node.args[0].value)
                classes = self._peek(node.args[1].value)
                if k is None or classes is None or k.value is MISSING:
                    raise _Undecided
                if not isinstance(classes.value, (type, tuple)):
                    raise _Undecided
                pending.append((k, "type"))
                return isinstance(k.value, classes.value)
            if fn is builtins.callable and len(node.args) == 1:
                k = self._peek(node.args[0].value)
                if k is None or k.value is MISSING:
                    raise _Undecided
                pending.append((k, "type"))
                return callable(k.value)
        raise _Undecided

    def _fold_value(self, node, pending, none=False):
        """A string (or, with ``none``, whether it is None) known now; tuples of strings."""
        if isinstance(node, (cst.Tuple, cst.List)):
            return tuple(self._fold_value(e.value, pending) for e in node.elements)
        k = self._peek(node)
        if k is None or k.value is MISSING:
            raise _Undecided
        if none:
            pending.append((k, "type"))
            return None if k.value is None else k
        if type(k.value) is not str:
            raise _Undecided
        if k.path is not None or k.deps:
            pending.append((k, "eq"))
        return k.value


class _Undecided(Exception):
    """An ``if`` test that is not decided when the function is compiled."""


class _UserLoop:
    """Lowering a loop of the user's: what its body rebinds is forgotten at its head and after
    it, and the locations it writes are recorded under it."""

    def __init__(self, normalizer, node, targets=None):
        self.n, self.node = normalizer, node

    def __enter__(self):
        n = self.n
        n._forget_in_loop(self.node, getattr(self.node, "target", None))
        n.objects.loops.append(id(self.node))
        return self

    def __exit__(self, *exc):
        n = self.n
        n.objects.loops.pop()
        n._forget_in_loop(self.node, getattr(self.node, "target", None))
        return False


def _worth_unrolling(value):
    """Is a list's entry one whose methods or calls need its class (an object, a function)?"""
    return not is_data(value) and not isinstance(value, (list, tuple, dict))


def _user_object(value):
    return _is_users(type(value)) and not isinstance(value, type)


def is_data_type(cls):
    return cls in _PLAIN or issubclass(cls, (np.ndarray, np.generic)) or cls in (list, tuple, dict)


def _code_check(fn):
    from ..captures import code_check

    return code_check(fn)


def _step_text(step):
    return f".{step}" if isinstance(step, str) else f"[{step.key!r}]"


def _shadow_name(step):
    base = step if isinstance(step, str) else str(step.key)
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "entry"
    return f"{base}_attr" if isinstance(step, str) else f"{base}_entry"
