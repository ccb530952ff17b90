"""Assignments: plain, chained, unpacking, augmented, annotated, and into subscripts.

Expects: the walk of ``anf`` and its state. Guarantees: every assignment binds one name (an
``Assign``) or writes one subscript of a local array (a ``SetItem``); unpacking a literal or a
helper's tuple binds its values one by one (their count checked now), any other value is
indexed after a ``check_unpack`` of it (``check_unpack_star`` with a starred target, which gets
a list); every value is evaluated before any target is bound (``a, b = b, a``; ``y[0], y[1] =
y[1], y[0]`` copies the elements it reads, ``check_entry_read``); ``x += v`` is ``x = x + v`` marked ``inplace`` (``aliasing.py`` refuses it where
another name sees ``x``'s array), and so is ``d["k"] += v`` of a local dict's entry; ``a[i] += v``
is a read, an operation and a ``SetItem`` marked ``augmented`` (a list's entry is updated in
place too); a value whose last operation makes a fresh temporary binds the target directly, with
no copy.
"""

from __future__ import annotations

import ast

import libcst as cst
import numpy as np

from .. import fence, ir
from ..ir import Tup
from .syntax import AUGOPS, BINOPS, code_of, op_text, tup

_CHAINS = (cst.Name, cst.Attribute)  # a value read from a name: a guard checks what it holds


class Assignments:
    """The assignment methods of the ``Normalizer``."""

    def _small_Assign(self, s):
        pos = self._pos(s)
        if len(s.targets) > 1:
            value = self._atom(s.value)
            if isinstance(value, ir.Tup) and value.is_list:
                value = self._named(value, pos)  # a = b = [x]: one list, which both names hold
            self._shared_value = True  # (each target reads it: no temporary is renamed)
            try:
                for t in s.targets:
                    self._assign_target(t.target, value, pos)
            finally:
                self._shared_value = False
            return
        target = s.targets[0].target
        # (type(x) is: isinstance with a libcst class, an ABC, costs ten times more when false)
        if type(target) is cst.Name and type(s.value) is cst.Lambda:
            self._local_lambda(target.value, s.value)
        elif type(target) is cst.Name and type(s.value) is cst.Call and self._is_partial(s.value):
            self._local_partial(target.value, s.value)
        elif type(target) is cst.Name and type(s.value) is cst.Dict:
            self._local_dict(target.value, s.value, pos)
        elif isinstance(target, cst.Name):
            if target.value in self.dicts:
                self._refuse_dict_value(target)
            self._assign_expr(self._local(target.value), s.value, pos, user=target.value)
        elif (
            isinstance(target, (cst.Tuple, cst.List))
            and isinstance(s.value, (cst.Tuple, cst.List))
            and not _starred(target)
            and not _starred(s.value)
        ):
            # a, b = b, a: evaluate every right-hand value before binding any
            written = _written_bases(target)
            self._bind_pairwise(target, self._values_pairwise(target, s.value, written), pos)
        else:
            self._assign_target(target, self._atom(s.value), pos)

    def _values_pairwise(self, target, value, written):
        """The right-hand side of ``(p, q), r = (a, b), c`` evaluated to temporaries, nested as
        the targets (``written``: the arrays the targets write into, by subscript)."""
        if not (
            isinstance(target, (cst.Tuple, cst.List))
            and isinstance(value, (cst.Tuple, cst.List))
            and not _starred(target)
            and not _starred(value)
        ):
            if (
                type(value) is cst.Subscript
                and type(value.value) is cst.Name
                and value.value.value in written
                and self._dict_base(value) is None
            ):
                return self._entry_copy(value)
            return self._value_to_temp(value)
        if len(value.elements) != len(target.elements):
            fence.refuse(
                self.src,
                target,
                msg=f"unpacking needs as many targets as values: cannot unpack "
                f"{len(value.elements)} values into {len(target.elements)} targets",
                hint="give as many targets as values",
            )
        return [
            self._values_pairwise(t.value, v.value, written)
            for t, v in zip(target.elements, value.elements)
        ]

    def _entry_copy(self, node):
        """``y[1]`` of ``y[0], y[1] = y[1], y[0]``, read before either write: an element, which
        the swap copies (a row, a view Python would read after the first write, is refused when
        it runs: ``check_entry_read``)."""
        pos = self._pos(node)
        entry = self._atom(node)
        where = f"{pos.filename.rsplit('/', 1)[-1]}:{pos.line}"
        check = self.captures.bind("check_entry_read")
        self._emit(ir.Effect(ir.text(f"{check}({{}}, {where!r})", entry), pos))
        tmp = self.naming.temp()
        text = f"{self.captures.bind('np')}.copy({entry.render()})"
        self._emit(ir.Assign(tmp, ir.Op(np.copy, (entry,), (), text, self._kind(np.copy)), pos))
        return ir.Name(tmp)

    def _bind_pairwise(self, target, values, pos):
        if not isinstance(values, list):
            self._assign_target(target, values, pos)
            return
        for el, v in zip(target.elements, values):
            self._bind_pairwise(el.value, v, pos)

    def _value_to_temp(self, node):
        atom = self._atom(node)
        if isinstance(atom, ir.Name):
            tmp = self.naming.temp()
            self._emit(ir.Assign(tmp, self._copy_op(atom), self._pos(node)))
            return ir.Name(tmp)
        return atom

    def _assign_target(self, target, value, pos):
        """Bind ``target`` (a name, a tuple or list of targets, a subscript) to the atom ``value``."""
        if isinstance(target, cst.Name):
            self._note_length(target.value, value)
            if type(value) is ir.Const:  # sqrt, pi = np.sqrt, np.pi
                self._bind_static(self._local(target.value), value.value)
            self._emit(ir.Assign(self._local(target.value), self._copy_op(value), pos))
        elif isinstance(target, (cst.Tuple, cst.List)):
            self._unpack(target, value, pos)
        elif isinstance(target, cst.Subscript) and self._dict_base(target) is not None:
            self._dict_write(target, value, pos)
        elif isinstance(target, cst.Subscript):
            self._setitem(target, value, pos)
        elif isinstance(target, cst.Attribute) and self._is_local_expr(target.value):
            self._attribute_write(target, value, pos)  # self.n_in = X.shape[1]: objects.py
        else:
            fence.refuse(
                self.src,
                target,
                msg="only names, tuples of names, subscripts and attributes of the function's "
                "objects can be assigned to",
                hint="an attribute of a module-level object cannot be set in a differentiated "
                "function: keep the value in a variable",
            )

    def _unpack(self, target, value, pos):
        """``a, b = value`` and ``a, *rest, z = value`` (``rest`` a list, as Python makes it).
        The values of a literal or a helper's tuple are bound one by one, their count checked
        now; any other value is checked when it runs (``check_unpack``) and read by index."""
        els = target.elements
        stars = [k for k, el in enumerate(els) if isinstance(el, cst.StarredElement)]
        if len(stars) > 1:
            fence.refuse(
                self.src,
                els[stars[1]],
                msg="an unpacking takes at most one starred target",
                hint="a, *rest = values",
            )
        n = len(els)
        before = stars[0] if stars else n
        after = n - before - 1 if stars else 0
        entries = ir.entries(value)
        if entries is not None:
            if len(entries) != n if not stars else len(entries) < n - 1:
                fence.refuse(
                    self.src,
                    target,
                    msg=f"cannot unpack {len(entries)} values into "
                    f"{'at least ' if stars else ''}{n - len(stars)} targets",
                    hint="give as many targets as values (a starred target takes any left over)",
                )
            entries = self._kept_entries(target, entries, pos)
            parts = entries[:before]
            if stars:
                parts.append(tup(entries[before : len(entries) - after], True))
                parts.extend(entries[len(entries) - after :])
            for k, (el, part) in enumerate(zip(els, parts)):
                later = {n for p in parts[k + 1 :] for n in ir.atom_names(p)}
                if not (type(el.value) is cst.Name and self._bind_fresh(el.value, part, later)):
                    self._assign_target(el.value, part, pos)
            return
        value = self._named(value, pos)
        check = "check_unpack" if not stars else "check_unpack_star"
        self._emit(
            ir.Effect(ir.text(f"{self.captures.bind(check)}({{}}, {n - len(stars)})", value), pos)
        )
        for k, el in enumerate(els):
            if k < before:
                op = self._getitem_op(value, ir.Index((ir.Const(k, str(k)),), False))
            elif k > before:
                j = k - n
                op = self._getitem_op(value, ir.Index((ir.Const(j, str(j)),), False))
            else:
                rest = self._getitem_op(
                    value,
                    ir.Index(
                        (
                            ir.Slice(
                                ir.Const(before, str(before)),
                                ir.Const(-after, str(-after)) if after else None,
                                None,
                            ),
                        ),
                        False,
                    ),
                )
                tmp = self.naming.temp()
                self._emit(ir.Assign(tmp, rest, pos))
                fn = self.captures.bind("list")
                op = ir.Op(list, (ir.Name(tmp),), (), f"{fn}({tmp})", self._kind(list))
            self._bind_value(el.value, op, pos)

    def _bind_fresh(self, target, value, later):
        """Bind the name ``target`` to ``value`` by renaming: where ``value`` is a temporary
        assigned in this block, read by nothing after (``later``: names the rest of the
        unpacking reads), and nothing after reads or writes ``target``, its assignment binds
        ``target`` instead (``a, b = f(x)`` reads ``a = np.sin(x)``, not ``a = _t0``)."""
        if (
            not isinstance(value, ir.Name)
            or value.id not in self.naming.temps
            or value.id in later
            or getattr(self, "_shared_value", False)
        ):
            return False
        name = self._local(target.value)
        for k in range(len(self.block) - 1, max(len(self.block) - 16, 0) - 1, -1):
            s = self.block[k]
            if type(s) is ir.Assign and s.target == value.id:
                break
        else:
            return False
        if s.inplace or any(
            value.id in ir.reads(t) or name in ir.reads(t) or name in _writes(t)
            for t in ir.walk(self.block[k + 1 :])
        ):
            return False
        if self._loop_depth and any(value.id in ir.reads(t) for t in ir.walk(self.block[:k])):
            return False  # (read by the next iteration before it is assigned)
        self.block[k] = ir.Assign(name, s.op, s.pos, node=s.node)
        self.deleted.discard(name)
        if value.id in self.lengths:
            self.lengths[name] = self.lengths[value.id]
        return True

    def _kept_entries(self, target, entries, pos):
        """``entries``, those that name a variable the unpacking ``target`` rebinds read into a
        temporary first (``x, y = swap(x, y)``: Python evaluates every value before it binds)."""
        bound = {self._local(n) for n in _bound_names(target)}
        return [
            self._value_to_temp_atom(a, pos) if isinstance(a, ir.Name) and a.id in bound else a
            for a in entries
        ]

    def _value_to_temp_atom(self, atom, pos):
        tmp = self.naming.temp()
        self._emit(ir.Assign(tmp, self._copy_op(atom), pos))
        return ir.Name(tmp)

    def _small_AugAssign(self, s):
        pos = self._pos(s)
        op_type = AUGOPS.get(type(s.operator))
        if op_type is None:
            fence.refuse(
                self.src,
                s,
                msg=f"the augmented assignment {op_text(s.operator)} is not supported",
                hint="write it out with an operator sourcegrad supports, or use the numpy function",
            )
        fn, sym = BINOPS[op_type]
        if isinstance(s.target, cst.Name):
            left = ir.Name(self._local(s.target.value))
            right = self._atom(s.value)
            self._emit(
                ir.Assign(left.id, self._binop(fn, sym, left, right, s), pos, inplace=True, node=s)
            )
        elif isinstance(s.target, cst.Subscript) and self._dict_base(s.target) is not None:
            name = self._dict_entry(s.target, read=True)
            right = self._atom(s.value)
            self._emit(  # numpy updates the entry's array in place, as ``x += v`` does
                ir.Assign(
                    name, self._binop(fn, sym, ir.Name(name), right, s), pos, inplace=True, node=s
                )
            )
        elif isinstance(s.target, cst.Subscript):
            base, index = self._subscript_parts(s.target)
            right = self._atom(s.value)
            cur = self.naming.temp()
            self._emit(ir.Assign(cur, self._getitem_op(base, index), pos))
            new = self.naming.temp()
            self._emit(ir.Assign(new, self._binop(fn, sym, ir.Name(cur), right, s), pos))
            self._emit(ir.SetItem(base.id, index, ir.Name(new), pos, augmented=sym))
        elif isinstance(s.target, cst.Attribute) and self._is_local_expr(s.target.value):
            # self.t += 1: the attribute read, the operation, the attribute written (a new value:
            # an array the object holds is not updated in place)
            obj = self._named_atom(self._atom(s.target.value), s)
            current = self._atom_of(self._field_read(s.target, obj, s.target.attr.value), s)
            k = self._known(current)
            if k is not None and hasattr(k.value, "shape") and hasattr(k.value, "dtype"):
                fence.refuse(
                    self.src,
                    s,
                    msg=f"{code_of(s.target)} {op_text(s.operator)} ... updates in place the array "
                    "the object holds, which whoever else holds that array would see change too",
                    hint=f"write {code_of(s.target)} = {code_of(s.target)} {sym} ... (a new array)",
                )
            right = self._atom(s.value)
            new = self._atom_of(self._binop(fn, sym, current, right, s), s)
            self._attribute_write(s.target, new, pos, obj=obj)
        else:
            fence.refuse(
                self.src,
                s.target,
                msg="only names, subscripts and attributes of the function's objects can be "
                "updated in place",
            )

    def _setitem(self, target, value, pos):
        base, index = self._subscript_parts(target)
        # (a literal written is one value: its entries' adjoints come back through it)
        self._emit(ir.SetItem(base.id, index, self._named(value, pos), pos))

    def _subscript_parts(self, node):
        if isinstance(node.value, cst.Subscript):
            inner, outer = node.value, node
            both = ", ".join(
                code_of(e.slice) if not isinstance(e.slice, cst.Index) else code_of(e.slice.value)
                for e in list(inner.slice) + list(outer.slice)
            )
            fence.refuse(
                self.src,
                node,
                kind="Subscript",
                msg="chained subscripts (a[i][j] = v) cannot be assigned into",
                hint=f"index once: {code_of(inner.value)}[{both}] = ...",
            )
        if isinstance(node.value, cst.Name) and self._local(node.value.value) in self.made_dicts:
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f"the dict {node.value.value!r} a dict comprehension made cannot be written "
                "into",
                hint="give every entry in the comprehension, or build the dict with string "
                'keys written out: d = {"a": x}; d["b"] = v',
            )
        if not isinstance(node.value, cst.Name) or node.value.value not in self.locals:
            fence.refuse(
                self.src,
                node,
                kind="Subscript",
                msg="only an array held in a local variable can be assigned into",
                hint="make a local copy first: a = np.copy(...); a[i] = v",
            )
        return ir.Name(self._local(node.value.value)), self._index(node)

    def _small_AnnAssign(self, s):
        if s.value is not None and isinstance(s.target, cst.Attribute):
            self._assign_target(s.target, self._atom(s.value), self._pos(s))
            return
        if s.value is None or not isinstance(s.target, cst.Name):
            fence.refuse(
                self.src,
                s,
                msg="an annotation without a value is not supported",
                hint="give it a value (y: float = ...) or remove the line",
            )
        self._assign_expr(self._local(s.target.value), s.value, self._pos(s))

    def _note_length(self, user, value):
        """Remember the number of entries of the literal ``value`` bound to the local ``user``
        where it is the one value the name is ever given and its entries are never added or
        removed in place: ``f(*args)`` then passes them one by one (``_known_entries``)."""
        known = ir.entries(value)
        if known is None or self.bind_counts.get(user, 0) != 1 or user in self.params:
            return
        if getattr(self, "_resized", None) is None:
            self._resized = _resized_in_place(self.src.ast_fn)
        if user not in self._resized:
            self.lengths[self._local(user)] = len(known)

    def _assign_expr(self, name, value, pos, user=None):
        """``name = value`` where value's last operation binds ``name`` directly (no extra copy).
        ``user``: the name as the function writes it (``name`` is as the generated code does)."""
        if type(value) is cst.IfExp:
            self._ifexp(name, value, pos)
            return
        if type(value) is cst.DictComp:
            self.made_dicts.add(name)  # read by key, never written into (``_subscript_parts``)
        if type(value) is cst.GeneratorExp:
            fence.refuse(
                self.src,
                value,
                msg="a generator expression kept in a variable: Python runs it as it is consumed, "
                "and a second use finds it empty, but here it would be a list made at once",
                hint="consume it where it is made (sum(v * v for v in xs)), or make a list "
                "([v * v for v in xs]) to use it more than once",
            )
        if type(value) is cst.Call and self._freeze(name, value):
            return  # d = norm(loc, scale): a frozen distribution, for d.logpdf(x)
        op = self._op(value)
        if user is not None:
            self._note_length(user, op)
        if type(op) is ir.Const:  # relu = F.apply, la = np.linalg: read as that object
            self._bind_static(name, op.value, value if type(value) in _CHAINS else None)
        last = self.block[-1] if self.block else None
        if (
            isinstance(op, ir.Name)
            and op.id in self.naming.temps
            and isinstance(last, ir.Assign)
            and last.target == op.id
        ):
            # h = helper(...) where the helper's result is a fresh temporary: bind h directly
            self.block[-1] = ir.Assign(name, last.op, last.pos)
            known = self.objects.known
            k = known.pop(op.id, None)
            if k is None:
                known.pop(name, None)
            else:
                known[name] = k
            return
        if isinstance(op, (ir.Name, ir.Const, Tup)):
            op = self._copy_op(op)
        self._emit(ir.Assign(name, op, pos, node=value))

    def _bind_value(self, target, op, pos):
        """Bind ``target`` (a name, or a tuple to unpack) to the value of ``op``."""
        if isinstance(op, (ir.Name, ir.Const, Tup)):
            self._assign_target(target, op, pos)
        elif isinstance(target, cst.Name):
            self._emit(ir.Assign(self._local(target.value), op, pos))
        else:
            tmp = self.naming.temp()
            self._emit(ir.Assign(tmp, op, pos))
            self._assign_target(target, ir.Name(tmp), pos)

    def _bind_elem(self, target, seq, k, pos):
        """Bind ``target`` to ``seq[k]`` (a loop's element)."""
        self._bind_value(target, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos)


def _starred(node):
    """Has the tuple or list ``node`` a starred entry (``a, *b``)?"""
    return any(isinstance(el, cst.StarredElement) for el in node.elements)


def _writes(s):
    """The names statement ``s`` binds or writes into."""
    if type(s) in (ir.Assign, ir.SetItem, ir.Append, ir.For):
        return {s.target}
    return set()


def _written_bases(target):
    """The local names a target writes into by subscript (``y`` of ``y[0], y[1] = ...``)."""
    if type(target) is cst.Subscript and type(target.value) is cst.Name:
        return {target.value.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_written_bases(el.value) for el in target.elements))
    return set()


def _bound_names(target):
    """The names an assignment target binds (a subscript's base is written into, not bound)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _bound_names(el.value)]
    return []


_RESIZING = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})


def _resized_in_place(afn):
    """Names whose value gains or loses entries in place somewhere in the ``ast`` function
    ``afn`` (``xs.append(v)``, ``del xs[0]``, ``xs[1:] = ...``)."""
    out = set()
    for node in ast.walk(afn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _RESIZING
            and isinstance(node.func.value, ast.Name)
        ):
            out.add(node.func.value.id)
        targets = node.targets if isinstance(node, (ast.Delete, ast.Assign)) else []
        for t in targets:
            if (
                isinstance(t, ast.Subscript)
                and isinstance(t.value, ast.Name)
                and (isinstance(node, ast.Delete) or isinstance(t.slice, ast.Slice))
            ):
                out.add(t.value.id)
    return out
