"""A-normal form: the walk over the statements, and expressions lowered to one operation each.

Expects: a libcst suite of the user's function and the normalizer's state (``src``, ``naming``,
``no_grad``, the names from ``resolve``). Guarantees: statements are dispatched to the
``_stmt_<Kind>`` and ``_small_<Kind>`` methods of the other modules, an expression to its
``_expr_<Kind>`` (a kind without one is refused, deny by default); ``_atom`` leaves every
operand a ``Name``, a ``Const``, or an ``Index``/``Tup`` of those, each intermediate value in a
temporary of its own, emitted in evaluation order into the current block (``_collecting`` opens
a new one); conditions and loop bounds, never differentiated, are kept as text with the names
they read (``_kept``). Code after ``return``, ``break`` or ``continue`` is refused.
"""

from __future__ import annotations

import contextlib
import operator

import libcst as cst
import numpy as np

from sourcegrad.runtime import index_join
from sourcegrad.runtime.structures import make_dict

from .. import fence, ir
from .. import rules as R
from ..captures import Item
from ..deferral import DEFERRABLE, Branches, refusal
from ..ir import Tup
from .syntax import (
    BINOPS,
    CMPOPS,
    UNOPS,
    Renamer,
    code_of,
    find_name,
    find_node,
    literal_const,
    literal_value,
    names_read,
    op_text,
    tup,
)

_JOINERS = (type(np.r_), type(np.c_))  # np.r_[...] and np.c_[...] join their entries


class ANF:
    """The walk and the expression lowering of the ``Normalizer``."""

    @contextlib.contextmanager
    def _collecting(self):
        """Statements emitted inside the ``with`` go to a new block, the list it yields (a loop's
        or a branch's body); the current block is the enclosing one again after it."""
        saved, self.block = self.block, []
        self._depth += 1
        dead, self._unreachable = self._unreachable, False
        try:
            yield self.block
        finally:
            self.block = saved
            self._depth -= 1
            self._unreachable = dead

    def _block(self, suite):
        """The statements of ``suite``, lowered (a list)."""
        with self._collecting() as out:
            self._statements(suite)
        return out

    def _statements(self, suite):
        """Lower the statements of ``suite`` into the current block (after a ``return``,
        ``break`` or ``continue`` that an ``if`` decided now took, the rest never runs:
        ``_unreachable``)."""
        if isinstance(suite, cst.SimpleStatementSuite):  # def f(x): return x (one line)
            for small in suite.body:
                self._small(small)
        else:
            self._stmts(suite.body)

    def _emit(self, stmt):
        """Append ``stmt`` to the current block (with no gradient inside ``with no_grad()``)."""
        if self.no_grad:
            stmt = self._without_gradient(stmt)
        if self.deleted and type(stmt) is ir.Assign:
            self.deleted.discard(stmt.target)  # bound again after a del
        if self.branches.stack:
            self.branches.emitted(stmt)
        self.block.append(stmt)
        self._learn(stmt)

    def _pos(self, node):
        """Where ``node`` is, to the line: a statement's own line, an expression's statement's.
        (Exact columns are resolved only for error messages: libcst metadata is slow.)"""
        pos = self.src.stmt_pos(node)
        if pos is None:
            return self._cur_pos or self.src.pos_of(node)
        self._cur_pos = pos
        return pos

    def _stmt(self, stmt):
        if self._unreachable:  # after a branch known now to return, break or continue
            return
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self._small(small)
            return
        handler = getattr(self, f"_stmt_{type(stmt).__name__}", None)
        if handler is None:
            fence.refuse(self.src, stmt)
        self._pos(stmt)
        self._check_reachable(stmt)
        handler(stmt)

    def _check_reachable(self, stmt):
        if self.block and isinstance(self.block[-1], (ir.Return, ir.Break, ir.Continue)):
            fence.refuse(
                self.src,
                stmt,
                msg="this code can never run (it follows return, break or continue)",
                hint="remove it",
            )

    def _small(self, s):
        if self._unreachable:
            return
        self._pos(s)
        handler = getattr(self, f"_small_{type(s).__name__}", None)
        if handler is None:
            fence.refuse(self.src, s)
        self._check_reachable(s)
        handler(s)

    def _stmts(self, stmts):
        """Lower ``stmts`` into the current block."""
        for stmt in stmts:
            self._stmt(stmt)

    def _small_Pass(self, s):
        pass

    def _text(self, node):
        """Source text of ``node`` as the generated code must read it (inlined names renamed)."""
        if self.dicts:
            found = find_name(node, self.dicts)
            if found is not None:
                self._refuse_dict_value(found)
        if not self.rename and not self.subst:
            return code_of(node)
        rename = dict(self.rename)
        rename.update({p: a.render() for p, a in self.subst.items()})
        return code_of(node.visit(Renamer(rename)))

    def _refuse_deleted(self, node):
        fence.refuse(
            self.src,
            node,
            msg=f"{node.value!r} is read after `del {node.value}`: Python would raise NameError",
            hint=f"read {node.value} before the del, or bind it again first",
        )

    def _kept(self, node):
        """``_text`` of an expression kept as written (a condition, a range, what ``print``
        prints), with the local names it reads."""
        names = set()
        if self.deleted:
            gone = {n for n in names_read(node) if self._local(n) in self.deleted}
            if gone:
                self._refuse_deleted(find_name(node, gone) or node)
        for n in names_read(node):
            a = self.subst.get(n)
            names.update(ir.atom_names(a) if a is not None else (self.rename.get(n, n),))
        return ir.Text(self._text(node), names)

    def _range(self, n):
        """``range(n)`` for a trip count ``n`` (a ``Text``), as the generated code calls it."""
        return ir.Text(f"{self.captures.bind('range')}({n})", ir.idents(n))

    def _range_len(self, seq):
        """``range(len(seq))``, as the generated code calls it."""
        return ir.text(f"{self.captures.bind('range')}({self.captures.bind('len')}({{}}))", seq)

    def _test(self, node):
        """A condition, kept as text (it is never differentiated) but fenced. One with a walrus
        (``if (s := np.sum(x)) > 0:``) is lowered to operations first, which bind the walrus's
        name where Python does (short circuits kept: ``_expr_BooleanOperation``), and the test
        reads their result."""
        if self._test_needs_operations(node):
            atom = self._atom(node)
            return ir.Text(atom.render(), ir.atom_names(atom))
        self._check_text(node)
        return self._kept(node)

    def _test_needs_operations(self, node):
        """Must condition ``node`` be lowered to operations (it binds a name with a walrus, or
        reads a local dict, whose entries and keys are decided now: ``namespaces``)?"""
        return find_node(node, cst.NamedExpr) is not None or (
            bool(self.dicts) and find_name(node, self.dicts) is not None
        )

    def _expr_NamedExpr(self, node):
        """``(name := value)``: binds the local ``name`` (in the function's scope, a
        comprehension's too, as Python does) and is its value."""
        if not isinstance(node.target, cst.Name):
            fence.refuse(self.src, node, msg="the target of := must be a name")
        name = self._local(node.target.value)
        if name in self.dicts:
            self._refuse_dict_value(node.target)
        pos = self._pos(node)
        self._assign_expr(name, node.value, pos)
        if self.bind_counts.get(node.target.value, 0) == 1:
            return ir.Name(name)
        # bound elsewhere too: the value is the one bound here, whatever rebinds it later on
        return self._value_to_temp(node.target)

    def _check_text(self, node):
        """A condition or bound is run as written: refuse what could not run the same way."""
        for bad in (cst.NamedExpr, cst.Lambda, cst.Yield, cst.Await):
            found = find_node(node, bad)
            if found is not None:
                fence.refuse(self.src, found)

    def _atom(self, node):
        """Lower ``node`` so that its value is an atom, emitting temporaries as needed."""
        op = self._op(node)
        if isinstance(op, (ir.Name, ir.Const, Tup)):
            return op
        tmp = self.naming.temp()
        self._emit(ir.Assign(tmp, op, self._pos(node), node=node))
        return ir.Name(tmp)

    def _op(self, node):
        """Lower ``node`` to one ``Op`` over atoms (or an atom itself)."""
        handler = getattr(self, f"_expr_{type(node).__name__}", None)
        if handler is None:
            fence.refuse(self.src, node)
        return handler(node)

    def _copy_op(self, atom):
        """The operation that passes ``atom`` on as it is."""
        return ir.Op(None, (atom,), (), atom.render(), "copy")

    def _kind(self, fn):
        """How an operation calling ``fn`` is differentiated: by its rule, or not at all."""
        return "nondiff" if self.no_grad or R.is_nondiff(fn) else "call"

    def _getitem_op(self, base, index):
        return ir.Op(
            operator.getitem, (base, index), (), f"{base.render()}[{index.render()}]", "call"
        )

    def _named(self, atom, pos):
        """``atom``, or a temporary holding it when it is a tuple literal: ``(a, b)[k]`` indexes a
        name, so the entries' adjoints come back through the tuple's (zero where none came)."""
        if not isinstance(atom, Tup):
            return atom
        tmp = self.naming.temp()
        self._emit(ir.Assign(tmp, self._copy_op(atom), pos))
        self.lengths[tmp] = len(atom)
        return ir.Name(tmp)

    def _expr_Name(self, node):
        n = node.value
        if n in ("True", "False", "None"):
            return ir.Const({"True": True, "False": False, "None": None}[n], n)
        if n in self.local_defs:
            self._refuse_local_def_value(node)
        if self.partials and self._local(n) in self.partials:
            self._refuse_partial_value(node)
        if n in self.subst:
            return self.subst[n]
        if n in self.dicts:
            self._refuse_dict_value(node)
        if n in self.locals and self._local(n) in self.frozen:
            fence.refuse(
                self.src,
                node,
                msg=f"{n!r} holds a frozen distribution ({n} = {self.frozen[self._local(n)][1]}"
                "(...)): it can only be used to call its methods",
                hint=f"call them on it ({n}.logpdf(x)), or pass the parameters themselves",
            )
        if n in self.locals:
            if self.deleted and self._local(n) in self.deleted:
                self._refuse_deleted(node)
            return ir.Name(self._local(n))
        # a module-level or closure value: read as written, never differentiated
        return self._static_const(node)

    def _expr_Dict(self, node):
        """A dict literal used as a value (stored on an object, passed, returned): a dict, each
        value's adjoint its entry's. (``d = {...}`` bound to a name is a namespace: ``dicts``.)"""
        keys, values = [], []
        for el in node.elements:
            if isinstance(el, cst.StarredDictElement):
                fence.refuse(
                    self.src,
                    el,
                    kind="Dict",
                    msg="**unpacking in a dict literal is not supported",
                    hint='write the entries out: {"a": x, "b": y}',
                )
            key = self._atom(el.key)
            if not isinstance(key, ir.Const):
                fence.refuse(
                    self.src,
                    el.key,
                    kind="Dict",
                    msg="a dict literal's keys must be constants known when the function is compiled",
                    hint="write the key as a literal",
                )
            keys.append(key.value)
            values.append(self._atom(el.value))
        names = ir.Const(tuple(keys), repr(tuple(keys)))
        entries = tup(values, False)
        text = "{" + ", ".join(f"{k!r}: {v.render()}" for k, v in zip(keys, values)) + "}"
        return ir.Op(make_dict, (names, entries), (), text, self._kind(make_dict))

    def _expr_Integer(self, node):
        return ir.Const(literal_value(node.value), node.value)

    _expr_Float = _expr_Integer
    _expr_Imaginary = _expr_Integer

    def _expr_SimpleString(self, node):
        return ir.Const(literal_value(node.value), node.value)

    def _expr_Ellipsis(self, node):
        fence.refuse(self.src, node)

    def _expr_Tuple(self, node):
        return self._sequence(node, False)

    def _expr_List(self, node):
        return self._sequence(node, True)

    def _sequence(self, node, is_list):
        """A literal of atoms. A literal inside it (or a helper's tuple, ``(f(x), y)``) is a
        constant when all its entries are (its Python value), otherwise a temporary holding a
        list or tuple, which ``sequences.py`` stacks where numpy differentiates an array
        (``np.array([[c, -s], [s, c]])``). A starred entry (``(*x.shape, 2)``) is spliced in: its
        values when they are known now, else the literal is a concatenation made when it runs."""
        if any(isinstance(el, cst.StarredElement) for el in node.elements):
            return self._starred_sequence(node, is_list)
        items = [self._atom(el.value) for el in node.elements]
        return self._literal(items, is_list, node)

    def _literal(self, items, is_list, where):
        """The literal of the atoms ``items`` (those that are literals themselves named;
        ``where``: the literal's node or position)."""
        if not any(isinstance(a, Tup) for a in items):
            return tup(items, is_list)
        literal = literal_const(tup(items, is_list))
        if literal is not None:
            return literal
        pos = where if isinstance(where, ir.Pos) else self._pos(where)
        return tup([self._named(literal_const(a) or a, pos) for a in items], is_list)

    def _starred_sequence(self, node, is_list):
        """``(a, *b, c)``: the entries of ``b`` spliced in where they are known now (a literal, a
        helper's tuple, a name bound once to a literal, checked when it runs), else
        ``(a,) + tuple(b) + (c,)`` (``[a] + list(b) + [c]`` for a list), made when it runs."""
        pieces, run = [], []
        for el in node.elements:
            if not isinstance(el, cst.StarredElement):
                run.append(self._atom(el.value))
                continue
            atom = self._atom(el.value)
            known = self._known_entries(atom, self._pos(el))
            if known is not None:
                run.extend(known)
                continue
            if run:
                pieces.append(self._literal(run, is_list, node))
                run = []
            maker = list if is_list else tuple
            fn = self.captures.bind(maker.__name__)
            pieces.append(ir.Op(maker, (atom,), (), f"{fn}({atom.render()})", self._kind(maker)))
        if not pieces:
            return self._literal(run, is_list, node)
        if run:
            pieces.append(self._literal(run, is_list, node))
        pos = self._pos(node)
        head = self._held(pieces[0], pos)
        for piece in pieces[1:]:
            op = self._binop(operator.add, "+", head, self._held(piece, pos), node)
            head = self._held(op, pos)
        return head

    def _held(self, op, pos):
        """An atom for ``op``: itself when it is one, else a temporary assigned it."""
        if isinstance(op, (ir.Name, ir.Const, Tup)):
            return op
        tmp = self.naming.temp()
        self._emit(ir.Assign(tmp, op, pos))
        return ir.Name(tmp)

    def _known_entries(self, atom, pos):
        """The atoms of the entries of ``atom`` where their number is known now: a literal's, a
        constant tuple's, or a name's bound once to a literal (read by index, after a check of
        the count when it runs); None otherwise."""
        known = ir.entries(atom)
        if known is not None or not isinstance(atom, ir.Name):
            return known
        n = self.lengths.get(atom.id)
        if n is None:
            return None
        check = self.captures.bind("check_star_length")
        written = f"*{atom.id}"
        self._emit(ir.Effect(ir.text(f"{check}({{}}, {n}, {written!r})", atom), pos))
        out = []
        for k in range(n):
            tmp = self.naming.temp()
            self._emit(
                ir.Assign(tmp, self._getitem_op(atom, ir.Index((ir.Const(k, str(k)),), False)), pos)
            )
            out.append(ir.Name(tmp))
        return out

    def _expr_UnaryOperation(self, node):
        fn, sym = UNOPS[type(node.operator)]
        if fn is operator.neg and isinstance(
            node.expression, (cst.Integer, cst.Float, cst.Imaginary)
        ):
            lit = node.expression
            return ir.Const(-literal_value(lit.value), "-" + lit.value)
        x = self._atom(node.expression)
        folded = self._folded(fn, (x,))
        if folded is not None:
            return folded
        return ir.Op(fn, (x,), (), f"{sym}{x.render()}", self._kind(fn))

    def _expr_BinaryOperation(self, node):
        entry = BINOPS.get(type(node.operator))
        if entry is None:
            fence.refuse(
                self.src,
                node,
                msg=f"the operator {op_text(node.operator)} is not supported",
                hint="use the numpy function (np.left_shift, ...) outside the differentiated code",
            )
        fn, sym = entry
        left, right = self._atom(node.left), self._atom(node.right)
        if fn is operator.mod and isinstance(left, ir.Const) and isinstance(left.value, str):
            return self._percent_format(left, right)  # "w%d_%s" % (i, name): a string
        return self._binop(fn, sym, left, right, node)

    def _binop(self, fn, sym, a, b, node):
        folded = self._folded(fn, (a, b))
        if folded is not None:  # n - 1 of a constant n: a constant (a recursion's depth)
            return folded
        return ir.Op(fn, (a, b), (), f"{a.render()} {sym} {b.render()}", self._kind(fn))

    def _expr_Comparison(self, node):
        if len(node.comparisons) != 1:
            fence.refuse(
                self.src,
                node,
                msg="chained comparisons are only supported in if/while conditions",
                hint="split it: (a < b) & (b < c)",
            )
        c = node.comparisons[0]
        entry = CMPOPS.get(type(c.operator))
        if isinstance(c.operator, (cst.In, cst.NotIn)) and self._namespace_of(c.comparator):
            return self._namespace_in(node, c)
        if isinstance(c.operator, (cst.In, cst.NotIn)):
            # a membership test: a bool, evaluated as written (its operands in Python's order)
            a, b = self._atom(node.left), self._atom(c.comparator)
            sym = "in" if isinstance(c.operator, cst.In) else "not in"
            text = f"{a.render()} {sym} {b.render()}"
            return ir.Op(operator.contains, (b, a), (), text, "nondiff")
        if entry is None:
            fence.refuse(
                self.src,
                node,
                msg="`in` tests are only supported in if/while conditions",
                hint="test it in an if statement, or use np.isin(...) (no gradient)",
            )
        fn, sym = entry
        a, b = self._atom(node.left), self._atom(c.comparator)
        folded = self._folded(fn, (a, b))
        if folded is not None:
            return folded
        return ir.Op(fn, (a, b), (), f"{a.render()} {sym} {b.render()}", "nondiff")

    def _expr_BooleanOperation(self, node):
        """``a or b`` (``a and b``) as a value: ``a``, or ``b`` when ``a`` is false (true), with
        Python's short circuit: ``b`` is evaluated only then, and ``a`` once. The pick is a branch
        on ``a``'s truth (on the tape), the value a copy of the operand picked, so an active
        operand keeps its gradient (``w = given_w or default_w``)."""
        tmp = self.naming.temp()
        pos = self._pos(node)
        self._emit(ir.Assign(tmp, self._copy_op(self._atom(node.left)), pos, node=node))
        with self._collecting() as right:
            self._assign_expr(tmp, node.right, pos)
        test = f"not {tmp}" if isinstance(node.operator, cst.Or) else tmp
        self._emit(ir.If(ir.Text(test, (tmp,)), tuple(right), (), pos))
        return ir.Name(tmp)

    def _expr_IfExp(self, node):
        tmp = self.naming.temp()
        self._ifexp(tmp, node, self._pos(node))
        return ir.Name(tmp)

    def _ifexp(self, name, node, pos):
        """``name = a if c else b``: an ``If`` assigning ``name`` in each branch (the taken one
        alone when ``c`` is known now: ``_decided_test``)."""
        known = self._decided_test(node.test)
        if known is not None:
            self._assign_expr(name, node.body if known else node.orelse, pos)
            return
        test = self._test(node.test)
        body, orelse = self._branches(
            lambda: self._branch(node, "body", lambda: self._assign_expr(name, node.body, pos)),
            lambda: self._branch(node, "orelse", lambda: self._assign_expr(name, node.orelse, pos)),
        )
        self._emit(ir.If(test, tuple(body), tuple(orelse), pos))

    def _branch(self, node, which, lower):
        """The statements of a branch of ``node`` (an ``if`` or a conditional expression) that
        ``lower()`` emits, or a ``raise`` of the refusal a compile before met in it: a call that
        does not take the branch is not refused for it (``deferral.py``)."""
        key = Branches.key(node, which)
        refused = self.branches.deferred.get(key)
        with self._collecting() as out:
            if refused is not None:
                text = ir.Text(f"raise {self._alias('refused', refusal(refused))}()", ())
                self._emit(ir.Effect(text, self._pos(node)))
                return out
            self.branches.enter(key)
            try:
                lower()
            except DEFERRABLE as e:
                if getattr(e, "branch", None) is None:
                    e.branch = key  # the innermost branch it was met in
                raise
            finally:
                self.branches.leave()
        return out

    def _expr_Subscript(self, node):
        if self._dict_base(node) is not None:
            return ir.Name(self._dict_entry(node, read=True))
        base = self._atom(node.value)
        index = self._index(node)
        if isinstance(base, Tup):
            entry = _static_entry(base, index)
            if entry is not None:  # f(x)[1], (a, b)[0]: the entry itself
                return entry
        base = self._named(base, self._pos(node))
        if (
            isinstance(base, ir.Name)
            and len(index.parts) == 1
            and isinstance(index.parts[0], ir.Const)
            and type(index.parts[0].value) is str
        ):
            # an entry of a dict an object holds, which the function writes (appends to)
            shadow = self._read_location(node, base, Item(index.parts[0].value))
            if shadow is not None:
                return ir.Name(shadow)
        if (
            isinstance(base, ir.Const)
            and isinstance(base.value, _JOINERS)
            and all(
                isinstance(p, ir.Name) or (isinstance(p, ir.Const) and not isinstance(p.value, str))
                for p in index.parts
            )
        ):
            # np.r_[a, b] / np.c_[a, b]: a join of its entries, with an adjoint for each
            return ir.Op(
                index_join,
                (base,) + index.parts,
                (),
                f"{base.render()}[{index.render()}]",
                self._kind(index_join),
            )
        return self._getitem_op(base, index)

    def _index(self, node):
        """The ``Index`` of a subscript, its parts lowered to atoms."""
        parts = []
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Slice):
                parts.append(
                    ir.Slice(
                        *(
                            self._index_atom(v) if v is not None else None
                            for v in (s.lower, s.upper, s.step)
                        )
                    )
                )
            else:
                v = s.value
                if isinstance(v, cst.Name) and v.value == "None":
                    parts.append(None)
                elif isinstance(v, cst.Ellipsis):
                    parts.append(Ellipsis)
                else:
                    parts.append(self._index_atom(v))
        is_tuple = len(node.slice) > 1 or (
            len(node.slice) == 1 and node.slice[0].comma not in (cst.MaybeSentinel.DEFAULT, None)
        )
        return ir.Index(tuple(parts), is_tuple)

    def _index_atom(self, node):
        a = self._atom(node)
        if isinstance(a, Tup) and not a.is_list:
            fence.refuse(
                self.src,
                node,
                msg="a tuple inside an index is not supported",
                hint="index with a list or an integer array: x[[0, 1]]",
            )
        return a


def _static_entry(t, index):
    """The entry (or, a slice, the literal of the entries) of the literal ``t`` that ``index``
    reads when it is one constant integer or a slice of constant integers, else None."""
    if index.is_tuple or len(index.parts) != 1:
        return None
    part = index.parts[0]
    if isinstance(part, ir.Const) and type(part.value) is int:
        return t[part.value] if -len(t) <= part.value < len(t) else None
    if isinstance(part, ir.Slice) and all(
        b is None or (isinstance(b, ir.Const) and type(b.value) is int)
        for b in (part.lower, part.upper, part.step)
    ):
        bounds = [b.value if b is not None else None for b in (part.lower, part.upper, part.step)]
        if bounds[2] == 0:
            return None
        return tup(list(t)[slice(*bounds)], t.is_list)
    return None
