"""Loops and comprehensions, desugared: every loop is ``for <index> in range(...)`` or ``while``.

Expects: the walk of ``anf`` and its state. Guarantees: ``for`` over a range with bounds known
now (literals or module constants) and at most ``options["unroll"]`` trips, and no exit in its
body, is unrolled, as long as the loops unrolled around it repeat its body at most
``UNROLL_BUDGET`` times in all (nested loops multiply: twelve nested ``range(2)`` would be 4,096
copies); any other ``for`` is an ``ir.For`` over a range whose body first binds the
user's targets by index: over a sequence, ``enumerate``, ``zip``, ``reversed``, a dict's keys,
values or items (``dicts``), or ``sourcegrad.checkpointed(range(...))`` (the loop's
``checkpoint``); a comprehension is a list built by such a loop, its names renamed so they stay
inside it. What the loop reads by index is decided in one place (``_loop_operand``): evaluated
once before the loop, as Python evaluates an iterable (a snapshot where the loop's targets or body
rebind a name it reads; a comprehension's iterable reads the names as they were before its own
targets bind), and a sequence whose k-th entry is what iterating it gives k-th (a captured dict,
set or view is made the list its iteration gives when the loop starts; a local value is checked
then, ``check_sequence``).
"""

from __future__ import annotations

import builtins
from collections import abc

import libcst as cst
from sourcegrad.runtime import checkpointed, dict_from

from .. import fence, ir
from .syntax import assigned_in, find_node, indexes_by, names_read, target_names, tup


# the most copies of one statement that nested unrolled loops may make (a loop past it is a loop)
UNROLL_BUDGET = 64


class Loops:
    """The loop and comprehension methods of the ``Normalizer``."""

    _unrolled = 1  # copies the unrolled loops around the statement being lowered make of it

    def _stmt_For(self, s):
        """``for``: unrolled, or an ``ir.For`` over a range (``_loop_iter``)."""
        pos = self._pos(s)
        generator = self._generator_of(s.iter)
        if generator is not None:  # for xb in batches(X, 32): the generator, inlined
            if s.orelse is not None:
                fence.refuse(
                    self.src,
                    s.orelse,
                    msg="for/else over a generator is not supported",
                    hint="use a flag variable and an if after the loop",
                )
            self._generator_loop(s, generator)
            return
        if s.asynchronous is not None:
            fence.refuse(self.src, s, kind="AsyncFunctionDef")
        found = self._namespace_iteration(s.iter) if self.dicts else None
        if found is not None:  # over a local dict: once per key, known now (namespaces.py)
            self._unrolled_namespace_loop(s, found, pos, lambda: self._stmts(s.body.body))
            self._loop_else(s, None, pos)
            return
        s, checkpoint = self._checkpoint_marker(s)
        trips = self._static_trips(s) if checkpoint is None else None
        if trips is not None:  # (a loop with a break is never unrolled)
            self._unroll(s, trips, pos)
            self._loop_else(s, None, pos)
            return
        if checkpoint is None and self._object_loop(s):
            # for layer in self.layers: one body per entry (objects.py); it has no break
            self._loop_else(s, None, pos)
            return
        broke = self._loop_else_flag(s, pos)
        with self._in_user_loop(s):
            range_text, target, prologue = self._loop_iter(s)
            with self._in_loop(broke), self._collecting() as body:
                for build in prologue:
                    build()
                self._statements(s.body)
        self._emit(ir.For(target, range_text, tuple(body), pos, checkpoint))
        self._loop_else(s, broke, pos)

    def _checkpoint_marker(self, s):
        """``for t in sourcegrad.checkpointed(range(...), snapshots=n):``: the loop over the range
        and its checkpoint (n, or True for the default); ``(s, None)`` for any other loop."""
        it = s.iter
        if not (isinstance(it, cst.Call) and self._static_callee(it.func) is checkpointed):
            return s, None
        usage = (
            "for t in sourcegrad.checkpointed(range(steps)):  or  ...(range(steps), snapshots=20)"
        )
        positional = [a for a in it.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in it.args if a.keyword is not None}
        if len(positional) != 1 or positional[0].star or set(keywords) - {"snapshots"}:
            fence.refuse(
                self.src,
                it,
                msg="sourcegrad.checkpointed takes a range and, optionally, snapshots=n",
                hint=usage,
            )
        inner = positional[0].value
        if not (isinstance(inner, cst.Call) and self._static_callee(inner.func) is builtins.range):
            fence.refuse(
                self.src,
                inner,
                msg="sourcegrad.checkpointed marks a loop over range(...) only",
                hint="loop over the indices: for i in sourcegrad.checkpointed(range(len(xs))): x = xs[i]",
            )
        loop = s.with_changes(iter=inner)
        self.src.alias(loop, s)
        return loop, self._snapshots(keywords.get("snapshots"), usage)

    def _snapshots(self, node, usage):
        """The ``snapshots=`` of a checkpointed loop: a positive int written there or a module
        constant (True when absent or None)."""
        if node is None or (isinstance(node, cst.Name) and node.value == "None"):
            return True
        if isinstance(node, cst.Integer):
            value = int(node.evaluated_value)
        elif isinstance(node, (cst.Name, cst.Attribute)) and not self._is_local_expr(node):
            value = self._static_value(node)
        else:
            value = None
        if type(value) is not int or value < 1:
            fence.refuse(
                self.src,
                node,
                msg="snapshots= must be a positive int known when the function is compiled "
                "(written there, or a module constant)",
                hint=usage,
            )
        return value

    def _static_trips(self, s):
        """The values of ``for i in range(...)`` when its bounds are literals or module-level
        constants, the trip count is at most the unroll limit, and the body has no exit."""
        it = s.iter
        if not (
            isinstance(it, cst.Call)
            and isinstance(s.target, cst.Name)
            and self._static_callee(it.func) is builtins.range
            and 1 <= len(it.args) <= 3
        ):
            return None
        if find_node(s.body, (cst.Break, cst.Continue, cst.Return)) is not None:
            return None
        bounds, captured = [], []
        for a in it.args:
            v = a.value
            if a.keyword is not None or a.star:
                return None
            if isinstance(v, cst.Integer):
                bounds.append(int(v.evaluated_value))
            elif (
                isinstance(v, cst.UnaryOperation)
                and isinstance(v.operator, cst.Minus)
                and isinstance(v.expression, cst.Integer)
            ):
                bounds.append(-int(v.expression.evaluated_value))
            elif isinstance(v, (cst.Name, cst.Attribute)) and not self._is_local_expr(v):
                value = self._static_value(v, record=False)
                if type(value) is not int:
                    return None
                bounds.append(value)
                captured.append(v)
            else:
                return None
        trips = range(*bounds)
        if len(trips) > self.options.get("unroll", 0):
            return None  # a loop: its bounds are read when it runs
        if len(trips) > 1 and self._unrolled * len(trips) > UNROLL_BUDGET:
            return None  # nested unrolled loops would repeat the body too often
        for v in captured:  # unrolled: the code holds the bounds' values, so they must stay
            self._static_value(v)
        return list(trips)

    def _unroll(self, s, trips, pos):
        """A loop with a small trip count known now: its body once per value, in order."""
        target = self._local(s.target.value)
        outer = self._unrolled
        self._unrolled = outer * max(1, len(trips))
        try:
            for value in trips:
                self._emit(ir.Assign(target, self._copy_op(ir.Const(value, str(value))), pos))
                self._statements(s.body)
        finally:
            self._unrolled = outer

    def _loop_iter(self, s, enter=None):
        """(range text, index variable, statements that bind the user's targets per iteration).

        As in Python, the iterable (each operand of ``enumerate``, ``zip`` and ``reversed``) is
        evaluated once, before the loop, in the scope the loop starts in (``_loop_operand``);
        ``enter`` then binds a comprehension's own names, which its targets write."""
        it, target = s.iter, s.target
        pos = self._pos(s)
        enter = enter or (lambda: None)
        if isinstance(it, cst.Call) and self._static_callee(it.func) is builtins.range:
            if not isinstance(target, cst.Name):
                fence.refuse(self.src, target, msg="a range loop needs a single loop variable")
            self._check_text(it)
            rng = self._kept(it)
            enter()
            return rng, self._local(target.value), []
        callee = self._static_callee(it.func) if isinstance(it, cst.Call) else None
        if (
            callee is builtins.map
        ):  # the function called at the top of each iteration, as Python does
            return self._map_loop(it, target, s, pos, enter)
        if callee is builtins.enumerate:
            return self._enumerate_loop(it, target, s, pos, enter)
        if callee is builtins.zip and not any(a.star for a in it.args):
            seqs = self._zip_operands(it, target, s, pos)
            enter()
            k = self.naming.temp("k")
            return self._range(self._zip_trips(seqs)), k, self._zip_binders(target, seqs, k, pos)
        if callee is builtins.reversed:
            if len(it.args) != 1 or it.args[0].keyword is not None or it.args[0].star:
                fence.refuse(self.src, it, msg="reversed takes one sequence")
            seq = self._loop_operand(it.args[0].value, s, pos, reverse=True)
            enter()
            k = self.naming.temp("k")
            rng = ir.text(
                f"{self.captures.bind('range')}({self.captures.bind('len')}({{}}) - 1, -1, -1)", seq
            )
            return rng, k, [lambda: self._bind_elem(target, seq, k, pos)]
        return self._sequence_loop(it, target, callee, s, pos, enter)

    def _enumerate_loop(self, it, target, s, pos, enter):
        """``for i, x in enumerate(xs)`` (or ``enumerate(zip(xs, ys))``): ``i`` is the index."""
        if not isinstance(target, cst.Tuple) or len(target.elements) != 2:
            fence.refuse(
                self.src,
                target,
                msg="enumerate(...) needs two loop targets: index, value",
                hint="for i, x in enumerate(xs):",
            )
        idx_target, value_target = target.elements[0].value, target.elements[1].value
        if not isinstance(idx_target, cst.Name):
            fence.refuse(self.src, idx_target, msg="the index of enumerate must be a plain name")
        if len(it.args) != 1 or it.args[0].keyword is not None or it.args[0].star:
            fence.refuse(
                self.src,
                it,
                msg="enumerate takes one sequence here (no start=)",
                hint="for i, x in enumerate(xs): and add the offset to i in the body",
            )
        inner = it.args[0].value
        if (
            isinstance(inner, cst.Call)
            and self._static_callee(inner.func) is builtins.zip
            and not any(a.star for a in inner.args)
        ):
            # enumerate(zip(xs, ys))
            seqs = self._zip_operands(inner, value_target, s, pos)
            enter()
            k = self._local(idx_target.value)
            return (
                self._range(self._zip_trips(seqs)),
                k,
                self._zip_binders(value_target, seqs, k, pos),
            )
        seq = self._loop_operand(inner, s, pos)
        enter()
        k = self._local(idx_target.value)
        return self._range_len(seq), k, [lambda: self._bind_elem(value_target, seq, k, pos)]

    def _sequence_loop(self, it, target, callee, s, pos, enter):
        """``for x in <value>``: a dict's keys, values or items, or a sequence read by index."""
        if (
            isinstance(it, cst.Call)
            and isinstance(it.func, cst.Attribute)
            and isinstance(it.func.value, cst.Name)
            and it.func.value.value in self.dicts
        ):
            self._refuse_dict_value(it.func.value)
        if isinstance(it, cst.Name) and it.value in self.dicts:
            self._refuse_dict_value(it)
        if (
            isinstance(it, cst.Name)
            and it.value in self.locals
            and isinstance(target, cst.Name)
            and isinstance(self.subst.get(it.value, ir.Name("")), ir.Name)
            and indexes_by(s.body, it.value, target.value)
        ):
            return self._dict_or_sequence_loop(it, target, s, pos, enter)
        if (
            callee is None
            and isinstance(it, cst.Call)
            and isinstance(it.func, cst.Attribute)
            and it.func.attr.value in ("items", "keys", "values")
            and not it.args
            and self._viewed_dict(it.func.value)
        ):
            d = self._iterated(self._atom(it.func.value), s, pos)
            enter()
            return self._dict_loop(it.func.attr.value, d, target, pos)
        seq = self._loop_operand(it, s, pos)
        enter()
        k = self.naming.temp("k")
        return self._range_len(seq), k, [lambda: self._bind_elem(target, seq, k, pos)]

    def _zip_operands(self, it, target, s, pos):
        """The sequences ``zip(xs, ys)`` reads by index (``_loop_operand``), one per loop target."""
        seqs = [self._loop_operand(a.value, s, pos) for a in it.args]
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(seqs):
            fence.refuse(
                self.src,
                target,
                msg="zip(...) needs one loop target per sequence",
                hint="for a, b in zip(xs, ys):",
            )
        return seqs

    def _zip_trips(self, seqs):
        """The trip count of a loop over ``zip`` of ``seqs`` (text)."""
        length = self.captures.bind("len")
        n = ", ".join(f"{length}({q.render()})" for q in seqs)
        return ir.Text(
            f"{self.captures.bind('min')}({n})", [x for q in seqs for x in ir.atom_names(q)]
        )

    def _zip_binders(self, target, seqs, k, pos):
        """One binder per loop target of a ``zip``: its sequence read at index ``k``."""
        return [
            (lambda el=el, q=q: self._bind_elem(el.value, q, k, pos))
            for el, q in zip(target.elements, seqs)
        ]

    def _loop_operand(self, node, s, pos, reverse=False, atom=None):
        """What loop ``s`` reads by index for ``node``, its iterable or an operand of
        ``enumerate``, ``zip`` or ``reversed``. It is evaluated once, before the loop, as Python
        evaluates it, and it is a sequence whose entry ``k`` is what iterating it gives k-th:

        - a value known now (a module-level or closure value, a literal): a list, tuple, range,
          string or array as it is; a dict, a set, a dict view or an iterator becomes the list of
          what iterating it gives when the loop starts (a dict's keys in order, a set's elements
          in its own order, a view's items). The captures' guard keeps its type
          (``captures.py``); its contents are read live, so a key added between calls is seen;
        - a value computed from such values only (``D.items()``, ``CFG["weights"]``): a list
          made when the loop starts (it carries no gradient);
        - a local value: as it is (a snapshot when the loop's targets or body rebind a name it
          reads), checked when the loop starts to be a sequence read by position
          (``check_sequence`` refuses a dict, a set, a view, an iterator).
        """
        if atom is None:
            self._check_eager_map(node, s)
        seq = self._atom(node) if atom is None else atom  # (atom: node, lowered already)
        if isinstance(seq, ir.Const):
            return self._known_sequence(seq, node, pos, reverse)
        if isinstance(seq, ir.Tup):  # a literal [a, b]: its names as they are now
            if set(ir.atom_names(seq)) & self._rebound(s):
                return self._named(seq, pos)
            return seq
        if self._reads_no_local(node):
            return self._listed(seq, pos)
        seq = self._iterated(seq, s, pos)
        self._emit(ir.Effect(ir.text(f"{self.captures.bind('check_sequence')}({{}})", seq), pos))
        return seq

    def _known_sequence(self, seq, node, pos, reverse):
        """``_loop_operand`` of a value known now (``seq``, a ``Const``)."""
        value = seq.value
        if reverse and isinstance(value, (abc.Set, abc.Iterator)):
            fence.refuse(
                self.src,
                node,
                msg=f"reversed() of a {type(value).__name__}: it has no order to reverse",
                hint="reversed(sorted(S))",
            )
        if isinstance(value, (abc.Mapping, abc.Set, abc.MappingView, abc.Iterator)) or not (
            hasattr(type(value), "__getitem__") and hasattr(type(value), "__len__")
        ):
            return self._listed(seq, pos)
        held = self.naming.temp("seq")  # a module-level list, or a literal: read by index
        self._emit(ir.Assign(held, self._copy_op(seq), pos))
        return ir.Name(held)

    def _listed(self, seq, pos):
        """A temporary holding ``list(seq)``, made when the loop starts (no gradient)."""
        held = self.naming.temp("seq")
        fn = self.captures.bind("list")
        self._emit(
            ir.Assign(held, ir.Op(list, (seq,), (), f"{fn}({seq.render()})", "nondiff"), pos)
        )
        return ir.Name(held)

    def _reads_no_local(self, node):
        """Does ``node`` read module-level or closure values only (never a local value)?"""
        for n in names_read(node):
            if n in self.subst:
                if not isinstance(self.subst[n], ir.Const):
                    return False
            elif n in self.locals:
                return False
        return True

    def _rebound(self, s):
        """The local names (as the generated code spells them) loop ``s`` binds: its targets and
        what its body assigns."""
        names = set(assigned_in(s.body)) | set(target_names(s.target))
        return {self._local(n) for n in names if n in self.locals}

    def _iterated(self, seq, s, pos):
        """The sequence loop ``s`` reads by index: ``seq``, or a snapshot of it when the loop's
        targets or body rebind the name (Python iterates the object the name held when the loop
        began)."""
        if isinstance(seq, ir.Name) and seq.id in self._rebound(s):
            snapshot = self.naming.temp("seq")
            self.naming.snapshots[snapshot] = seq.id
            self._emit(ir.Assign(snapshot, self._copy_op(seq), pos))
            return ir.Name(snapshot)
        return seq

    def _zip_value(self, node, args, kwargs):
        """``zip(xs, ys)`` as a value (a loop over it is ``_loop_iter``'s): the tuple of its
        tuples where every sequence's entries are known now (a literal, a helper's tuple), else
        a list of tuples built by a loop over the shortest sequence's length; ``zip(*pairs)``
        transposes a sequence of sequences of any length, by two loops."""
        from .calls import Unpacked

        if kwargs:
            fence.refuse(
                self.src,
                node,
                msg="zip(...) takes its sequences only here (no strict=)",
                hint="zip(xs, ys)",
            )
        pos = self._pos(node)
        if any(isinstance(a, Unpacked) for a in args):
            if len(args) != 1:
                fence.refuse(
                    self.src,
                    node,
                    msg="zip(*seqs) is supported with the one starred argument",
                    hint="zip(*pairs), or zip(xs, ys) with the sequences one by one",
                )
            return self._transposed(args[0].atom, pos)
        known = [ir.entries(a) for a in args]
        if all(k is not None for k in known):
            n = min((len(k) for k in known), default=0)
            rows = [self._literal([k[i] for k in known], False, pos) for i in range(n)]
            return self._literal(rows, False, pos)
        seqs = [self._named(a, pos) for a in args]
        result = self.naming.temp("list")
        self._emit(ir.Assign(result, self._copy_op(tup([], True)), pos))
        k = self.naming.temp("k")
        with self._in_loop(), self._collecting() as body:
            row = []
            for q in seqs:
                entry = self.naming.temp()
                self._emit(
                    ir.Assign(entry, self._getitem_op(q, ir.Index((ir.Name(k),), False)), pos)
                )
                row.append(ir.Name(entry))
            self._emit(ir.Append(result, self._named(tup(row, False), pos), pos))
        trips = self._zip_trips(seqs) if seqs else ir.Text("0")
        self._emit(ir.For(k, self._range(trips), tuple(body), pos))
        return ir.Name(result)

    def _transposed(self, seqs, pos):
        """``zip(*seqs)``: a list of tuples, the k-th of every sequence's k-th entries."""
        seqs = self._named(seqs, pos)
        result = self.naming.temp("list")
        self._emit(ir.Assign(result, self._copy_op(tup([], True)), pos))
        k, j = self.naming.temp("k"), self.naming.temp("k")
        trips = ir.text(f"{self.captures.bind('shortest_entry')}({{}})", seqs)
        with self._in_loop(), self._collecting() as body:
            row = self.naming.temp("list")
            self._emit(ir.Assign(row, self._copy_op(tup([], True)), pos))
            with self._collecting() as inner:
                seq, entry = self.naming.temp(), self.naming.temp()
                self._emit(
                    ir.Assign(seq, self._getitem_op(seqs, ir.Index((ir.Name(j),), False)), pos)
                )
                self._emit(
                    ir.Assign(
                        entry, self._getitem_op(ir.Name(seq), ir.Index((ir.Name(k),), False)), pos
                    )
                )
                self._emit(ir.Append(row, ir.Name(entry), pos))
            self._emit(ir.For(j, self._range_len(seqs), tuple(inner), pos))
            fn = self.captures.bind("tuple")
            entries = self.naming.temp()
            self._emit(
                ir.Assign(
                    entries,
                    ir.Op(tuple, (ir.Name(row),), (), f"{fn}({row})", self._kind(tuple)),
                    pos,
                )
            )
            self._emit(ir.Append(result, ir.Name(entries), pos))
        self._emit(ir.For(k, self._range(trips), tuple(body), pos))
        return ir.Name(result)

    def _expr_ListComp(self, node):
        return self._comprehension(node)

    def _expr_GeneratorExp(self, node):
        return self._comprehension(node)

    def _comprehension(self, node):
        """``[elt for x in xs if c]``: a list built by a loop (its names stay inside it)."""
        result, pos = self._empty_list(node), self._pos(node)
        self._comp_scope(node, lambda: self._emit(ir.Append(result, self._atom(node.elt), pos)))
        return ir.Name(result)

    def _expr_DictComp(self, node):
        """``{k: v for x in xs if c}``: the keys and the values in two lists built by a loop (the
        key evaluated before the value, as Python does), then the dict of them (``dict_from``,
        whose adjoint gives each value its key's entry)."""
        keys, values = self._empty_list(node, "keys"), self._empty_list(node, "values")
        pos = self._pos(node)

        def add():
            key = self._atom(node.key)
            self._emit(ir.Append(keys, key, pos))
            self._emit(ir.Append(values, self._atom(node.value), pos))

        self._comp_scope(node, add)
        made = f"{self.captures.bind('dict_from', dict_from)}({keys}, {values})"
        return ir.Op(dict_from, (ir.Name(keys), ir.Name(values)), (), made, self._kind(dict_from))

    def _empty_list(self, node, hint="list"):
        """A temporary holding a new empty list."""
        result = self.naming.temp(hint)
        self._emit(ir.Assign(result, self._copy_op(tup([], True)), self._pos(node)))
        return result

    def _comp_scope(self, node, add):
        """The loops of comprehension ``node``, ``add`` emitting what each innermost trip adds;
        the names its targets bind stay inside it."""
        saved_locals, saved_rename = set(self.locals), dict(self.rename)
        try:
            self._comp_loops(node, node.for_in, add, self._pos(node))
        finally:
            self.locals, self.rename = saved_locals, saved_rename

    def _comp_loops(self, node, comp_for, add, pos):
        """The loop of one ``for`` clause (and, inside it, of those after it)."""
        if comp_for.asynchronous is not None:
            fence.refuse(self.src, comp_for, kind="AsyncFunctionDef")
        renamed = {name: self.naming.unique(name) for name in target_names(comp_for.target)}

        def enter():  # after the iterable is read: it reads the names as they were before
            for name, new in renamed.items():
                self.locals.add(name)
                self.rename[name] = new

        # read by _loop_iter: [params[k] for k in params] is over a dict's keys
        elt = getattr(node, "elt", None)
        if isinstance(node, cst.DictComp):
            elt = cst.Tuple([cst.Element(node.key), cst.Element(node.value)])
        fake = cst.For(
            target=comp_for.target,
            iter=comp_for.iter,
            body=cst.IndentedBlock(
                body=[cst.SimpleStatementLine([cst.Expr(elt)])] if elt is not None else []
            ),
        )
        self.src.alias(fake, comp_for)  # its positions are the comprehension's
        found = self._namespace_iteration(comp_for.iter) if self.dicts else None
        if found is not None:  # over a local dict: once per key, known now (namespaces.py)
            enter()
            self._unrolled_namespace_loop(
                fake,
                found,
                pos,
                lambda: self._comp_body(node, comp_for, list(comp_for.ifs), add, pos),
            )
            return
        with self._in_user_loop(comp_for):
            range_text, target, prologue = self._loop_iter(fake, enter)
            with self._in_loop(), self._collecting() as body:
                for build in prologue:
                    build()
                self._comp_body(node, comp_for, list(comp_for.ifs), add, pos)
        self._emit(ir.For(target, range_text, tuple(body), pos))

    def _comp_body(self, node, comp_for, ifs, add, pos):
        """Inside a clause's loop: its ``if`` conditions, then the next clause or ``add``."""
        if ifs:
            test = self._test(ifs[0].test)
            with self._collecting() as body:
                self._comp_body(node, comp_for, ifs[1:], add, pos)
            self._emit(ir.If(test, tuple(body), (), pos))
        elif comp_for.inner_for_in is not None:
            self._comp_loops(node, comp_for.inner_for_in, add, pos)
        else:
            add()
