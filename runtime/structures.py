"""Objects as differentiated values: dataclasses, namedtuples and registered classes.

An attribute read ``p.w`` of a local value is the primitive ``field(p, "w")`` (the generated
forward reads ``p.w`` itself); its adjoint is ``field_adjoint(g, p, "w")``: a ``FieldAdjoint``
(one entry per attribute a gradient reached) for a dataclass or a registered object, the
``SeqAdjoint`` of that field's position for a namedtuple (so ``r.S`` and ``r[1]`` of an
``svd`` result give the rule the same adjoint). ``finalize`` gives the user a gradient with the
argument's structure, as JAX's registered dataclasses do:

- a dataclass gradient is a copy of the argument (the same class, built without running
  ``__init__``) whose fields with float leaves hold their gradients; its other fields (ints,
  strings, None, integer arrays: static hyperparameters) are carried over unchanged, as JAX
  keeps a dataclass's static fields;
- a namedtuple gradient is the same namedtuple type; an entry with no float leaf is carried over;
- a registered class (``register_structure``) is rebuilt by its ``unflatten(aux, children)``
  from the gradients of the children its ``flatten`` declared differentiable.

A gradient that reaches an attribute that is no differentiable field (a property, an attribute
set in ``__post_init__``, an attribute of an array) is refused when the backward runs rather
than dropped. Imports numpy only.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .errors import UnsupportedValueError
from .values import finalize as _finalize_leaf
from .zeros import MapAdjoint, SeqAdjoint, ZERO

__all__ = [
    "register_structure",
    "field",
    "field_adjoint",
    "FieldAdjoint",
    "finalize",
    "is_structure",
    "check_method",
    "differentiable_children",
    "replace_children",
    "is_namedtuple",
    "read_or_missing",
    "item_or_missing",
    "item_adjoint",
    "Missing",
    "make_dict",
    "dict_values_adjoint",
]

_REGISTRY = {}  # class -> (flatten, unflatten)
_ndarray = np.ndarray

# Attribute names sourcegrad reads as array attributes (``x.T``, ``x.shape``): a differentiable
# field of that name would be read as the array attribute, so a structure passed in wrt may not
# have one (``api`` refuses it with the fix).
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "shape", "ndim", "size", "dtype", "real", "imag"})


def register_structure(cls, flatten, unflatten):
    """Make instances of ``cls`` differentiable values (as JAX's ``register_pytree_node``).

    ``flatten(obj)`` returns ``(children, aux)``: ``children`` a dict mapping attribute names to
    the values that carry a gradient (float arrays, Python floats, or dicts, lists, tuples and
    structures of them), ``aux`` anything else needed to rebuild the object (hyperparameters).
    ``unflatten(aux, children)`` builds an object of ``cls`` from ``aux`` and a dict of the same
    names. A differentiated function reads the children as attributes (``obj.w``), and the
    gradient with respect to an object is ``unflatten(aux, gradients)``::

        class Linear:
            def __init__(self, w, b, act="tanh"):
                self.w, self.b, self.act = w, b, act

        sourcegrad.register_structure(
            Linear,
            lambda m: ({"w": m.w, "b": m.b}, m.act),
            lambda act, ch: Linear(ch["w"], ch["b"], act))
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_structure needs a class, got {cls!r}")
    if not callable(flatten) or not callable(unflatten):
        raise TypeError(
            "register_structure(cls, flatten, unflatten): flatten and unflatten must be callables"
        )
    _REGISTRY[cls] = (flatten, unflatten)
    return cls


def is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _registered(x):
    for cls in type(x).__mro__:
        entry = _REGISTRY.get(cls)
        if entry is not None:
            return entry
    return None


def is_structure(x):
    """A dataclass instance, a namedtuple or an object of a registered class?"""
    return (
        _registered(x) is not None
        or is_namedtuple(x)
        or (dataclasses.is_dataclass(x) and not isinstance(x, type))
    )


def _float_tree(v):
    """Does ``v`` hold float leaves only (at least one)? None: no float leaf at all (a static
    value); False: float leaves mixed with others."""
    if type(v) is float or getattr(getattr(v, "dtype", None), "kind", None) in ("f", "c"):
        return True
    if isinstance(v, (list, tuple, dict)) or is_structure(v):
        kinds = [_float_tree(x) for x in _children_values(v)]
        if False in kinds or (True in kinds and None in kinds and not is_structure(v)):
            return False
        return True if True in kinds else None
    return None


def _children_values(v):
    if isinstance(v, dict):
        return list(v.values())
    if is_structure(v):
        return list(differentiable_children(v, static=True).values())
    return list(v)


def differentiable_children(x, static=False):
    """name -> value of the attributes of structure ``x`` that carry a gradient: a registered
    object's children, a dataclass's fields and a namedtuple's entries with float leaves (all of
    them with ``static=True``)."""
    entry = _registered(x)
    if entry is not None:
        children, _ = entry[0](x)
        if not isinstance(children, dict):
            raise UnsupportedValueError(
                f"the flatten function registered for {type(x).__name__} must return "
                f"(dict of children, aux), got {type(children).__name__} children"
            )
        return dict(children)
    if is_namedtuple(x):
        items = dict(zip(type(x)._fields, x))
    else:
        items = {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    if static:
        return items
    return {k: v for k, v in items.items() if _float_tree(v) is not None}


def field(obj, name):
    """``obj.name``: the primitive an attribute read stands for (the forward reads it directly)."""
    return getattr(obj, name)


class Missing:
    """What ``read_or_missing`` gives for an attribute (or a dict's key) the object does not hold
    yet: the function writes it later, and reads it before only where Python would have raised.
    Any use raises the error Python raises at such a read."""

    __slots__ = ("_owner", "_name")

    def __init__(self, owner, name):
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_name", name)

    def _fail(self, *args, **kwargs):
        owner, name = (
            object.__getattribute__(self, "_owner"),
            object.__getattribute__(self, "_name"),
        )
        if isinstance(owner, dict):
            raise KeyError(name)
        raise AttributeError(f"{type(owner).__name__!r} object has no attribute {name!r}")

    def __getattr__(self, name):
        self._fail()

    def __repr__(self):
        return f"<missing .{object.__getattribute__(self, '_name')}>"

    __call__ = __array__ = __bool__ = __len__ = __iter__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __rpow__ = __neg__ = _fail
    __float__ = __int__ = __index__ = __lt__ = __le__ = __gt__ = __ge__ = _fail


def read_or_missing(obj, name):
    """``obj.name``, or a ``Missing`` where ``obj`` has no such attribute: what an attribute the
    function writes holds when the call starts (``normalize/objects.py``)."""
    try:
        return getattr(obj, name)
    except AttributeError:
        return Missing(obj, name)


def item_or_missing(d, key):
    """``d[key]``, or a ``Missing`` where the dict has no such key (as ``read_or_missing``)."""
    try:
        return d[key]
    except KeyError:
        return Missing(d, key)


def item_adjoint(g, d, key):
    """The adjoint of the dict ``d`` from the adjoint ``g`` of ``d[key]``."""
    return ZERO if g is ZERO else MapAdjoint({key: g})


def make_dict(keys, values):
    """``{k: v, ...}``: a dict literal used as a value (stored on an object, passed, returned)."""
    return dict(zip(keys, values))


def dict_values_adjoint(g, keys):
    """The adjoints of a dict literal's values from the adjoint ``g`` of the dict."""
    if g is ZERO:
        return ZERO
    return SeqAdjoint([g.get(k, ZERO) for k in keys])


class FieldAdjoint(MapAdjoint):
    """The adjoint of a dataclass or registered object: one entry per attribute a gradient
    reached. A plain zero (the ``zeros_like`` of an object is ``0.0``) adds as nothing."""

    __slots__ = ()

    def __add__(self, other):
        if other is ZERO or (type(other) in (float, int) and other == 0):
            return self
        return FieldAdjoint(MapAdjoint.__add__(self, other))

    __radd__ = __add__


def field_adjoint(g, obj, name):
    """The adjoint of ``obj`` from the adjoint ``g`` of ``obj.name``."""
    if is_namedtuple(obj) and _registered(obj) is None:
        if name not in type(obj)._fields:
            _refuse_gradient(type(obj).__name__, [name])
        out = SeqAdjoint([ZERO] * len(obj))
        out[type(obj)._fields.index(name)] = g
        return out
    if hasattr(obj, "shape") and hasattr(obj, "dtype") and not is_structure(obj):
        raise UnsupportedValueError(
            f"the attribute .{name} of an array carries no gradient: sourcegrad differentiates attribute reads "
            "of dataclasses, namedtuples and registered structures (sourcegrad.register_structure) only"
        )
    return FieldAdjoint({name: g})


def finalize(g, like):
    """``runtime.finalize`` (the gradient as the user gets it) that also rebuilds structures:
    dataclasses, namedtuples and registered objects, anywhere in a dict, list or tuple."""
    if type(like) is _ndarray or type(like) is float:
        return _finalize_leaf(g, like)  # the common case, first and cheap
    if (
        type(g) in (float, int)
        and g == 0
        and not isinstance(like, (int, float, np.generic))
        and not hasattr(like, "shape")
    ):
        g = ZERO  # an object's zeros_like (0.0) that nothing was added to
    if is_structure(like):
        return _finalize_structure(g, like)
    if isinstance(like, dict):
        return {k: finalize(ZERO if g is ZERO else g.get(k, ZERO), v) for k, v in like.items()}
    if isinstance(like, (list, tuple)):
        entries = [ZERO] * len(like) if g is ZERO else g
        return type(like)(finalize(e, v) for e, v in zip(entries, like))
    return _finalize_leaf(g, like)


def _finalize_structure(g, like):
    kind = type(like).__name__
    if is_namedtuple(like) and _registered(like) is None:
        entries = [ZERO] * len(like) if g is ZERO else g
        if isinstance(entries, MapAdjoint):  # (only by a field read of a name no entry has)
            _refuse_gradient(kind, sorted(entries))
        out = {
            name: finalize(e, v)
            for name, e, v in zip(type(like)._fields, entries, like)
            if _float_tree(v) is not None
        }
        return replace_children(like, out)
    if g is not ZERO and not isinstance(g, MapAdjoint):
        raise UnsupportedValueError(
            f"the gradient of a {kind} reached it as a {type(g).__name__}: a {kind} can be "
            "read by attribute (obj.name) only in a differentiated function"
        )
    children = differentiable_children(like)
    grads = {} if g is ZERO else g
    # an attribute that is no child: its gradient is none if it holds no float (an int, a string),
    # otherwise it would be dropped (a property computed from the fields): refused
    bad = sorted(
        k
        for k in grads
        if k not in children
        and grads[k] is not ZERO
        and (
            _float_tree(getattr(like, k, None)) is not None
            or (isinstance(grads[k], (MapAdjoint, SeqAdjoint)) and _carries(grads[k]))
        )
    )
    if bad:
        _refuse_gradient(kind, bad)
    return replace_children(like, {k: finalize(grads.get(k, ZERO), v) for k, v in children.items()})


def _carries(g):
    """Does the adjoint of a container or a plain object (an activation held by a layer, whose
    ``alpha`` a gradient reached) hold any gradient at all?"""
    if isinstance(g, MapAdjoint):
        return any(_carries(v) for v in g.values())
    if isinstance(g, SeqAdjoint):
        return any(_carries(v) for v in g)
    return g is not ZERO


def replace_children(obj, children):
    """``obj`` with its differentiable children (``differentiable_children``) replaced by those in
    ``children``: ``unflatten(aux, children)`` for a registered object, the same namedtuple type,
    or a copy of a dataclass (``__init__`` not run, frozen ones too, other fields carried over)."""
    entry = _registered(obj)
    if entry is not None:
        return entry[1](entry[0](obj)[1], dict(children))
    if is_namedtuple(obj):
        return obj._replace(**children)
    new = copy.copy(obj)
    for k, v in children.items():
        object.__setattr__(new, k, v)
    return new


def _refuse_gradient(kind, names):
    listed = ", ".join(f".{n}" for n in names)
    raise UnsupportedValueError(
        f"a gradient reached {listed} of a {kind}, which is not one of its differentiable fields (a property, "
        "an attribute set outside the fields, or a child its registered flatten does not return): sourcegrad "
        "would have to drop it. Read the fields themselves, or register the class with "
        "sourcegrad.register_structure and return that attribute among the children"
    )


def check_method(obj, name, fn, where):
    """``obj.name(...)`` was compiled as a call of ``fn`` (inlined, resolved from the class the
    method being differentiated is defined in): refuse a ``self`` of a subclass that overrides
    it, or one whose instance attribute shadows it, rather than differentiate the wrong code."""
    got = getattr(type(obj), name, None)
    if got is not fn or name in getattr(obj, "__dict__", ()):
        raise UnsupportedValueError(
            f"{where}: self.{name} is {getattr(got, '__qualname__', got)!r} for this {type(obj).__name__}, but the "
            f"gradient was compiled with {fn.__qualname__} (a subclass overrides it, or an instance attribute "
            "shadows it); differentiate the subclass's own method (sourcegrad.grad(obj.method) resolves methods "
            "from the class that defines it)"
        )
