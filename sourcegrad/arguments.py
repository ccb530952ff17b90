"""What a call's arguments are, and whether the ones ``wrt`` selects can be differentiated.

``wrt`` is resolved to parameter names and positions once (``wrt_names``); each call's selected
values are checked before anything runs, and a refusal says what the value is and how to pass it
instead (``check_wrt_values``). Also the binding of keyword and default arguments to the
positional parameters the compiled code takes, and the options checked when a gradient is made.
"""

from __future__ import annotations

import inspect

import numpy as np

from .errors import UnsupportedValueError, UsageError, WrtError
from .runtime import structures as _structures

_ndarray = np.ndarray


def parameters_of(fn):
    """Its parameters, keyword-only ones last (the compiled code takes them all by position)."""
    code = fn.__code__
    return list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


def _all_positional(fn, args, kwargs):
    """``fn``'s arguments, defaults applied, as the positional arguments of its compiled code,
    whose parameters are ``parameters_of(fn)`` (keyword-only ones included, without defaults)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{_fname(fn)}(): {e}") from None  # as calling fn would
    bound.apply_defaults()
    return tuple(bound.arguments[p] for p in parameters_of(fn)), {}


def _keyword_only(fn, args):
    """The positional arguments ``_all_positional`` made, split as the generated function takes
    them: its keyword-only parameters are keyword-only, as they are ``fn``'s."""
    n = fn.__code__.co_argcount
    return args[:n], dict(zip(parameters_of(fn)[n:], args[n:]))


_MISSING = object()


def _fname(fn):
    return getattr(fn, "__qualname__", repr(fn))


def _wrt_names(fn, wrt):
    params = parameters_of(fn)
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    if not items:
        raise WrtError(
            "wrt selects no argument; give an index, a parameter name, or a tuple of them"
        )
    names = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise WrtError(f"wrt must be an int, a parameter name, or a tuple of them, not {w!r}")
        if isinstance(w, int):
            if not -len(params) <= w < len(params):
                raise WrtError(
                    f"wrt={w} is out of range: {_fname(fn)} has {len(params)} parameter(s) {params}"
                )
            names.append(params[w])
        else:
            if w not in params:
                raise WrtError(
                    f"wrt={w!r} names no parameter of {_fname(fn)}; its parameters are {params}"
                )
            names.append(w)
    if len(set(names)) != len(names):
        raise WrtError(f"wrt names a parameter twice: {names}")
    return names, single, [params.index(n) for n in names]


def check_wrt_values(fn, names, positions, args, kwargs):
    """Refuse a call whose ``wrt`` arguments are not float values (arrays, Python floats, or
    containers and structures of them), naming the argument, what it is, and the fix."""
    if kwargs:
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError:
            return  # the generated function's own signature reports the mismatch
        values = [bound.arguments.get(n, _MISSING) for n in names]
    else:
        if len(args) != len(parameters_of(fn)):
            return
        values = [args[i] for i in positions]
    for name, a in zip(names, values):
        if type(a) is _ndarray and a.dtype.kind in "fc":  # the common case, first and cheap
            continue
        if a is _MISSING:
            continue
        if type(a) is float or _float_leaves(a):
            continue
        raise WrtError(
            f"cannot differentiate {_fname(fn)} with respect to {name!r}: it is "
            f"{_describe(a)}; {_wrt_advice(name, a)}"
        )


# ndarray subclasses whose operations mean something else than the rules assume
_REFUSED_ARRAYS = (
    (
        np.ma.MaskedArray,
        "a masked array: numpy's functions skip its masked entries, which the "
        "derivative rules would not",
        "pass np.ma.filled(x, fill) or x.data with the mask applied "
        "in the function (np.where(mask, 0.0, x))",
    ),
    (
        np.matrix,
        "an np.matrix: its * is a matrix product and its reductions keep two axes",
        "pass np.asarray(m)",
    ),
)


def check_array_kinds(fn, args, kwargs, depth=4):
    """Refuse an argument (or an entry of a list, tuple or dict argument) that is a masked array
    or an ``np.matrix``: the gradient would silently ignore the mask, or read ``*`` as numpy's."""
    for a in (*args, *kwargs.values()):
        _check_array_kind(fn, a, depth)


def _check_array_kind(fn, a, depth):
    t = type(a)
    if t is _ndarray or t is float or t is int:
        return
    if isinstance(a, np.ndarray):
        for kind, what, fix in _REFUSED_ARRAYS:
            if isinstance(a, kind):
                raise UnsupportedValueError(f"cannot differentiate {_fname(fn)} at {what}; {fix}")
    elif depth and isinstance(a, (list, tuple, dict)):
        for v in a.values() if isinstance(a, dict) else a:
            _check_array_kind(fn, v, depth - 1)


def _float_leaves(a):
    """Is ``a`` a float array, or a list/tuple/dict whose leaves all are (or Python floats), with at
    least one leaf? (Empty containers inside one are fine: ``{"layers": [], "out": w}``.)"""
    leaves = _leaves(a)
    return leaves is not None and leaves > 0


def _leaves(a):
    """The number of float leaves in ``a``, or None if some leaf is not a float. A dataclass or
    namedtuple counts the fields that hold float values (the others are static), a registered
    object its children (``runtime/structures.py``)."""
    if type(a) is float:
        return 1
    if _structures.is_structure(a):
        children = _structures.differentiable_children(a)
        if set(children) & _structures.ARRAY_ATTRIBUTES:
            return None  # p.T, p.shape read as array attributes
        counts = [_leaves(x) for x in children.values()]
        return None if None in counts else sum(counts)
    if isinstance(a, (list, tuple, dict)):
        counts = [_leaves(x) for x in (a.values() if isinstance(a, dict) else a)]
        return None if None in counts else sum(counts)
    return 1 if getattr(getattr(a, "dtype", None), "kind", None) in ("f", "c") else None


def _describe(a):
    if _structures.is_namedtuple(a):
        return f"a {type(a).__name__} namedtuple"
    if isinstance(a, (list, tuple, dict)) and _leaves(a) == 0:
        return f"an empty {type(a).__name__}"
    if isinstance(a, bool):
        return "a bool"
    if isinstance(a, int):
        return "an int"
    dtype = getattr(a, "dtype", None)
    library = type(a).__module__.split(".")[0]
    if getattr(dtype, "kind", None) is None and library not in ("builtins", "numpy"):
        if dtype is not None:  # another library's array: a torch tensor
            return f"a {library}.{type(a).__name__} of dtype {dtype}"
        import dataclasses

        return f"a {type(a).__name__} {'dataclass' if dataclasses.is_dataclass(a) else 'object'}"
    if dtype is not None:
        return f"an array of dtype {dtype}"
    return f"a {type(a).__name__}"


_TAKES = (
    "gradients are taken with respect to float arrays and Python floats, or dicts, lists, tuples, dataclasses, "
    "namedtuples and registered objects of them"
)


def _wrt_advice(name, a):
    """Why a ``wrt`` argument cannot be differentiated, and the fix for its kind of value."""
    if _structures.is_structure(a):
        return _structure_advice(name, a)
    if isinstance(a, (list, tuple, dict)):
        bad = _first_bad_leaf(a, name)
        if bad is None:
            return f"there is nothing in it to differentiate ({_TAKES})."
        path, leaf = bad
        return f"{path} is {_describe(leaf)}: {_wrt_advice(path, leaf)}"
    if isinstance(a, (bool, int)):
        return f"gradients need floating-point values. Pass e.g. float({name})."
    kind = getattr(getattr(a, "dtype", None), "kind", None)
    if kind is not None:  # a numpy (or cupy) array or scalar of ints or bools
        return (
            f"gradients need floating-point values. Pass e.g. {name}.astype(float) or {name} * 1.0."
        )
    library = type(a).__module__.split(".")[0]
    if library == "torch":
        return f"sourcegrad differentiates numpy (and cupy) arrays, not torch tensors: pass {name}.detach().cpu().numpy()."
    if hasattr(a, "__array__") or hasattr(a, "__array_interface__"):
        return f"sourcegrad differentiates numpy (and cupy) arrays: pass np.asarray({name})."
    if type(a).__module__ == "builtins":  # None, a string, ...
        if "[" in name:
            return f"{_TAKES}: pass it as an argument of its own, outside {name.split('[')[0]}."
        return f"{_TAKES}; leave {name} out of wrt."
    return (
        f"{_TAKES}: make {type(a).__name__} a dataclass, or register it with "
        f"sourcegrad.register_structure({type(a).__name__}, flatten, unflatten); or pass the arrays it holds "
        "as arguments, or as a dict of them."
    )


def _structure_advice(name, a):
    """Why a dataclass, namedtuple or registered object cannot be differentiated."""
    children = _structures.differentiable_children(a)
    clash = sorted(set(children) & _structures.ARRAY_ATTRIBUTES)
    if clash:
        return (
            f"its field {clash[0]!r} holds float values but {name}.{clash[0]} reads as the array attribute "
            f".{clash[0]} in a differentiated function: rename the field."
        )
    bad = _first_bad_leaf(a, name)
    if bad is not None:
        path, leaf = bad
        return f"{path} is {_describe(leaf)}: {_wrt_advice(path, leaf)}"
    return (
        f"there is nothing in it to differentiate: none of its fields holds float values ({_TAKES}; a "
        "field of ints, strings or None is carried over unchanged)."
    )


def _first_bad_leaf(a, path):
    """``(path, leaf)`` of the first leaf of a dict/list/tuple tree that is not a float value
    (a structure's differentiable fields as ``path.name``)."""
    if _structures.is_structure(a):
        items = [(f"{path}.{k}", x) for k, x in _structures.differentiable_children(a).items()]
    else:
        items = [
            (f"{path}[{k!r}]", x) for k, x in (a.items() if isinstance(a, dict) else enumerate(a))
        ]
    for where, x in items:
        if (
            _structures.is_structure(x)
            and set(_structures.differentiable_children(x)) & _structures.ARRAY_ATTRIBUTES
        ):
            return where, x
        if isinstance(x, (list, tuple, dict)) or _structures.is_structure(x):
            bad = _first_bad_leaf(x, where)
            if bad is not None:
                return bad
        elif _leaves(x) is None:
            return where, x
    return None


def _check_tangent(name, x, t):
    """A tangent has its argument's shape (containers: checked where the code reads them)."""
    if isinstance(x, (list, tuple, dict)) or _structures.is_structure(x):
        return
    if np.shape(t) != np.shape(x):
        raise UsageError(
            f"the tangent for {name!r} has shape {np.shape(t)}, but {name} has shape {np.shape(x)}: "
            "pass a tangent shaped like the argument"
        )


def _wrt_values(compiled, args, kwargs):
    """The values of the ``wrt`` arguments of a call (arrays or Python floats only)."""
    full = ((compiled.bound,) + tuple(args)) if compiled.bound is not None else tuple(args)
    full, _ = _all_positional(compiled.fn, full, kwargs)
    xs = [full[i] for i in compiled.positions]
    for name, x in zip(compiled.names, xs):
        if not (
            isinstance(x, float) or getattr(getattr(x, "dtype", None), "kind", None) in ("f", "c")
        ):
            raise UsageError(
                f"a Jacobian is taken with respect to float arrays and Python floats; {name} is {_describe(x)}"
            )
    return xs


def _checkpoint_option(checkpoint):
    """``checkpoint``: None/False, True (the default number of snapshots), or a number of snapshots."""
    if checkpoint is None or checkpoint is False:
        return None
    if checkpoint is True or (
        isinstance(checkpoint, int) and not isinstance(checkpoint, bool) and checkpoint > 0
    ):
        return checkpoint
    raise UsageError(
        f"checkpoint must be True, False or a number of snapshots (a positive int), not {checkpoint!r}"
    )
