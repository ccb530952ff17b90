"""Refuse in-place writes that the adjoint could not see.

The backward treats ``a[i] = v`` and ``xs.append(v)`` as producing a new value of ``a``/``xs``.
That is sound only if no other variable shares the written memory: a parameter (the caller's
array), a view (``v = a[0:2]``, ``a.T``, ``a.reshape(...)``) or a second name (``b = a``) would
see the write in the forward while its adjoint never hears of it -- a silently wrong gradient.

Expects: normalized IR. Guarantees: every written variable is defined only by operations that
return fresh memory (allocations, arithmetic, reductions, copies), and is never the source of an
alias that a user variable holds. Otherwise ``UnsupportedSyntaxError``, located at the write,
with the fix (``.copy()``, or a new array in place of the update).

A list or tuple is new, but its entries are the arrays put in it, not copies: ``[w, b]``,
``hs + [h]``, ``[h] * 2``, ``list(t)``, ``xs.copy()``, a comprehension over one, all hold the
very arrays their operands hold (a list of an array's rows, views of it). So an array read back
from one (``p = ps[i]``, ``for p in (w, b)``, ``max(xs)``) is one of those arrays, and
``ps[i] += v`` updates the entry's array in place as well as the list. Such a write is refused
where another name read after it may hold that array, where it may be an argument's, and, for
``ps[i] += v``, where the list may hold the one array at two entries (``[np.zeros(3)] * 3``);
a list of distinct new arrays (``[np.zeros(3) for _ in range(3)]``) may be updated entry by
entry. The rule is decided in one place: the points-to domain (``_PointsTo``) says what each
name may be and reach, and ``check`` refuses a write whose memory another live name reaches.

Cost: linear in the program (``dataflow.Forward``, ``dataflow.liveness``); ``work`` counts the
steps.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np
from sourcegrad.runtime import (
    concat_sequences,
    max_of_sequence,
    min_of_sequence,
    repeat_sequence,
    stack_entries,
    stop_gradient,
)

from sourcegrad.errors import UnsupportedSyntaxError
from sourcegrad.runtime.structures import item_or_missing, read_or_missing

from . import ir
from .dataflow import Forward, exit_flags, liveness, work
from .fence import located
from .ir import ATTRIBUTE_READ, Tup
from .rules import FRESH, IN_PLACE, NONDIFF, UFUNC_AT
from .templates import Template


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
    every = [s for s in ir.walk(fn.body) if _is_write(s)]
    writes = [
        s
        for s in every
        if s.target in varied or (s.target in params and not isinstance(s, ir.Assign))
    ]
    # a write that changes no gradient still must not change a value from outside the function
    checked = {id(s) for s in writes}
    outside = [s for s in every if id(s) not in checked] if _reads_outside(fn) else []
    if not writes and not outside:
        return
    flags = exit_flags(fn)
    views = _views(fn)
    live_after, dead = liveness(fn.body, {id(w) for w in writes})
    domain = _PointsTo(fn)
    keep = {id(w): live_after.get(id(w), set()) | {w.target} for w in writes}
    keep.update((id(w), {w.target}) for w in outside)
    objects = _points_to(fn, domain, flags, keep, dead)
    in_lists = _appended(fn.body, flags, {id(w): {w.target} for w in writes}, dead)
    for w in outside:
        if not _owned(w, naming):
            _refuse_outer_write(src, w, objects.get(id(w), {}).get(w.target, _NONE)[0])
    for w in writes:
        env = objects.get(id(w), {})  # (none: no way reaches the write)
        live = live_after.get(id(w), set())
        written = env.get(w.target, _NONE)[0]  # the write changes the memory (or the list) it is
        if not _owned(w, naming):
            _refuse_argument_write(src, w, written)
            _refuse_outer_write(src, w, written)
        if isinstance(w, ir.SetItem) and w.augmented:  # xs[i] += v
            _refuse_entry_update(src, w, domain, env, live)
        if not isinstance(w, ir.Append):
            _refuse_listed(src, w, in_lists.get(id(w), {}), live)
        _refuse_shared(src, w, naming, domain, env, written, live, views)


def _library(key):
    """Is ``key`` numpy's, scipy's, Python's or sourcegrad's (whose results are new memory or a
    view of their first operand), rather than a user's (a ``Function`` whose forward may return
    any of its inputs, a function with a registered rule)?"""
    if isinstance(key, Template):  # a Function's forward, a call of a gradient
        return False
    top = (ir.module_of(key) or ir.module_of(type(key))).partition(".")[0]
    return top in ("numpy", "scipy", "sourcegrad", "builtins", "operator", "math", "_operator")


def sharing_classes(fn):
    """name -> its class: names that may share memory (or hold one another, a list its arrays)
    are in one class, decided for the whole function at once (flow-insensitive, so a class may
    hold names that never share: it errs towards sharing). Linear in the program. The reverse
    pass asks it of an in-place write ``a[i] = v``: a view of ``a`` made before it (``t = a.T``)
    that the backward reads sees the write too (``reverse_saves``)."""
    parent = {}

    def find(n):
        root = n
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(n, n) != root:  # (path compression)
            parent[n], n = root, parent[n]
        return root

    def union(a, names):
        for b in names:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra

    stmts = ir.walk(fn.body)
    lists = {s.target for s in stmts if isinstance(s, ir.Append)} | {
        s.target for s in stmts if isinstance(s, ir.Assign) and _makes_container(s.op)
    }
    for s in stmts:
        if isinstance(s, ir.Assign) and (not fresh(s.op) or _makes_container(s.op)):
            union(s.target, s.op.arg_names())
        elif isinstance(s, ir.For):
            union(s.target, ir.reads(s))
        elif isinstance(s, ir.Append) or (isinstance(s, ir.SetItem) and s.target in lists):
            union(s.target, ir.atom_names(s.value))  # a list holds the value (an array copies)
    return find


def _owned(w, naming):
    """Is ``w`` an append into a list an object holds, which the function's reads of that
    attribute read (``normalize/objects.py``'s shadows): the object's own change, made as Python
    makes it, which the gradient sees?"""
    return isinstance(w, ir.Append) and w.target in naming.shadows


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


def _refuse_outer_write(src, w, written):
    """Refuse ``w`` where it writes into memory a value from outside the function may hold: the
    function reads that value as a constant, so neither its later reads nor the gradient would
    see the write (and the caller's value would change)."""
    for outside in sorted(o[1] for o in written if o[0] == _OUTER):
        _refuse(
            src,
            w,
            f"{w.target!r} may share memory with {outside!r}, a value from outside the function (a "
            "module-level or closed-over array): writing into it would change that value, unseen "
            "by the gradient",
            f"work on a copy: {w.target} = np.copy({outside}) (or write {w.target} = "
            f"{w.target} + ... to make a new array)",
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


def _refuse_entry_update(src, w, domain, env, live):
    """Refuse ``xs[i] op= v`` of a list where it would update an array that another name read
    after it, an argument, or another entry of the list may hold (Python updates the entry's
    array in place, then puts it back)."""
    own, reach = env.get(w.target, _NONE)
    kind = domain.kind(own)
    if kind == "array":
        return  # an array's element: the write into the array itself, checked as any other
    held = (reach - own if kind == "list" else reach) - _SHARED
    where, sym = f"{w.target}[{w.index.render()}]", w.augmented
    new = f"write {where} = {where} {sym} ... (a new array) instead of updating it in place"
    for p in sorted(o[1] for o in held if o[0] == _ARG):
        _refuse(
            src,
            w,
            f"{where} {sym}= ... updates in place the array {w.target!r} holds there, and "
            f"{w.target!r} may hold the argument {p!r} itself (not a copy): it would change the "
            "caller's data",
            f"{new}, or put a copy in the list (np.copy({p}))",
        )
    for n in sorted(live - {w.target}):
        if env.get(n, _NONE)[1] & held:
            _refuse(
                src,
                w,
                f"{where} {sym}= ... updates in place the array {w.target!r} holds there, and {n!r} "
                "may hold that array too (the same array, a view of it, or a list holding it) and "
                "is read after this write, so it would change too, unseen by the gradient",
                f"{new}, or put copies in the list where it is made",
            )
    if _SHARED <= reach and w.target in live:
        _refuse(
            src,
            w,
            f"{where} {sym}= ... updates in place the array {w.target!r} holds there, and the list "
            "may hold that one array at several entries ([a] * n, or the same array put in "
            "twice), which would all change",
            f"{new}, or build the list of distinct arrays: [np.zeros(...) for _ in range(n)]",
        )


def _views(fn):
    """name -> the ``base[index]`` text of each name bound to an item or slice of another name."""
    out = {}
    for s in ir.walk(fn.body):
        if (
            isinstance(s, ir.Assign)
            and s.op.key is operator.getitem
            and isinstance(s.op.args[0], ir.Name)
        ):
            out.setdefault(s.target, {})[s.op.args[0].id] = s.op.text
    return out


def _refuse_shared(src, w, naming, domain, env, written, live, views):
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
        if a in domain.entries_read or domain.kind(env.get(n, _NONE)[0]) == "list":
            _refuse(
                src,
                w,
                f"{n!r} may share memory with {a!r} (a list or tuple holds the same array, not a "
                "copy: an entry read from it, or a loop over it, is that array) and is read after "
                "this write, so it would change too, unseen by the gradient",
                f"write {a} = {a} + ... (a new array) instead of updating it in place, and build "
                "a new list of the new arrays (ps = [p * 0.9 for p in ps]; w, b = ps), or put "
                "copies in the list (np.copy(...))",
            )
        made = views.get(a, {}).get(n)
        if made is not None and domain.kind(env.get(n, _NONE)[0]) == "array":
            scatter = _scatter_of(w) if isinstance(w, ir.Assign) else None
            into = f"{scatter}({n}, ...)" if scatter else f"{made} += ..., {made} = ..."
            _refuse(
                src,
                w,
                f"{n!r} may share memory with {a!r} ({a} = {made}, maybe a view of it) and is "
                f"read after this write: through a view, numpy would change {n!r} too, unseen "
                "by the gradient (a write through a view is followed into its array where the "
                "view's index is integer literals, loop indices and slices and leaves an axis, "
                "and the write follows it in the same block or in a loop body that does not "
                "rebind it)",
                f"write into {n!r} itself ({into}), or take a copy if {n!r} must not change: "
                f"{a} = {made}.copy()",
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
_OUTER = "outside"  # (_OUTER, text): a mutable value the function reads from outside it
_NONE = (frozenset(), frozenset())
# reached by a list that may hold one array at two entries (``[a] * 3``, ``[a, a]``, ``xs + xs``)
_SHARED = frozenset({("a list holding one array twice", None)})

# the result is a new list or tuple whose entries are its operands' entries (an array's: rows)
_CONTAINERS = {list, tuple, sorted, builtins.reversed, concat_sequences, repeat_sequence}
# reads of what an object's attribute (a dict's entry) holds, where the function writes it
_SHADOW_READS = {read_or_missing, item_or_missing}
# the result is one of its operand's entries (of an array: an element, a view)
_ENTRY_OF = {operator.getitem, max_of_sequence, min_of_sequence}


def _member(key, group):
    try:
        return key in group
    except TypeError:
        return False


def _points_to(fn, domain, flags, keep, dead):
    """id(write) -> {name: (own, reach)} before the write, for the names in ``keep[id(write)]``."""
    arg = {p: frozenset({(_ARG, p)}) for p in fn.params}
    env = {p: (objs, objs) for p, objs in arg.items()}
    return Forward(fn.body, domain, flags, keep, dead).run(env)


class _PointsTo:
    """The objects each name may *be* (``own``: whose memory, or list, a write through it
    changes) and those it may reach (``reach``: ``own`` and, for a tuple or list, the objects its
    entries may reach).

    An object is an argument (``(_ARG, name)``) or an allocation site; each site has two abstract
    objects, the one it made last (``_NEW``) and all it made before (``_OLD``), so a buffer
    allocated afresh in every iteration of a loop is told apart from the previous iteration's
    (recency abstraction). A view or another name is what its base is; an entry read from a
    tuple or list is one of the objects the list reaches besides itself. A list or tuple made from
    others (a literal, ``+``, ``*``, ``list(...)``, ``xs.copy()``: ``_CONTAINERS``) is new, and
    reaches what their entries reach (an array's entries are its rows: the array itself); one
    that may hold an array at two entries also reaches ``_SHARED``.

    ``step`` updates a state in place. ``holders`` remembers, for each site, every name that was
    ever given its newest object, so that an allocation ages those names only instead of every
    name in the state."""

    def __init__(self, fn):
        self.literals = set()  # the sites that make lists or tuples
        self.stacked = {}  # np.asarray(xs) the sequences pass made of a list xs: its temp -> xs
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Assign):
                if _makes_container(s.op):
                    self.literals.add(id(s))
                elif s.op.key is stack_entries:
                    self.stacked[s.target] = s.op.args[0]
        self.holders = {}
        self.entries_read = set()  # names given an entry of a list or tuple

    def kind(self, own):
        """'list' if ``own`` holds only tuple/list literals, 'array' if none (nor arguments)."""
        lits = sum(1 for o in own if o[0] in self.literals)
        if own and lits == len(own):
            return "list"
        return "array" if not lits and not any(o[0] in (_ARG, _OUTER) for o in own) else "either"

    def step(self, s, env):
        if isinstance(s, ir.Assign) and not s.inplace:
            self.put(env, s.target, self.value(s, env))
        elif isinstance(s, ir.Assign) and id(s) in self.literals:
            own, reach = env.get(s.target, _NONE)
            if self.kind(own) != "array":  # xs += ys, xs *= 2: xs itself holds more entries
                self.put(env, s.target, (own, reach | self.held(s.op, env)))
        elif isinstance(s, (ir.Append, ir.SetItem)):
            own, reach = env.get(s.target, _NONE)
            if isinstance(s, ir.Append) or self.kind(own) != "array":
                # the list now holds the value's object (an array copies it in)
                new = self.reach(s.value, env)
                if new & (reach - own) - _SHARED:
                    new = new | _SHARED  # it held that array already
                if not new <= reach:
                    self.put(env, s.target, (own, reach | new))

    def value(self, s, env):
        op = s.op
        base = op.args[0] if op.args else None
        receiver = self.copied_list(op, env)
        if receiver is not None:  # xs.copy() of a list: a new list of the same arrays
            self.literals.add(id(s))
            own = self.allocate(env, id(s))
            return own, own | self.entries(receiver, env)
        if id(s) in self.literals:  # a list or tuple holds the entries it is made of
            own = self.allocate(env, id(s))
            return own, own | self.held(op, env)
        if op.key in _SHADOW_READS and isinstance(base, ir.Name):
            # what an object's attribute holds, which the function writes: an object of its own
            # (an argument's or an outside one's still), one per location (the guard checks the
            # objects, and the lists appended to, are distinct), not the object itself
            own = frozenset(o[:2] + (s.target,) for o in env.get(base.id, _NONE)[0])
            return own, own
        outer = _outer(base)
        if outer and not fresh(op):  # s = S, S[0:2], S.T of a module-level or closed-over array
            return outer, outer
        if _member(op.key, _ENTRY_OF) and not (op.key is operator.getitem and _slices(op.args[1])):
            if isinstance(base, Tup):  # (w, b)[i], max([a, b])
                self.entries_read.add(s.target)
                e = self.entries(base, env)
                return e - _SHARED, e
            if isinstance(base, ir.Name):
                own, reach = env.get(base.id, _NONE)
                kind = self.kind(own)
                if kind != "array":
                    self.entries_read.add(s.target)
                    e = reach - own if kind == "list" else reach
                    return e - _SHARED, e  # one of the entries
                return own, reach  # an array's element or a view of it
        if fresh(op) or op.key is stack_entries or not isinstance(base, ir.Name):
            own = self.allocate(env, id(s))  # (np.asarray of a list: a new array)
            return own, own
        if not _library(op.key):  # a Function's forward, a user's rule: any operand, or new
            own = reach = self.allocate(env, id(s))
            for n in op.arg_names():
                o, r = env.get(n, _NONE)
                own, reach = own | o, reach | r
            return own, reach
        return env.get(base.id, _NONE)  # a view, or another name for the same object

    def copied_list(self, op, env):
        """The list ``xs`` of ``xs.copy()`` (``list.copy``, not ``ndarray.copy``), or None."""
        if op.key is not np.copy or not op.text.endswith(".copy()") or len(op.args) != 1:
            return None
        a = op.args[0]
        if not isinstance(a, ir.Name):
            return None
        if a.id in self.stacked:
            return self.stacked[a.id]
        return a if self.kind(env.get(a.id, _NONE)[0]) == "list" else None

    def held(self, op, env):
        """What the entries of the list or tuple ``op`` makes may reach (with ``_SHARED`` where
        two of them may be one array)."""
        if op.kind == "copy":
            parts = [self.reach(a, env) for a in op.args[0]]  # a literal: its entries
        elif op.key is repeat_sequence:
            parts = [self.entries(op.args[0], env)] * 2  # one entry repeated
        elif op.key is operator.getitem:
            parts = [self.entries(op.args[0], env)]  # a slice of a literal
        else:
            parts = [self.entries(a, env) for a in op.args]
        out = frozenset()
        for part in parts:
            if part & out - _SHARED:
                out |= _SHARED
            out |= part
        return out

    def entries(self, atom, env):
        """What the entries of ``atom`` may reach: a literal's entries', a list's, or (an array or
        an argument) the rows of the array itself."""
        if isinstance(atom, Tup):
            return frozenset().union(*(self.reach(a, env) for a in atom))
        if isinstance(atom, ir.Name):
            own, reach = env.get(atom.id, _NONE)
            return reach - own if self.kind(own) == "list" else reach
        return frozenset()

    def reach(self, atom, env):
        """What the value ``atom`` may reach (a literal written in place: its entries)."""
        if isinstance(atom, ir.Name):
            return env.get(atom.id, _NONE)[1]
        return self.entries(atom, env) if isinstance(atom, Tup) else _outer(atom)

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


def _reads_outside(fn):
    """Does ``fn`` read a mutable value from outside it (``_outer``)?"""
    return any(_outer(a) for s in ir.walk(fn.body) if isinstance(s, ir.Assign) for a in s.op.args)


def _outer(atom):
    """The outside object a captured value is (a module-level or closed-over array, list or
    other mutable object, which ``normalize`` reads as a constant), or nothing."""
    if isinstance(atom, ir.Const) and not isinstance(
        atom.value, (int, float, complex, bool, str, bytes, tuple, frozenset, type(None))
    ):
        return frozenset({(_OUTER, atom.text)})
    return frozenset()


def _makes_container(op):
    """Does ``op`` make a list or tuple of its operands' entries (not xs.copy(): its receiver
    decides)?"""
    if op.kind == "copy":
        return isinstance(op.args[0], Tup)
    if op.key is operator.getitem:
        return isinstance(op.args[0], Tup) and _slices(op.args[1])
    return _member(op.key, _CONTAINERS)


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
    for fn, key in IN_PLACE.items():
        if w.op.key is key:
            return f"np.{fn.__name__}"
    return None


def _augmented_symbol(w):
    """The operator of ``a op= b`` (its statement's text is ``a op b``)."""
    parts = w.op.text.split(" ")
    return parts[1] if len(parts) == 3 else "+"
