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
        try:
            yield self.block
        finally:
            self.block = saved

    def _block(self, suite):
        """The statements of ``suite``, lowered (a list)."""
        with self._collecting() as out:
            self._statements(suite)
        return out

    def _statements(self, suite):
        """Lower the statements of ``suite`` into the current block, up to a ``return`` (or
        ``break``, ``continue``) that an ``if`` decided now took: the rest never runs."""
        small = isinstance(suite, cst.SimpleStatementSuite)  # def f(x): return x (one line)
        for stmt in suite.body:
            (self._small if small else self._stmt)(stmt)
            if self.unreachable:
                break
        self.unreachable = False

    def _emit(self, stmt):
        """Append ``stmt`` to the current block (with no gradient inside ``with no_grad()``)."""
        if self.no_grad:
            stmt = self._without_gradient(stmt)
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
        self._pos(s)
        handler = getattr(self, f"_small_{type(s).__name__}", None)
        if handler is None:
            fence.refuse(self.src, s)
        self._check_reachable(s)
        handler(s)

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

    def _kept(self, node):
        """``_text`` of an expression kept as written (a condition, a range, what ``print``
        prints), with the local names it reads."""
        names = set()
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
        """A condition, kept as text (it is never differentiated) but fenced."""
        self._check_text(node)
        return self._kept(node)

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
        return ir.Name(tmp)

    def _expr_Name(self, node):
        n = node.value
        if n in ("True", "False", "None"):
            return ir.Const({"True": True, "False": False, "None": None}[n], n)
        if n in self.local_defs:
            self._refuse_local_def_value(node)
        if n in self.subst:
            return self.subst[n]
        if n in self.dicts:
            self._refuse_dict_value(node)
        if n in self.locals:
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
        """A literal of atoms. A literal inside it is a constant when all its entries are (its
        Python value), otherwise a temporary holding a list, which ``sequences.py`` stacks where
        numpy differentiates an array (``np.array([[c, -s], [s, c]])``)."""
        items = []
        for el in node.elements:
            if isinstance(el, cst.StarredElement):
                fence.refuse(self.src, el, kind="Starred")
            items.append(self._atom(el.value))
        if not any(isinstance(el.value, (cst.List, cst.Tuple)) for el in node.elements):
            return tup(items, is_list)
        literal = literal_const(tup(items, is_list))
        if literal is not None:
            return literal
        pos = self._pos(node)
        return tup([self._named(literal_const(a) or a, pos) for a in items], is_list)

    def _expr_UnaryOperation(self, node):
        fn, sym = UNOPS[type(node.operator)]
        if fn is operator.neg and isinstance(
            node.expression, (cst.Integer, cst.Float, cst.Imaginary)
        ):
            lit = node.expression
            return ir.Const(-literal_value(lit.value), "-" + lit.value)
        x = self._atom(node.expression)
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
        return self._binop(fn, sym, self._atom(node.left), self._atom(node.right), node)

    def _binop(self, fn, sym, a, b, node):
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
        if entry is None:
            fence.refuse(
                self.src,
                node,
                msg="`in` tests are only supported in if/while conditions",
                hint="test it in an if statement, or use np.isin(...) (no gradient)",
            )
        fn, sym = entry
        a, b = self._atom(node.left), self._atom(c.comparator)
        return ir.Op(fn, (a, b), (), f"{a.render()} {sym} {b.render()}", "nondiff")

    def _expr_BooleanOperation(self, node):
        fence.refuse(
            self.src,
            node,
            msg="and/or are only supported in if/while conditions",
            hint="use np.logical_and / np.logical_or, or an if statement",
        )

    def _expr_IfExp(self, node):
        tmp = self.naming.temp()
        self._ifexp(tmp, node, self._pos(node))
        return ir.Name(tmp)

    def _ifexp(self, name, node, pos):
        """``name = a if c else b``: an ``If`` assigning ``name`` in each branch (or the side a
        test decided now takes)."""
        folded = self._fold(node.test)
        if folded is not None:
            self._assign_expr(name, node.body if folded else node.orelse, pos)
            return
        test = self._test(node.test)

        def side(value):
            with self._collecting() as out:
                self._assign_expr(name, value, pos)
            return out

        body, orelse = self._branches(lambda: side(node.body), lambda: side(node.orelse))
        self._emit(ir.If(test, tuple(body), tuple(orelse), pos))

    def _expr_Subscript(self, node):
        if self._dict_base(node) is not None:
            return ir.Name(self._dict_entry(node, read=True))
        base = self._named(self._atom(node.value), self._pos(node))
        index = self._index(node)
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
