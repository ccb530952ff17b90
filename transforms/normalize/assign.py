"""Assignments: plain, chained, unpacking, augmented, annotated, and into subscripts.

Expects: the walk of ``anf`` and its state. Guarantees: every assignment binds one name (an
``Assign``) or writes one subscript of a local array (a ``SetItem``); tuple unpacking is
indexing after a ``check_unpack`` of the value (``a, b = b, a`` evaluates every value before it
binds any); ``x += v`` is ``x = x + v`` marked ``inplace`` (``aliasing.py`` refuses it where
another name sees ``x``'s array), and so is ``d["k"] += v`` of a local dict's entry; ``a[i] += v``
is a read, an operation and a ``SetItem`` marked ``augmented`` (a list's entry is updated in
place too); a value whose last operation makes a fresh temporary binds the target directly, with
no copy.
"""

from __future__ import annotations

import libcst as cst

from .. import fence, ir
from ..ir import Tup
from .syntax import AUGOPS, BINOPS, code_of, op_text


class Assignments:
    """The assignment methods of the ``Normalizer``."""

    def _small_Assign(self, s):
        pos = self._pos(s)
        if len(s.targets) > 1:
            value = self._atom(s.value)
            for t in s.targets:
                self._assign_target(t.target, value, pos)
            return
        target = s.targets[0].target
        # (type(x) is: isinstance with a libcst class, an ABC, costs ten times more when false)
        if type(target) is cst.Name and type(s.value) is cst.Lambda:
            self._local_lambda(target.value, s.value)
        elif type(target) is cst.Name and type(s.value) is cst.Dict:
            self._local_dict(target.value, s.value, pos)
        elif isinstance(target, cst.Name):
            if target.value in self.dicts:
                self._refuse_dict_value(target)
            self._assign_expr(self._local(target.value), s.value, pos)
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(
            s.value, (cst.Tuple, cst.List)
        ):
            # a, b = b, a: evaluate every right-hand value before binding any
            self._bind_pairwise(target, self._values_pairwise(target, s.value), pos)
        else:
            self._assign_target(target, self._atom(s.value), pos)

    def _values_pairwise(self, target, value):
        """The right-hand side of ``(p, q), r = (a, b), c`` evaluated to temporaries, nested as the targets."""
        if not (
            isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))
        ):
            return self._value_to_temp(value)
        self._no_starred(target)
        if len(value.elements) != len(target.elements):
            fence.refuse(
                self.src,
                target,
                msg=f"unpacking needs as many targets as values: cannot unpack "
                f"{len(value.elements)} values into {len(target.elements)} targets",
                hint="give as many targets as values",
            )
        return [
            self._values_pairwise(t.value, v.value) for t, v in zip(target.elements, value.elements)
        ]

    def _bind_pairwise(self, target, values, pos):
        if not isinstance(values, list):
            self._assign_target(target, values, pos)
            return
        for el, v in zip(target.elements, values):
            self._bind_pairwise(el.value, v, pos)

    def _no_starred(self, target):
        for el in target.elements:
            if isinstance(el, cst.StarredElement) or isinstance(el.value, cst.StarredElement):
                fence.refuse(
                    self.src,
                    el,
                    msg="starred unpacking (a, *b = ...) is not supported",
                    hint="index the values instead: a, b = x[0], x[1:]",
                )

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
            self._emit(ir.Assign(self._local(target.value), self._copy_op(value), pos))
        elif isinstance(target, (cst.Tuple, cst.List)):
            self._no_starred(target)
            value = self._named(value, pos)
            self._emit(
                ir.Effect(
                    ir.text(
                        f"{self.captures.bind('check_unpack')}({{}}, {len(target.elements)})", value
                    ),
                    pos,
                )
            )
            for k, el in enumerate(target.elements):
                index = ir.Index((ir.Const(k, str(k)),), False)
                tmp_target = el.value
                if isinstance(tmp_target, cst.Name):
                    self._emit(
                        ir.Assign(
                            self._local(tmp_target.value), self._getitem_op(value, index), pos
                        )
                    )
                else:
                    tmp = self.naming.temp()
                    self._emit(ir.Assign(tmp, self._getitem_op(value, index), pos))
                    self._assign_target(tmp_target, ir.Name(tmp), pos)
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
        self._emit(ir.SetItem(base.id, index, value, pos))

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

    def _assign_expr(self, name, value, pos):
        """``name = value`` where value's last operation binds ``name`` directly (no extra copy)."""
        if type(value) is cst.IfExp:
            self._ifexp(name, value, pos)
            return
        op = self._op(value)
        if (
            isinstance(op, ir.Const)
            and callable(op.value)
            and self.bind_counts.get(name, 0) == 1
            and not self._loop_depth
        ):
            self.static_locals[name] = op.value
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
        if isinstance(target, cst.Name):
            self._emit(ir.Assign(self._local(target.value), op, pos))
        else:
            tmp = self.naming.temp()
            self._emit(ir.Assign(tmp, op, pos))
            self._assign_target(target, ir.Name(tmp), pos)

    def _bind_elem(self, target, seq, k, pos):
        """Bind ``target`` to ``seq[k]`` (a loop's element)."""
        self._bind_value(target, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos)
