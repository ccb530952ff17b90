"""Refuse in-place writes that the adjoint could not see.

The backward treats ``a[i] = v`` and ``xs.append(v)`` as producing a new value of ``a``/``xs``.
That is sound only if no other variable shares the written memory: a parameter (the caller's
array), a view (``v = a[0:2]``, ``a.T``, ``a.reshape(...)``) or a second name (``b = a``) would
see the write in the forward while its adjoint never hears of it -- a silently wrong gradient.

Expects: normalized IR. Guarantees: every written variable is defined only by operations that
return fresh memory (allocations, arithmetic, reductions, copies, list literals), and is never
the source of an alias that a user variable holds. Otherwise ``UnsupportedSyntaxError``, located
at the write, with the fix (``.copy()``).

Cost: linear in the program (``dataflow.Forward``, ``dataflow.liveness``); ``work`` counts the
steps.
"""

from __future__ import annotations

import operator

import numpy as np

from sourcegrad.errors import UnsupportedSyntaxError

from . import ir
from sourcegrad.runtime import stop_gradient

from .fence import located
from .ir import ATTRIBUTE_READ, Tup
from .dataflow import Forward, exit_flags, liveness, work
from .rules import FRESH, NONDIFF, UFUNC_AT


def fresh(op):
    """Is the result of ``op`` new memory, never a view of an operand?"""
    key = op.key
    if key is ATTRIBUTE_READ:
        return True  # x.shape, x.ndim, x.size, x.dtype: never a view
    if op.kind == "nondiff" and key is not stop_gradient and key is not operator.getitem:
        try:
            if key in NONDIFF:
                return True  # comparisons, argmax, len, ...: new values
        except TypeError:
            pass
    if op.kind == "copy":
        a = op.args[0]
        return isinstance(a, Tup) or (
            isinstance(a, ir.Const) and type(a.value) in (int, float, bool)
        )
    if isinstance(key, np.ufunc):
        return True
    try:
        return key in FRESH  # declared with each primitive's rule (``rules.facts``)
    except TypeError:
        return False


def check(fn, src, naming, varied):
    """Raise if an in-place write into a differentiated value could be seen through another
    name: one that may share its memory and is still read after the write."""
    params = set(fn.params)
    writes = [
        s
        for s in ir.walk(fn.body)
        if _is_write(s)
        and (s.target in varied or (s.target in params and not isinstance(s, ir.Assign)))
    ]
    if not writes:
        return
    flags = exit_flags(fn)
    live_after, dead = liveness(fn.body, {id(w) for w in writes})
    objects = _points_to(
        fn, flags, {id(w): live_after.get(id(w), set()) | {w.target} for w in writes}, dead
    )
    in_lists = _appended(fn.body, flags, {id(w): {w.target} for w in writes}, dead)
    for w in writes:
        env = objects.get(id(w), {})  # (none: no way reaches the write)
        written = env.get(w.target, _NONE)[0]  # the write changes the memory (or the list) it is
        _refuse_argument_write(src, w, written)
        if not isinstance(w, ir.Append):
            _refuse_listed(src, w, in_lists.get(id(w), {}), live_after.get(id(w), set()))
        _refuse_shared(src, w, naming, env, written, live_after.get(id(w), set()))


def _refuse_argument_write(src, w, written):
    """Refuse ``w`` where it writes into memory an argument of the function may hold."""
    a = w.target
    inplace = isinstance(w, ir.Assign)
    for p in sorted(o[1] for o in written if o[0] == _ARG):
        scatter = _scatter_of(w) if inplace else None
        sym = _augmented_symbol(w) if inplace and scatter is None else ""
        what = (
            (f"{scatter} on it" if scatter else f"{sym}= on it") if inplace else "writing into it"
        )
        if p == a:
            _refuse(
                src,
                w,
                f"{a!r} is an argument: {what} would change the caller's data "
                "(numpy updates arrays in place)",
                f"write {a} = {a} {sym} ... instead"
                if inplace and not scatter
                else f"work on a copy: {a} = {a}.copy()",
            )
        _refuse(
            src,
            w,
            f"{a!r} may share memory with the argument {p!r}: {what} would change the "
            "caller's data",
            f"work on a copy: {a} = np.copy(...)",
        )


def _refuse_listed(src, w, in_lists, live):
    """Refuse ``w`` where the array it writes was appended to a list read after it."""
    a = w.target
    for lst in sorted(in_lists.get(a, frozenset()) & live):
        _refuse(
            src,
            w,
            f"{a!r} was appended to the list {lst!r}, which is read after this write: "
            "the list holds the array itself, so it would change too, unseen by the gradient",
            f"append a copy: {lst}.append(np.copy({a}))",
        )


def _refuse_shared(src, w, naming, env, written, live):
    """Refuse ``w`` where another name read after it may share the memory it writes."""
    a = w.target
    for n in sorted(live - {a}):
        if not (env.get(n, _NONE)[1] & written):
            continue
        if naming.snapshots.get(n) == a:
            _refuse(
                src,
                w,
                f"{a!r} is updated in place inside a loop over it: the loop would read the "
                "changed array, unseen by the gradient",
                f"loop over a copy (for ... in np.copy({a})), or write {a} = {a} + ... to make a new array",
            )
        if n in naming.temps:
            _refuse(
                src,
                w,
                f"an earlier value computed from {a!r} may share its memory (a view) and is read "
                "after this write, so it would change too, unseen by the gradient",
                f"write {a} = {a} + ... (a new array) instead of updating it in place",
            )
        _refuse(
            src,
            w,
            f"{n!r} may share memory with {a!r} (a view, another name for it, or a list or "
            "tuple holding it) and is read after this write, so it would change too, unseen by the gradient",
            f"take a copy where {n!r} is made: {n} = np.copy(...)",
        )


def _is_write(s):
    return isinstance(s, (ir.SetItem, ir.Append)) or (isinstance(s, ir.Assign) and s.inplace)


_ARG, _NEW, _OLD = "argument", "newest", "older"
_NONE = (frozenset(), frozenset())


def _points_to(fn, flags, keep, dead):
    """id(write) -> {name: (own, reach)} before the write, for the names in ``keep[id(write)]``."""
    arg = {p: frozenset({(_ARG, p)}) for p in fn.params}
    env = {p: (objs, objs) for p, objs in arg.items()}
    return Forward(fn.body, _PointsTo(fn), flags, keep, dead).run(env)


class _PointsTo:
    """The objects each name may *be* (``own``: whose memory, or list, a write through it
    changes) and those it may reach (``reach``: ``own`` and, for a tuple or list, the objects its
    entries may reach).

    An object is an argument (``(_ARG, name)``) or an allocation site; each site has two abstract
    objects, the one it made last (``_NEW``) and all it made before (``_OLD``), so a buffer
    allocated afresh in every iteration of a loop is told apart from the previous iteration's
    (recency abstraction). A view or another name is what its base is; an entry read from a
    tuple or list is one of the objects the list reaches besides itself.

    ``step`` updates a state in place. ``holders`` remembers, for each site, every name that was
    ever given its newest object, so that an allocation ages those names only instead of every
    name in the state."""

    def __init__(self, fn):
        self.literals = {
            id(s)
            for s in ir.walk(fn.body)
            if isinstance(s, ir.Assign) and s.op.kind == "copy" and isinstance(s.op.args[0], Tup)
        }
        self.holders = {}

    def kind(self, own):
        """'list' if ``own`` holds only tuple/list literals, 'array' if none (nor arguments)."""
        lits = sum(1 for o in own if o[0] in self.literals)
        if own and lits == len(own):
            return "list"
        return "array" if not lits and not any(o[0] == _ARG for o in own) else "either"

    def step(self, s, env):
        if isinstance(s, ir.Assign) and not s.inplace:
            self.put(env, s.target, self.value(s, env))
        elif isinstance(s, (ir.Append, ir.SetItem)) and isinstance(s.value, ir.Name):
            own, reach = env.get(s.target, _NONE)
            if isinstance(s, ir.Append) or self.kind(own) != "array":
                # the list now holds the value's object (an array copies it in)
                self.put(env, s.target, (own, reach | env.get(s.value.id, _NONE)[1]))

    def value(self, s, env):
        op = s.op
        base = op.args[0] if op.args else None
        if op.kind == "copy" and isinstance(base, Tup):  # a tuple or list literal holds its entries
            own = self.allocate(env, id(s))
            return own, own.union(
                *(env.get(a.id, _NONE)[1] for a in base if isinstance(a, ir.Name))
            )
        if fresh(op) or not isinstance(base, ir.Name):
            own = self.allocate(env, id(s))
            return own, own
        own, reach = env.get(base.id, _NONE)
        entry = op.key is operator.getitem and not _slices(op.args[1])
        if entry and self.kind(own) == "list":
            return reach - own, reach - own  # one of the entries
        if entry and self.kind(own) == "either":
            return reach, reach
        return own, reach  # a view, or another name for the same object

    def allocate(self, env, site):
        """A new object from ``site``: what was its newest is now one of its older ones."""
        new, old = (site, _NEW), (site, _OLD)
        holders = self.holders.get(site, ())
        work.entries += len(holders)
        for n in holders:
            v = env.get(n)
            if v is not None and (new in v[0] or new in v[1]):
                env[n] = (_aged(v[0], new, old), _aged(v[1], new, old))
        return frozenset({new})

    def put(self, env, name, value):
        env[name] = value
        for objs in value:
            for o in objs:
                if o[1] == _NEW:
                    self.holders.setdefault(o[0], set()).add(name)

    @staticmethod
    def merge(a, b):
        return a if a is b or a == b else (a[0] | b[0], a[1] | b[1])


def _aged(objs, new, old):
    return (objs - {new}) | {old} if new in objs else objs


def _appended(body, flags, keep, dead):
    """id(write) -> {name: lists that may hold the object the name holds there}, for the names
    in ``keep[id(write)]``."""
    return Forward(body, _Appended(), flags, keep, dead).run({})


class _Appended:
    """``xs.append(a)`` puts a's object in xs; rebinding ``a`` takes it out again (the name now
    holds another object)."""

    @staticmethod
    def step(s, held):
        if isinstance(s, ir.Append) and isinstance(s.value, ir.Name):
            held[s.value.id] = held.get(s.value.id, frozenset()) | {s.target}
        elif isinstance(s, ir.Assign) and not s.inplace:
            held.pop(s.target, None)

    merge = staticmethod(operator.or_)


def _slices(index):
    return any(isinstance(p, ir.Slice) for p in index.parts)


def _refuse(src, stmt, msg, hint):
    raise located(
        UnsupportedSyntaxError,
        src,
        stmt.pos,
        f"unsupported in-place write: {msg} (in {src.fn.__qualname__})",
        hint,
    )


def _scatter_of(w):
    """``np.add.at`` (and the other ``ufunc.at``) when the in-place write ``w`` is one."""
    for ufunc, key in UFUNC_AT.items():
        if w.op.key is key:
            return f"np.{ufunc.__name__}.at"
    return None


def _augmented_symbol(w):
    """The operator of ``a op= b`` (its statement's text is ``a op b``)."""
    parts = w.op.text.split(" ")
    return parts[1] if len(parts) == 3 else "+"
