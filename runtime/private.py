"""A pullback's own copy of the memory its caller can still change.

``vjp`` returns a pullback that runs later, after the caller may have written in place into an
argument, into the value it was given, or into a captured array (``out -= y``, ``x += 1``,
``S[0] = 0``). numpy arrays carry no version counter (PyTorch refuses such a backward with one),
so the backward would pair the old forward with the new data: a wrong gradient. Instead, when the
forward returns, every array the pullback reads whose memory the caller can reach (an argument or
anything reachable from one, the returned value or aux, a global of the user's module) is copied
once, and the pullback reads the copy. Arrays the forward made and kept to itself are not copied.

Expects: ``pullback`` is the function the generated forward returned (its closure and globals are
what its backward reads). Guarantees: no cell or global the user can see is modified; a new
function with new cells is returned where something was copied, ``pullback`` itself otherwise.
"""

from __future__ import annotations

import types

import numpy as np

from . import meter

_DEPTH = 6  # how deep into containers and objects an argument's arrays are looked for


def _is_array(v):
    return isinstance(v, np.ndarray) or type(v).__module__.startswith("cupy")


def _owner(a):
    """The object that holds ``a``'s memory: the end of its chain of ``base``s."""
    while True:
        base = getattr(a, "base", None)
        if base is None:
            return a
        a = base


def _reachable_owners(values, owners, seen, depth):
    """Add to ``owners`` the id of the memory owner of every array reachable from ``values``
    through dicts, lists, tuples and objects' attributes."""
    for v in values:
        if _is_array(v):
            owners.add(id(_owner(v)))
        elif depth and id(v) not in seen:
            seen.add(id(v))
            children = _children(v)
            if children:
                _reachable_owners(children, owners, seen, depth - 1)


def _children(v):
    if isinstance(v, dict):
        return list(v.values())
    if isinstance(v, (list, tuple, set, frozenset)):
        return list(v)
    if isinstance(v, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
        return None
    attributes = getattr(v, "__dict__", None)
    return list(attributes.values()) if isinstance(attributes, dict) else None


# the site under which ``sourcegrad.memory`` counts the copies (``runtime/meter.py``)
SITE = "private"


def _copy(a):
    copy = a.copy(order="K") if isinstance(a, np.ndarray) else a.copy()
    record = meter.current()
    if record is not None:
        record.kept(SITE, copy)
    return copy


def _private(v, owners):
    """``v`` with every array whose memory is in ``owners`` copied (plain containers rebuilt
    around the copies); ``v`` itself when nothing is."""
    if _is_array(v):
        return _copy(v) if id(_owner(v)) in owners else v
    if type(v) in (list, tuple):
        items = [_private(x, owners) for x in v]
        return type(v)(items) if any(a is not b for a, b in zip(items, v)) else v
    if type(v) is dict:
        items = {k: _private(x, owners) for k, x in v.items()}
        return items if any(items[k] is not v[k] for k in v) else v
    return v


def _outside(v):
    """A value read from outside the call: an array in it is copied wherever it is."""
    return _copy(v) if _is_array(v) else _private(v, _Everything())


class _Everything:
    def __contains__(self, _):
        return True


def _global_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def private_pullback(pullback, reachable, own_cells):
    """``pullback`` reading private copies of the arrays in its closure whose memory is reachable
    from ``reachable`` (the call's arguments and what it returned), and of every array it reads
    from outside the call: a cell not named in ``own_cells`` (the forward's own variables; any
    other cell is the user's closure, shared by every call) and its globals (the user's module)."""
    owners = set()
    _reachable_owners(reachable, owners, set(), _DEPTH)
    cells = pullback.__closure__ or ()
    contents = [_contents(c) for c in cells]
    private = [
        v if v is _EMPTY else _private(v, owners) if name in own_cells else _outside(v)
        for name, v in zip(pullback.__code__.co_freevars, contents)
    ]
    changed = any(a is not b for a, b in zip(private, contents))
    g = pullback.__globals__
    pinned = {n: _copy(g[n]) for n in _global_names(pullback.__code__) if _is_array(g.get(n))}
    if not changed and not pinned:
        return pullback
    closure = tuple(
        c if new is old else types.CellType(new) for c, new, old in zip(cells, private, contents)
    )
    made = types.FunctionType(
        pullback.__code__,
        {**g, **pinned} if pinned else g,
        pullback.__name__,
        pullback.__defaults__,
        closure or None,
    )
    made.__qualname__ = pullback.__qualname__
    return made


_EMPTY = object()


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not bound yet
        return _EMPTY
