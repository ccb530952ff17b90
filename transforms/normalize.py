"""Lower a libcst function to the IR: one operation per statement (A-normal form).

Expects: a parsed ``Source``. Guarantees: every operand of every ``Op`` is an atom (a ``Name``
or a ``Const``, or an ``Index``/``Tup`` of atoms); every call is resolved to the object whose rule
applies (or refused with ``MissingAdjointError``); augmented assignment is plain assignment;
tuple unpacking is indexing; ``for`` over a sequence is ``for`` over ``range`` with indexing;
conditions and loop bounds, which are never differentiated, are kept as source text. Anything
not handled here is refused through ``fence.refuse`` (deny by default).
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import operator
import re
import sys
import types

import libcst as cst
import numpy as np

from sourcegrad.errors import NoSourceError
from sourcegrad.runtime import (
    Context,
    Function,
    check_sequence,
    check_unpack,
    checkpointed,
    index_join,
    no_grad,
)
from sourcegrad.runtime import structures as _structures

from . import fence, ir
from .ir import ATTRIBUTE_READ, Tup
from . import rules as R
from .captures import KEY as _CAPTURES, Captures, is_library
from .exits import lower_exits
from .naming import Naming
from .source import get_source
from .templates import custom_template, gradient_call_template, parse_template

BINOPS = {
    cst.Add: (operator.add, "+"),
    cst.Subtract: (operator.sub, "-"),
    cst.Multiply: (operator.mul, "*"),
    cst.Divide: (operator.truediv, "/"),
    cst.FloorDivide: (operator.floordiv, "//"),
    cst.Modulo: (operator.mod, "%"),
    cst.Power: (operator.pow, "**"),
    cst.MatrixMultiply: (operator.matmul, "@"),
    cst.BitAnd: (operator.and_, "&"),
    cst.BitOr: (operator.or_, "|"),
    cst.BitXor: (operator.xor, "^"),
}
AUGOPS = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply,
}
UNOPS = {
    cst.Minus: (operator.neg, "-"),
    cst.Plus: (operator.pos, "+"),
    cst.Not: (operator.not_, "not "),
    cst.BitInvert: (operator.invert, "~"),
}
CMPOPS = {
    cst.LessThan: (operator.lt, "<"),
    cst.LessThanEqual: (operator.le, "<="),
    cst.GreaterThan: (operator.gt, ">"),
    cst.GreaterThanEqual: (operator.ge, ">="),
    cst.Equal: (operator.eq, "=="),
    cst.NotEqual: (operator.ne, "!="),
    cst.Is: (operator.is_, "is"),
    cst.IsNot: (operator.is_not, "is not"),
}
_SIDE_EFFECT_ONLY = {builtins.print, builtins.breakpoint}  # run in the forward
# sourcegrad's own checks of a value (they return nothing, or raise): when the compiler reads code
# it generated (hvp differentiates a generated jvp), they run in the forward as written
_RUNTIME_CHECKS = {check_sequence, check_unpack}
_JOINERS = (type(np.r_), type(np.c_))  # np.r_[...] and np.c_[...] join their entries

# An attribute read ``p.w`` of a local value (a dataclass, namedtuple or registered object) is the
# primitive ``structures.field``: its adjoint gives ``p`` a ``FieldAdjoint`` (a namedtuple: the
# ``SeqAdjoint`` of that entry), which ``structures.finalize`` turns into ``p``'s structure.
R._register(
    _structures.field,
    R._declare(
        parse_template(
            "d[obj] += field_adjoint(d[y], obj, name)",
            ["y", "obj", "name"],
            {},
            {"field_adjoint": _structures.field_adjoint},
            "attribute read (normalize.py)",
        ),
        {"name": "an attribute name"},
        "attribute read",
    ),
)

# ndarray attributes no rule reads: refused where written, rather than read as an object's field
_ARRAY_ONLY_ATTRIBUTES = frozenset(
    {"base", "ctypes", "flags", "flat", "imag", "itemsize", "nbytes", "strides"}
)

# Library functions whose result is a namedtuple: field name -> the index ``result.field`` reads.
# A keyword that changes what the call returns (``svd(compute_uv=False)``, ``qr(mode="r")``) is
# refused with a field read; these keywords keep the namedtuple.
_RESULT_FIELDS = {
    np.linalg.eigh: (("eigenvalues", "eigenvectors"), ("UPLO",)),
    np.linalg.eig: (("eigenvalues", "eigenvectors"), ()),
    np.linalg.slogdet: (("sign", "logabsdet"), ()),
    np.linalg.svd: (("U", "S", "Vh"), ("full_matrices", "hermitian")),
    np.linalg.qr: (("Q", "R"), ()),
}


def _tup(items, is_list):
    t = Tup(items)
    t.is_list = is_list
    return t


def _code(node):
    if isinstance(node, cst.Name):  # fast paths: libcst's code generation is slow
        return node.value
    if isinstance(node, cst.Attribute) and not node.lpar and not node.rpar:
        base = _code(node.value)
        if base is not None:
            return f"{base}.{node.attr.value}"
    return _EMPTY.code_for_node(node)


_EMPTY = cst.Module([])


_TARGETED = (ast.AugAssign, ast.AnnAssign, ast.For)


@functools.lru_cache(maxsize=4096)
def _literal(text):
    """The value of a number or string literal's text, as libcst's ``evaluated_value`` gives it
    (``ast.literal_eval``, which parses and compiles the text): the same literals recur."""
    return ast.literal_eval(text)


class _Locals:
    """Every name the function binds (assignment and loop targets) and every name it mentions.

    Walks the stdlib ``ast`` of the function: a libcst visitor costs ten times more."""

    def __init__(self, afn):
        self.names = set()
        self.all_names = set()
        self.counts = {}
        # every node below the body, in any order (ast.walk's generators cost more)
        stack = list(afn.body)
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                self.all_names.add(node.id)
                continue
            if kind is ast.Assign:
                for t in node.targets:
                    self._bind(t)
            elif kind in _TARGETED:
                self._bind(node.target)
            for name in node._fields:
                v = getattr(node, name, None)
                if type(v) is list:
                    stack.extend(x for x in v if isinstance(x, ast.AST))
                elif isinstance(v, ast.AST):
                    stack.append(v)

    def _bind(self, target):
        if isinstance(target, ast.Name):
            self.names.add(target.id)
            self.counts[target.id] = self.counts.get(target.id, 0) + 1
        elif isinstance(target, (ast.Tuple, ast.List)):
            for el in target.elts:
                self._bind(el)
        elif isinstance(target, ast.Starred):
            self._bind(target.value)


class Normalizer:
    MAX_INLINE_DEPTH = 32

    def __init__(self, src, parent=None, options=None):
        self.src = src
        self.fn = src.fn
        tree = src.tree
        params = tree.params
        if (
            isinstance(params.star_arg, cst.Param)
            or params.star_kwarg is not None
            or params.posonly_params
        ):
            node = (
                params.star_arg
                if isinstance(params.star_arg, cst.Param)
                else (params.star_kwarg or tree)
            )
            fence.refuse(
                src,
                node,
                msg="*args, **kwargs and positional-only parameters are not supported",
                hint="list the parameters one by one",
            )
        if tree.asynchronous is not None:
            fence.refuse(src, tree, kind="AsyncFunctionDef")
        # keyword-only parameters last: the compiled code takes them by position (api.parameters_of)
        self.params = [p.name.value for p in (*params.params, *params.kwonly_params)]
        finder = _Locals(src.ast_fn)
        self.locals = set(self.params) | finder.names
        self.assigned = finder.names
        self.bind_counts = finder.counts
        self.local_defs = {}  # name -> (libcst def, ast def, node) of a def or lambda written in the function
        self.defs_inlining = frozenset()  # the local functions being inlined (no recursion)
        self.static_locals = {}  # local names bound once to a module-level callable (relu = F.apply)
        self.subst = {}  # parameter -> the caller's atom, for inlined parameters never rebound
        self.dicts = {}  # local dict literal (its keys all string constants) -> {key: local name}
        self.dict_keys = {}  # local dict -> the keys written so far (reading another is refused)
        self.block = []
        self._loop_depth = 0
        self._cur_pos = None
        self.no_grad = False
        self.parent = parent
        # a method's class, when this function is one (found by its qualified name) and never
        # rebinds its first parameter: ``self.helper(z)`` is then inlined (``_self_method_call``)
        self.self_class = (
            _method_class(self.fn)
            if parent is None and self.params and self.params[0] not in finder.names
            else None
        )
        self.options = parent.options if parent is not None else dict(options or {})
        if parent is None:
            self.naming = Naming(finder.all_names | set(self.params))
            self.naming.root_locals = self.locals
            self.extra_ns = {}  # names the generated code needs beyond the user's globals
            self.inlining = [self.fn]
            # (the gradient's ``finalize`` also rebuilds dataclasses, namedtuples and registered objects)
            reserved = {**R.NAMESPACE, "finalize": _structures.finalize}
            self.captures = self.extra_ns[_CAPTURES] = Captures(
                self.fn, self.locals, self.naming, reserved
            )
            self.rename = {}  # the user's own names stay: sourcegrad's names make room (Captures.bind)
        else:
            self.naming = parent.naming
            self.extra_ns = parent.extra_ns
            self.captures = parent.captures
            self.inlining = parent.inlining + [self.fn]
            self.rename = self._inline_names(finder.all_names)
        self.captures.record_function(self.fn)

    def _inline_names(self, all_names):
        """Fresh names for an inlined function's locals, and live reads of what it captures: its
        closure variables through its own cells, its module's globals through that module
        (``captures.Captures.spell``)."""
        rename = {n: self.naming.unique(n) for n in sorted(self.locals)}
        code = self.fn.__code__
        cells = dict(zip(code.co_freevars, self.fn.__closure__ or ()))
        g = self.fn.__globals__
        for n in sorted(all_names - self.locals):
            if n in cells:
                where = cells[n]
            elif n in g:
                where = g
            elif hasattr(builtins, n):
                where = None
            else:
                continue  # not defined: refused where it is used
            spelled = self.captures.spell(n, where, g.get(n) if where is g else None)
            if spelled != n:
                rename[n] = spelled
        return rename

    def _local(self, name):
        return self.rename.get(name, name)

    def _text(self, node):
        """Source text of ``node`` as the generated code must read it (inlined names renamed)."""
        if self.dicts:
            found = _find_name(node, self.dicts)
            if found is not None:
                self._refuse_dict_value(found)
        if not self.rename and not self.subst:
            return _code(node)
        rename = dict(self.rename)
        rename.update({p: a.render() for p, a in self.subst.items()})
        return _code(node.visit(_Renamer(rename)))

    def _kept(self, node):
        """``_text`` of an expression kept as written (a condition, a range, what ``print``
        prints), with the local names it reads."""
        names = set()
        for n in _names_read(node):
            a = self.subst.get(n)
            names.update(ir.atom_names(a) if a is not None else (self.rename.get(n, n),))
        return ir.Text(self._text(node), names)

    def _range(self, n):
        """``range(n)`` for a trip count ``n`` (a ``Text``), as the generated code calls it."""
        return ir.Text(f"{self.captures.bind('range')}({n})", ir.idents(n))

    def _range_len(self, seq):
        """``range(len(seq))``, as the generated code calls it."""
        return ir.text(f"{self.captures.bind('range')}({self.captures.bind('len')}({{}}))", seq)

    # ---- entry -------------------------------------------------------------------------------
    def run(self):
        body = self._body()
        name = self.fn.__name__ if self.fn.__name__ != "<lambda>" else "lambda"
        return ir.Function(name, self.params, tuple(body), self.src.filename, self.fn.__qualname__)

    def _body(self, ret_var=None):
        """The function body, lowered so its one ``Return`` is the last statement."""
        body = self._block(self.src.tree.body)
        if not any(isinstance(s, ir.Return) for s in ir.walk(body)):
            fence.refuse(
                self.src,
                self.src.tree,
                msg="the function must end with a return statement",
                hint="return the value to differentiate",
            )
        body, ret = lower_exits(body, self.naming, ret_var)
        if ret is not None:
            body.append(ir.Return(ir.Name(ret), body[-1].pos))
        return body

    def _block(self, suite):
        saved, self.block = self.block, []
        if isinstance(suite, cst.SimpleStatementSuite):  # def f(x): return x (one line)
            for small in suite.body:
                self._small(small)
        else:
            for stmt in suite.body:
                self._stmt(stmt)
        out, self.block = self.block, saved
        return out

    def _emit(self, stmt):
        if self.no_grad:
            stmt = self._without_gradient(stmt)
        self.block.append(stmt)

    def _without_gradient(self, stmt):
        """Inside ``with no_grad():`` nothing is differentiated: every operation is constant."""
        if isinstance(stmt, ir.Assign) and stmt.op.kind != "nondiff":
            return ir.Assign(
                stmt.target,
                ir.Op(stmt.op.key, stmt.op.args, stmt.op.kwargs, stmt.op.text, "nondiff"),
                stmt.pos,
            )
        if isinstance(stmt, ir.SetItem) and isinstance(stmt.value, ir.Name):
            tmp = self.naming.temp()
            self.block.append(
                ir.Assign(tmp, ir.Op(None, (stmt.value,), (), stmt.value.id, "nondiff"), stmt.pos)
            )
            return ir.SetItem(stmt.target, stmt.index, ir.Name(tmp), stmt.pos)
        return stmt

    def _stmt_With(self, s):
        item = s.items[0] if len(s.items) == 1 else None
        call = item.item if item is not None else None
        if (
            item is None
            or item.asname is not None
            or not isinstance(call, cst.Call)
            or call.args
            or self._static_callee(call.func) is not no_grad
        ):
            fence.refuse(self.src, s, kind="With")
        saved, self.no_grad = self.no_grad, True
        try:
            for stmt in s.body.body:
                self._stmt(stmt)
        finally:
            self.no_grad = saved

    def _pos(self, node):
        """Where ``node`` is, to the line: a statement's own line, an expression's statement's.
        (Exact columns are resolved only for error messages: libcst metadata is slow.)"""
        pos = self.src.stmt_pos(node)
        if pos is None:
            return self._cur_pos or self.src.pos_of(node)
        self._cur_pos = pos
        return pos

    # ---- statements --------------------------------------------------------------------------
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

    def _small_Expr(self, s):
        v = s.value
        if isinstance(v, (cst.SimpleString, cst.ConcatenatedString)):
            return  # docstring
        if isinstance(v, cst.Call):
            func = v.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "append"
                and isinstance(func.value, cst.Name)
                and func.value.value in self.locals
            ):
                if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                    fence.refuse(self.src, v, msg="append takes one value")
                value = self._atom(v.args[0].value)
                self._emit(ir.Append(self._local(func.value.value), value, self._pos(s)))
                return
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "extend"
                and isinstance(func.value, cst.Name)
                and func.value.value in self.locals
            ):
                if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                    fence.refuse(self.src, v, msg="extend takes one sequence")
                self._extend(
                    self._local(func.value.value), self._atom(v.args[0].value), self._pos(s)
                )
                return
            callee = self._static_callee(v.func)
            if (
                getattr(callee, "__name__", None) == "at"
                and getattr(callee, "__self__", None) in R.UFUNC_AT
            ):
                return self._ufunc_at(v, R.UFUNC_AT[callee.__self__], s)
            if callee in _SIDE_EFFECT_ONLY or callee in _RUNTIME_CHECKS:
                self._emit(ir.Effect(self._kept(v), self._pos(s)))
                return
            if (
                callee is not None
                and getattr(callee, "__self__", None) is not None
                and not isinstance(callee.__self__, types.ModuleType)
                and R.lookup(callee) is None
                and not R.is_nondiff(callee)
            ):
                fence.refuse(
                    self.src,
                    s,
                    msg=f"the call {_code(v.func)}(...) changes an object outside the function, "
                    "which sourcegrad cannot differentiate",
                    hint="build a local value and return it instead",
                )
            self._op(v)  # refuses what the call itself does wrong (out=, in-place methods, ...)
            if callee is not None and (R.lookup(callee) is not None or R.is_nondiff(callee)):
                fence.refuse(
                    self.src,
                    s,
                    msg=f"the value of {_code(v.func)}(...) is discarded",
                    hint="assign the value to a variable, or remove the statement",
                )
            fence.refuse(
                self.src,
                s,
                msg=f"the call {_code(v.func)}(...) is made only for its side effect, "
                "which sourcegrad cannot differentiate",
                hint="assign its result to a variable and use it; objects outside the function cannot be changed",
            )
        if isinstance(v, (cst.Yield, cst.Await)):
            fence.refuse(self.src, v)
        fence.refuse(
            self.src,
            s,
            msg="an expression statement whose value is discarded is not supported",
            hint="assign the value to a variable, or remove the statement",
        )

    def _ufunc_at(self, call, fn, s):
        """``np.add.at(buf, idx, v)`` updates ``buf`` in place: ``buf = add_at(buf, idx, v)``,
        refused as ``buf += v`` is where another name sees ``buf`` (``aliasing.py``)."""
        args, kwargs = self._call_args(call)
        if kwargs or len(args) != 3 or not isinstance(args[0], ir.Name):
            fence.refuse(
                self.src,
                call,
                msg=f"{_code(call.func)}(buf, indices, values) is supported with three "
                "arguments by position, buf an array the function allocated",
                hint="buf = np.zeros(n); np.add.at(buf, idx, values)",
            )
        buf = call.args[0].value
        if len(self.inlining) == 1 and isinstance(buf, cst.Name) and buf.value in self.params:
            fence.refuse(
                self.src,
                call,
                msg=f"{_code(call.func)} writes into {buf.value!r}, an argument: it would change "
                "the caller's data",
                hint=f"work on a copy: buf = {buf.value}.copy(), then {_code(call.func)}(buf, ...)",
            )
        text = f"{self.captures.bind(fn.__name__)}({', '.join(a.render() for a in args)})"
        self._emit(
            ir.Assign(
                args[0].id,
                ir.Op(fn, args, (), text, self._kind(fn)),
                self._pos(s),
                inplace=True,
                node=s,
            )
        )

    def _extend(self, target, seq, pos):
        """``xs.extend(seq)``: one ``append`` per entry (a loop over ``seq`` by index when it is not
        a literal), so the list is changed in place as Python changes it."""
        if isinstance(seq, Tup):
            for a in seq:
                self._emit(ir.Append(target, a, pos))
            return
        if not isinstance(seq, ir.Name):
            fence.refuse(
                self.src,
                self._cur_pos,
                msg="extend takes a list, a tuple or a variable holding one",
            )
        k, entry = self.naming.temp("k"), self.naming.temp()
        saved, self.block = self.block, []
        self._emit(ir.Assign(entry, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos))
        self._emit(ir.Append(target, ir.Name(entry), pos))
        body, self.block = tuple(self.block), saved
        self._emit(ir.For(k, self._range_len(seq), body, pos))

    def _small_Return(self, s):
        if s.value is None:
            fence.refuse(
                self.src,
                s,
                msg="a differentiated function must return a value",
                hint="return the value to differentiate: return loss",
            )
        atom = self._atom(s.value)
        if isinstance(atom, Tup):
            fence.refuse(
                self.src,
                s,
                msg="returning a tuple is not supported yet",
                hint="return one value (a scalar for grad, any array for vjp)",
            )
        self._emit(ir.Return(atom, self._pos(s)))

    def _small_Assert(self, s):
        """``assert`` runs in the forward as written; its condition is never differentiated."""
        test = self._test(s.test)
        msg = self._test(s.msg) if s.msg is not None else None
        text = f"assert {test}" + (f", {msg}" if msg is not None else "")
        self._emit(
            ir.Effect(
                ir.Text(text, test.names | (msg.names if msg is not None else set())), self._pos(s)
            )
        )

    def _small_Break(self, s):
        self._in_loop_only(s, "break")
        self._emit(ir.Break(self._pos(s)))

    def _small_Continue(self, s):
        self._in_loop_only(s, "continue")
        self._emit(ir.Continue(self._pos(s)))

    def _in_loop_only(self, s, what):
        if not self._loop_depth:
            fence.refuse(self.src, s, msg=f"{what} outside a loop")

    def _small_Assign(self, s):
        pos = self._pos(s)
        if len(s.targets) > 1:
            value = self._atom(s.value)
            for t in s.targets:
                self._assign_target(t.target, value, pos)
            return
        target = s.targets[0].target
        if isinstance(target, cst.Name) and isinstance(s.value, cst.Lambda):
            self._local_lambda(target.value, s.value)
        elif isinstance(target, cst.Name) and isinstance(s.value, cst.Dict):
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
        else:
            fence.refuse(
                self.src,
                target,
                msg="only names, tuples of names and subscripts can be assigned to",
                hint="attributes of objects cannot be set in a differentiated function: keep the value in a variable",
            )

    def _small_AugAssign(self, s):
        pos = self._pos(s)
        op_type = AUGOPS.get(type(s.operator))
        if op_type is None:
            fence.refuse(
                self.src,
                s,
                msg=f"the augmented assignment {_op_text(s.operator)} is not supported",
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
            self._emit(ir.Assign(name, self._binop(fn, sym, ir.Name(name), right, s), pos))
        elif isinstance(s.target, cst.Subscript):
            base, index = self._subscript_parts(s.target)
            right = self._atom(s.value)
            cur = self.naming.temp()
            self._emit(ir.Assign(cur, self._getitem_op(base, index), pos))
            new = self.naming.temp()
            self._emit(ir.Assign(new, self._binop(fn, sym, ir.Name(cur), right, s), pos))
            self._emit(ir.SetItem(base.id, index, ir.Name(new), pos))
        else:
            fence.refuse(
                self.src, s.target, msg="only names and subscripts can be updated in place"
            )

    def _setitem(self, target, value, pos):
        base, index = self._subscript_parts(target)
        self._emit(ir.SetItem(base.id, index, value, pos))

    def _subscript_parts(self, node):
        if isinstance(node.value, cst.Subscript):
            inner, outer = node.value, node
            both = ", ".join(
                _code(e.slice) if not isinstance(e.slice, cst.Index) else _code(e.slice.value)
                for e in list(inner.slice) + list(outer.slice)
            )
            fence.refuse(
                self.src,
                node,
                kind="Subscript",
                msg="chained subscripts (a[i][j] = v) cannot be assigned into",
                hint=f"index once: {_code(inner.value)}[{both}] = ...",
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
        if isinstance(value, cst.IfExp):
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
            return
        if isinstance(op, (ir.Name, ir.Const, Tup)):
            op = self._copy_op(op)
        self._emit(ir.Assign(name, op, pos, node=value))

    # ---- compound statements ------------------------------------------------------------------
    def _nested(self, suite):
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            return tuple(self._block(suite))
        finally:
            self._depth -= 1

    def _stmt_If(self, s):
        pos = self._pos(s)
        test = self._test(s.test)
        body = self._nested(s.body)
        orelse = ()
        if isinstance(s.orelse, cst.If):
            saved, self.block = self.block, []
            self._depth = getattr(self, "_depth", 0) + 1
            try:
                self._stmt_If(s.orelse)
            finally:
                self._depth -= 1
            orelse, self.block = tuple(self.block), saved
        elif isinstance(s.orelse, cst.Else):
            orelse = self._nested(s.orelse.body)
        self._emit(ir.If(test, body, orelse, pos))

    def _stmt_While(self, s):
        if s.orelse is not None:
            fence.refuse(
                self.src,
                s.orelse,
                msg="while/else is not supported",
                hint="use a flag variable and an if after the loop",
            )
        test = self._test(s.test)
        self._loop_depth += 1
        try:
            body = self._nested(s.body)
        finally:
            self._loop_depth -= 1
        self._emit(ir.While(test, body, self._pos(s)))

    def _stmt_For(self, s):
        pos = self._pos(s)
        if s.orelse is not None:
            fence.refuse(
                self.src,
                s.orelse,
                msg="for/else is not supported",
                hint="use a flag variable and an if after the loop",
            )
        if s.asynchronous is not None:
            fence.refuse(self.src, s, kind="AsyncFunctionDef")
        s, checkpoint = self._checkpoint_marker(s)
        trips = self._static_trips(s) if checkpoint is None else None
        if trips is not None:
            self._unroll(s, trips, pos)
            return
        range_text, target, prologue = self._loop_iter(s)
        self._depth = getattr(self, "_depth", 0) + 1
        self._loop_depth += 1
        try:
            saved, self.block = self.block, []
            for build in prologue:
                build()
            for stmt in s.body.body:
                self._stmt(stmt)
            body, self.block = tuple(self.block), saved
        finally:
            self._depth -= 1
            self._loop_depth -= 1
        self._emit(ir.For(target, range_text, body, pos, checkpoint))

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
        if _find(s.body, (cst.Break, cst.Continue, cst.Return)) is not None:
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
        for v in captured:  # unrolled: the code holds the bounds' values, so they must stay
            self._static_value(v)
        return list(trips)

    def _unroll(self, s, trips, pos):
        """A loop with a small trip count known now: its body once per value, in order."""
        target = self._local(s.target.value)
        for value in trips:
            self._emit(ir.Assign(target, self._copy_op(ir.Const(value, str(value))), pos))
            for stmt in s.body.body:
                self._stmt(stmt)

    def _loop_iter(self, s):
        """(range text, index variable, statements that bind the user's targets per iteration)."""
        it, target = s.iter, s.target
        pos = self._pos(s)
        if isinstance(it, cst.Call) and self._static_callee(it.func) is builtins.range:
            if not isinstance(target, cst.Name):
                fence.refuse(self.src, target, msg="a range loop needs a single loop variable")
            self._check_text(it)
            return self._kept(it), self._local(target.value), []
        callee = self._static_callee(it.func) if isinstance(it, cst.Call) else None
        if callee is builtins.enumerate:
            if not isinstance(target, cst.Tuple) or len(target.elements) != 2:
                fence.refuse(
                    self.src,
                    target,
                    msg="enumerate(...) needs two loop targets: index, value",
                    hint="for i, x in enumerate(xs):",
                )
            idx_target, value_target = target.elements[0].value, target.elements[1].value
            if not isinstance(idx_target, cst.Name):
                fence.refuse(
                    self.src, idx_target, msg="the index of enumerate must be a plain name"
                )
            if len(it.args) != 1 or it.args[0].keyword is not None or it.args[0].star:
                fence.refuse(
                    self.src,
                    it,
                    msg="enumerate takes one sequence here (no start=)",
                    hint="for i, x in enumerate(xs): and add the offset to i in the body",
                )
            k = self._local(idx_target.value)
            inner = it.args[0].value
            if isinstance(inner, cst.Call) and self._static_callee(inner.func) is builtins.zip:
                # enumerate(zip(xs, ys))
                n, binders = self._zip_binders(inner, value_target, k, s, pos)
                return self._range(n), k, binders
            seq = self._iterated(self._atom(inner), s, pos)
            return self._range_len(seq), k, [lambda: self._bind_elem(value_target, seq, k, pos)]
        if callee is builtins.zip:
            k = self.naming.temp("k")
            n, binders = self._zip_binders(it, target, k, s, pos)
            return self._range(n), k, binders
        if callee is builtins.reversed:
            seq = self._iterated(self._atom(it.args[0].value), s, pos)
            k = self.naming.temp("k")
            rng = ir.text(
                f"{self.captures.bind('range')}({self.captures.bind('len')}({{}}) - 1, -1, -1)", seq
            )
            return rng, k, [lambda: self._bind_elem(target, seq, k, pos)]
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
            and _indexes_by(s.body, it.value, target.value)
        ):
            return self._dict_or_sequence_loop(it, target, s, pos)
        if (
            callee is None
            and isinstance(it, cst.Call)
            and isinstance(it.func, cst.Attribute)
            and it.func.attr.value in ("items", "keys", "values")
            and not it.args
            and isinstance(it.func.value, cst.Name)
            and it.func.value.value in self.locals
        ):
            return self._dict_loop(it.func.attr.value, self._atom(it.func.value), target, pos)
        seq = self._atom(it)
        if isinstance(seq, ir.Name):
            seq = self._iterated(seq, s, pos)
            self._emit(
                ir.Effect(ir.text(f"{self.captures.bind('check_sequence')}({{}})", seq), pos)
            )
        if isinstance(seq, ir.Const):
            fence.refuse(
                self.src,
                it,
                msg="cannot loop over a module-level constant or literal",
                hint="loop over range(len(...)) and index it, or pass the values in as an argument",
            )
        k = self.naming.temp("k")
        return self._range_len(seq), k, [lambda: self._bind_elem(target, seq, k, pos)]

    def _zip_binders(self, it, target, k, s, pos):
        """``zip(xs, ys)`` read at index ``k``: (trip count text, one binder per loop target)."""
        seqs = [self._iterated(self._atom(a.value), s, pos) for a in it.args]
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(seqs):
            fence.refuse(
                self.src,
                target,
                msg="zip(...) needs one loop target per sequence",
                hint="for a, b in zip(xs, ys):",
            )
        length = self.captures.bind("len")
        n = ", ".join(f"{length}({q.render()})" for q in seqs)
        trips = ir.Text(
            f"{self.captures.bind('min')}({n})", [x for q in seqs for x in ir.atom_names(q)]
        )
        return trips, [
            (lambda el=el, q=q: self._bind_elem(el.value, q, k, pos))
            for el, q in zip(target.elements, seqs)
        ]

    def _iterated(self, seq, s, pos):
        """The sequence loop ``s`` reads by index: ``seq``, or a snapshot of it when the body
        rebinds the name (Python iterates the object the name held when the loop began)."""
        rebound = {self._local(n) for n in _assigned_in(s.body) if n in self.locals}
        if isinstance(seq, ir.Name) and seq.id in rebound:
            snapshot = self.naming.temp("seq")
            self.naming.snapshots[snapshot] = seq.id
            self._emit(ir.Assign(snapshot, self._copy_op(seq), pos))
            return ir.Name(snapshot)
        return seq

    def _dict_loop(self, method, d, target, pos):
        """``for k, v in d.items()`` (and keys/values): a loop over the keys, read by key."""
        keys = self.naming.temp("keys")
        self._emit(ir.Assign(keys, ir.Op(list, (d,), (), f"list({d.render()})", "nondiff"), pos))
        i = self.naming.temp("k")
        key_target = value_target = None
        if method == "items":
            if not isinstance(target, cst.Tuple) or len(target.elements) != 2:
                fence.refuse(
                    self.src,
                    target,
                    msg="d.items() needs two loop targets: key, value",
                    hint="for k, v in d.items():",
                )
            key_target, value_target = target.elements[0].value, target.elements[1].value
        elif method == "keys":
            key_target = target
        else:
            value_target = target

        def bind():
            key = self.naming.temp()
            self._emit(
                ir.Assign(
                    key,
                    ir.Op(
                        None,
                        (ir.Name(keys), ir.Index((ir.Name(i),), False)),
                        (),
                        f"{keys}[{i}]",
                        "nondiff",
                    ),
                    pos,
                )
            )
            if key_target is not None:
                self._assign_target(key_target, ir.Name(key), pos)
            if value_target is not None:
                self._bind_value(
                    value_target, self._getitem_op(d, ir.Index((ir.Name(key),), False)), pos
                )

        return self._range_len(ir.Name(keys)), i, [bind]

    def _dict_or_sequence_loop(self, it, target, s, pos):
        """``for x in name``: a dict's keys when ``name`` holds a dict, its entries otherwise. The
        loop runs over a list of the keys (a dict) or over the sequence itself, read by index."""
        seq = self._iterated(self._atom(it), s, pos)
        keys = self.naming.temp("keys")
        self._emit(
            ir.Assign(
                keys,
                ir.Op(
                    None,
                    (seq,),
                    (),
                    f"list({seq.id}) if isinstance({seq.id}, dict) else None",
                    "nondiff",
                ),
                pos,
            )
        )
        k = self.naming.temp("k")
        rng = ir.text(
            f"{self.captures.bind('range')}({self.captures.bind('len')}({{0}} if {{0}} is not None else {{1}}))",
            ir.Name(keys),
            seq,
        )

        def bind():
            key = self.naming.temp()
            self._emit(
                ir.If(
                    ir.text("{} is not None", ir.Name(keys)),
                    (
                        ir.Assign(
                            key,
                            ir.Op(
                                None,
                                (ir.Name(keys), ir.Index((ir.Name(k),), False)),
                                (),
                                f"{keys}[{k}]",
                                "nondiff",
                            ),
                            pos,
                        ),
                    ),
                    (ir.Assign(key, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos),),
                    pos,
                )
            )
            self._assign_target(target, ir.Name(key), pos)

        return rng, k, [bind]

    def _dict_view(self, node):
        """``d.keys()``, ``d.values()``, ``d.items()`` as a value (a list built by a loop over the
        keys), and ``sorted(d)`` (its keys, no gradient)."""
        func = node.func
        if (
            isinstance(func, cst.Name)
            and func.value == "sorted"
            and func.value not in self.locals
            and self._static_callee(func) is builtins.sorted
            and len(node.args) == 1
            and not node.args[0].keyword
            and not node.args[0].star
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value in self.locals
        ):
            if node.args[0].value.value in self.dicts:
                self._refuse_dict_value(node.args[0].value)
            d = self._atom(node.args[0].value)
            fn = self._alias("sorted_keys", _sorted_keys)
            return ir.Op(None, (d,), (), f"{fn}({d.render()})", "nondiff")
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("items", "keys", "values")
            and isinstance(func.value, cst.Name)
            and func.value.value in self.locals
        ):
            return None
        if func.value.value in self.dicts:
            self._refuse_dict_value(func.value)
        if node.args:
            fence.refuse(self.src, node, msg=f".{func.attr.value}() takes no arguments")
        method, pos = func.attr.value, self._pos(node)
        d = self._atom(func.value)
        keys = self.naming.temp("keys")
        self._emit(
            ir.Assign(keys, ir.Op(list, (d,), (), f"list({d.render()}.keys())", "nondiff"), pos)
        )
        if method == "keys":
            return ir.Name(keys)
        result = self.naming.temp("list")
        self._emit(ir.Assign(result, self._copy_op(_tup([], True)), pos))
        i = self.naming.temp("k")
        saved, self.block = self.block, []
        key, value = self.naming.temp(), self.naming.temp()
        self._emit(
            ir.Assign(
                key,
                ir.Op(
                    None,
                    (ir.Name(keys), ir.Index((ir.Name(i),), False)),
                    (),
                    f"{keys}[{i}]",
                    "nondiff",
                ),
                pos,
            )
        )
        self._emit(ir.Assign(value, self._getitem_op(d, ir.Index((ir.Name(key),), False)), pos))
        if method == "values":
            self._emit(ir.Append(result, ir.Name(value), pos))
        else:
            pair = self.naming.temp()
            self._emit(
                ir.Assign(pair, self._copy_op(_tup([ir.Name(key), ir.Name(value)], False)), pos)
            )
            self._emit(ir.Append(result, ir.Name(pair), pos))
        body, self.block = tuple(self.block), saved
        self._emit(ir.For(i, self._range_len(ir.Name(keys)), body, pos))
        return ir.Name(result)

    # ---- a local dict literal: one local name per string key ----------------------------------
    def _local_dict(self, name, node, pos):
        """``d = {"a": x, "b": y}`` (and ``d = {}``): every key a string constant, so each entry is
        a local variable of its own; ``d["a"]`` reads it and ``d["a"] = v`` rebinds it."""
        if name in self.params or self.bind_counts.get(name, 0) != 1:
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f"a local dict literal must be the only value the name "
                f"{name!r} is ever given (it is bound elsewhere too)",
                hint="give the local dict a name of its own, assigned once",
            )
        self.dicts.setdefault(name, {})
        for el in node.elements:
            if isinstance(el, cst.StarredDictElement):
                fence.refuse(
                    self.src,
                    el,
                    kind="Dict",
                    msg="**unpacking in a dict literal is not supported",
                    hint='write the entries out: {"a": x, "b": y}',
                )
            key = self._dict_key(el.key)
            value = self._atom(el.value)
            self._emit(ir.Assign(self._dict_slot(name, key), self._copy_op(value), pos))
        self.dict_keys[name] = {self._dict_key(el.key) for el in node.elements}

    def _dict_key(self, node):
        if isinstance(node, cst.SimpleString) and isinstance(_literal(node.value), str):
            return _literal(node.value)
        fence.refuse(
            self.src,
            node,
            kind="Dict",
            msg='a local dict literal\'s keys must be string constants (d["name"]) known when the function is compiled',
            hint="write the key as a string literal, or keep the values in a list and index it",
        )

    def _dict_slot(self, name, key):
        slots = self.dicts[name]
        if key not in slots:
            safe = "".join(c if c.isalnum() or c == "_" else "_" for c in key)
            slots[key] = self.naming.unique(f"{self._local(name)}_{safe}")
            self.locals.add(slots[key])
        return slots[key]

    def _dict_base(self, node):
        base = node.value
        if isinstance(base, cst.Name) and base.value in self.dicts:
            return base.value
        return None

    def _dict_entry(self, node, read):
        name = self._dict_base(node)
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg="a local dict is indexed by one string key",
                hint='d["name"]',
            )
        key = self._dict_key(node.slice[0].slice.value)
        known = self.dict_keys.setdefault(name, set())
        if read and key not in known:
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f"the local dict {name!r} has no entry {key!r} here",
                hint=f"assign {name}[{key!r}] = ... before reading it",
            )
        known.add(key)
        return self._dict_slot(name, key)

    def _dict_write(self, target, value, pos):
        self._emit(ir.Assign(self._dict_entry(target, read=False), self._copy_op(value), pos))

    def _refuse_dict_value(self, node):
        name = node.value
        fence.refuse(
            self.src,
            node,
            kind="Dict",
            msg=f'the local dict {name!r} can only be read and written by string key ({name}["key"]); '
            "it cannot be returned, passed to a function, looped over or used as a whole",
            hint="return or pass the entries themselves, or take a dict as a parameter instead",
        )

    def _bind_value(self, target, op, pos):
        if isinstance(target, cst.Name):
            self._emit(ir.Assign(self._local(target.value), op, pos))
        else:
            tmp = self.naming.temp()
            self._emit(ir.Assign(tmp, op, pos))
            self._assign_target(target, ir.Name(tmp), pos)

    def _bind_elem(self, target, seq, k, pos):
        self._bind_value(target, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos)

    def _ifexp(self, name, node, pos):
        test = self._test(node.test)
        saved, self.block = self.block, []
        self._assign_expr(name, node.body, pos)
        body, self.block = tuple(self.block), []
        self._assign_expr(name, node.orelse, pos)
        orelse, self.block = tuple(self.block), saved
        self._emit(ir.If(test, body, orelse, pos))

    # ---- conditions: kept as text (never differentiated), but fenced ---------------------------
    def _test(self, node):
        self._check_text(node)
        return self._kept(node)

    def _check_text(self, node):
        """A condition or bound is run as written: refuse what could not run the same way."""
        for bad in (cst.NamedExpr, cst.Lambda, cst.Yield, cst.Await):
            found = _find(node, bad)
            if found is not None:
                fence.refuse(self.src, found)

    # ---- expressions ---------------------------------------------------------------------------
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
        return ir.Const(self._static_value(node), self._text(node))

    def _expr_Integer(self, node):
        return ir.Const(_literal(node.value), node.value)

    _expr_Float = _expr_Integer
    _expr_Imaginary = _expr_Integer

    def _expr_SimpleString(self, node):
        return ir.Const(_literal(node.value), node.value)

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
            return _tup(items, is_list)
        literal = _literal_const(_tup(items, is_list))
        if literal is not None:
            return literal
        pos = self._pos(node)
        return _tup([self._named(_literal_const(a) or a, pos) for a in items], is_list)

    def _expr_UnaryOperation(self, node):
        fn, sym = UNOPS[type(node.operator)]
        if fn is operator.neg and isinstance(
            node.expression, (cst.Integer, cst.Float, cst.Imaginary)
        ):
            lit = node.expression
            return ir.Const(-_literal(lit.value), "-" + lit.value)
        x = self._atom(node.expression)
        return ir.Op(fn, (x,), (), f"{sym}{x.render()}", self._kind(fn))

    def _expr_BinaryOperation(self, node):
        entry = BINOPS.get(type(node.operator))
        if entry is None:
            fence.refuse(
                self.src,
                node,
                msg=f"the operator {_op_text(node.operator)} is not supported",
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

    def _expr_ListComp(self, node):
        return self._comprehension(node)

    def _expr_GeneratorExp(self, node):
        return self._comprehension(node)

    def _comprehension(self, node):
        """``[elt for x in xs if c]``: a list built by a loop (its names stay inside it)."""
        result = self.naming.temp("list")
        pos = self._pos(node)
        self._emit(ir.Assign(result, self._copy_op(_tup([], True)), pos))
        saved_locals, saved_rename = set(self.locals), dict(self.rename)
        try:
            self._comp_loops(node, node.for_in, result, pos)
        finally:
            self.locals, self.rename = saved_locals, saved_rename
        return ir.Name(result)

    def _comp_loops(self, node, comp_for, result, pos):
        if comp_for.asynchronous is not None:
            fence.refuse(self.src, comp_for, kind="AsyncFunctionDef")
        for name in _target_names(comp_for.target):
            self.locals.add(name)
            self.rename[name] = self.naming.unique(name)
        # read by _loop_iter: [params[k] for k in params] is over a dict's keys
        elt = getattr(node, "elt", None)
        fake = cst.For(
            target=comp_for.target,
            iter=comp_for.iter,
            body=cst.IndentedBlock(
                body=[cst.SimpleStatementLine([cst.Expr(elt)])] if elt is not None else []
            ),
        )
        self._src_alias(fake, comp_for)
        range_text, target, prologue = self._loop_iter(fake)
        self._loop_depth += 1
        self._depth = getattr(self, "_depth", 0) + 1
        saved, self.block = self.block, []
        try:
            for build in prologue:
                build()
            self._comp_body(node, comp_for, list(comp_for.ifs), result, pos)
            body, self.block = tuple(self.block), saved
        finally:
            self._loop_depth -= 1
            self._depth -= 1
        self._emit(ir.For(target, range_text, body, pos))

    def _comp_body(self, node, comp_for, ifs, result, pos):
        if ifs:
            test = self._test(ifs[0].test)
            saved, self.block = self.block, []
            self._comp_body(node, comp_for, ifs[1:], result, pos)
            body, self.block = tuple(self.block), saved
            self._emit(ir.If(test, body, (), pos))
        elif comp_for.inner_for_in is not None:
            self._comp_loops(node, comp_for.inner_for_in, result, pos)
        else:
            self._emit(ir.Append(result, self._atom(node.elt), pos))

    def _src_alias(self, new, old):
        """Positions of a node built here are those of the node it stands for."""
        self.src.alias(new, old)

    def _expr_IfExp(self, node):
        tmp = self.naming.temp()
        self._ifexp(tmp, node, self._pos(node))
        return ir.Name(tmp)

    def _expr_Attribute(self, node):
        base = node.value
        if self._is_local_expr(base):
            attr = node.attr.value
            if (
                attr not in R.ATTRIBUTES
                and isinstance(base, cst.Call)
                and not self._is_local_expr(base.func)
                and _result_fields(self._static_callee(base.func)) is not None
            ):
                return self._result_field(node, base, attr)  # np.linalg.eigh(a).eigenvectors
            x = self._atom(base)
            if (
                attr not in R.ATTRIBUTES
                and isinstance(base, cst.Call)
                and self._static_callee(base.func) in R.CONSTANT_OBJECTS
            ):
                # np.finfo(x.dtype).eps
                return ir.Op(ATTRIBUTE_READ, (x,), (), f"{x.render()}.{attr}", "nondiff")
            if attr not in R.ATTRIBUTES and isinstance(base, cst.Call):
                fence.refuse(
                    self.src,
                    node,
                    msg=f"{_code(node)}: an attribute of a call's result is read only for "
                    "the named fields of numpy's namedtuple results (np.linalg.eigh(a).eigenvectors, "
                    f"svd(a).S, qr(a).R, slogdet(a).logabsdet) and the array attributes "
                    f"{', '.join(sorted(R.ATTRIBUTES))}",
                    hint="assign the result to a variable first, or index it: result[0]",
                )
            if attr in _ARRAY_ONLY_ATTRIBUTES and attr not in R.ATTRIBUTES:  # .imag has a rule now
                fence.refuse(
                    self.src,
                    node,
                    msg=f"{_code(node)}: sourcegrad reads only the array attributes "
                    f"{', '.join(sorted(R.ATTRIBUTES))}; .{attr} is not differentiated through (an object's "
                    f"field named {attr!r} neither: it would be read as the array attribute)",
                    hint="compute what you need from the array's values, or rename the field",
                )
            if attr not in R.ATTRIBUTES:
                return self._field_read(node, x, attr)
            key = R.ATTRIBUTES[attr]
            if key is None:
                return ir.Op(ATTRIBUTE_READ, (x,), (), f"{x.render()}.{attr}", "nondiff")
            return ir.Op(key, (x,), (), f"{x.render()}.{attr}", "call")
        return ir.Const(self._static_value(node), self._text(node))

    def _field_read(self, node, x, attr):
        """``p.w`` of a local value: an attribute of a dataclass, namedtuple or registered object
        (``runtime/structures.py``), differentiated as a dict's entry is; a gradient reaching an
        attribute that is no differentiable field is refused when the backward runs."""
        if not isinstance(x, ir.Name):
            fence.refuse(
                self.src,
                node,
                msg=f"{_code(node)}: an attribute of a literal is not supported",
                hint="read attributes of arguments (dataclasses, namedtuples, registered objects)",
            )
        return ir.Op(
            _structures.field,
            (x, ir.Const(attr, repr(attr))),
            (),
            f"{x.render()}.{attr}",
            self._kind(_structures.field),
        )

    def _result_field(self, node, call, attr):
        """``np.linalg.eigh(a).eigenvectors``: a named field of a library function's namedtuple
        result is the entry at its index (``np.linalg.eigh(a)[1]``)."""
        fields, keywords = _result_fields(self._static_callee(call.func))
        other = [a for a in call.args[1:] if a.keyword is None or a.keyword.value not in keywords]
        if (
            attr not in fields
            or other
            or not call.args
            or call.args[0].keyword is not None
            or any(a.star for a in call.args)
        ):
            what = (
                f"has no field {attr!r} (its fields: {', '.join(fields)})"
                if attr not in fields
                else f"is read by field name only when called with the array and {', '.join(keywords) or 'nothing else'}, "
                "which keep it a namedtuple"
            )
            fence.refuse(
                self.src,
                node,
                msg=f"{_code(node)}: the result of {_code(call.func)}(...) {what}",
                hint="assign the result to a variable and index it: result[0]",
            )
        result = self._atom(call)
        index = ir.Index((ir.Const(fields.index(attr), str(fields.index(attr))),), False)
        return self._getitem_op(result, index)

    def _expr_Subscript(self, node):
        if self._dict_base(node) is not None:
            return ir.Name(self._dict_entry(node, read=True))
        base = self._named(self._atom(node.value), self._pos(node))
        index = self._index(node)
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

    def _named(self, atom, pos):
        """``atom``, or a temporary holding it when it is a tuple literal: ``(a, b)[k]`` indexes a
        name, so the entries' adjoints come back through the tuple's (zero where none came)."""
        if not isinstance(atom, Tup):
            return atom
        tmp = self.naming.temp()
        self._emit(ir.Assign(tmp, self._copy_op(atom), pos))
        return ir.Name(tmp)

    def _getitem_op(self, base, index):
        return ir.Op(
            operator.getitem, (base, index), (), f"{base.render()}[{index.render()}]", "call"
        )

    def _index(self, node):
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

    def _expr_Call(self, node):
        func = node.func
        view = self._dict_view(node)
        if view is not None:
            return view
        args, kwargs = self._call_args(node)
        if isinstance(func, cst.Name) and func.value in self.local_defs:
            return self._call_local_def(node, func.value, args, kwargs)
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and self.self_class is not None
            and func.value.value == self.params[0]
            and hasattr(self.self_class, func.attr.value)
        ):
            return self._self_method_call(node, func, args, kwargs)
        if isinstance(func, cst.Attribute) and self._is_local_expr(func.value):
            return self._method_call(node, func, args, kwargs)
        callee = self._static_callee(func)
        if callee is None:
            fence.refuse(
                self.src,
                func,
                msg="only functions named at module level (or array methods) can be called",
                hint="call a module-level function, or an array method",
            )
        text = f"{self._text(func)}({self._render_args(args, kwargs)})"
        return self._call_op(node, callee, args, kwargs, text, _code(func))

    def _call_args(self, node):
        args, kwargs = [], []
        for a in node.args:
            if a.star:
                fence.refuse(self.src, a, kind="Starred")
            atom = self._atom(a.value)
            if a.keyword is not None:
                if a.keyword.value == "out":
                    fence.refuse(
                        self.src,
                        a,
                        msg="out= arguments are not supported",
                        hint="assign the result to a variable instead",
                    )
                kwargs.append((a.keyword.value, atom))
            else:
                args.append(atom)
        return tuple(args), tuple(kwargs)

    @staticmethod
    def _render_args(args, kwargs):
        return ", ".join([a.render() for a in args] + [f"{k}={v.render()}" for k, v in kwargs])

    def _self_method_call(self, node, func, args, kwargs):
        """``self.helper(z)`` in a method: the class's own method (or static method), inlined as a
        module-level helper is. It is resolved now from the class the method is defined in; the
        forward checks that ``self``'s class still means that function (a subclass may override it)."""
        cls, name = self.self_class, func.attr.value
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, staticmethod) and isinstance(raw.__func__, types.FunctionType):
            fn, bound = raw.__func__, False
        elif isinstance(raw, types.FunctionType):
            fn, bound = raw, True
        else:
            fence.refuse(
                self.src,
                node,
                msg=f"{_code(func)}(...): {cls.__name__}.{name} is a "
                f"{type(raw).__name__}, not a method sourcegrad can inline",
                hint="call a plain method (def name(self, ...)) or a static method, or a module-level function",
            )
        this = self._atom(func.value)
        pos = self._pos(node)
        check = self._alias("check_method", _structures.check_method)
        target = self._alias(f"{cls.__name__}_{name}", fn)
        where = f"{pos.filename.rsplit('/', 1)[-1]}:{pos.line}"
        self._emit(ir.Effect(ir.text(f"{check}({{}}, {name!r}, {target}, {where!r})", this), pos))
        return self._inline(
            node,
            fn,
            ((this,) if bound else ()) + tuple(args),
            kwargs,
            self_class=cls if bound else None,
        )

    def _method_call(self, node, func, args, kwargs):
        x = self._atom(func.value)
        name = func.attr.value
        key = R.METHODS.get(name) or R.GENERATOR_METHODS.get(name)  # rng.normal(size=3): a draw
        text = f"{x.render()}.{name}({self._render_args(args, kwargs)})"
        if key is None:
            if name in _INPLACE_METHODS:
                fence.refuse(
                    self.src,
                    node,
                    msg=f"the in-place array method .{name}() is not supported",
                    hint=_INPLACE_METHODS[name],
                )
            fence.refuse(
                self.src,
                node,
                msg=f"the method .{name}() is not supported",
                hint=(
                    f"call the numpy function instead, e.g. np.{name}(x, ...)"
                    if hasattr(np, name)
                    else "supported array methods: "
                    + ", ".join(sorted(R.METHODS))
                    + "; a method of an object is "
                    "compiled only as self.method(...) inside a method of a module-level class: call a "
                    "module-level function with the object's arrays instead"
                ),
            )
        if name in ("reshape", "transpose") and len(args) > 1:
            args = (_tup(args, False),)  # x.reshape(2, 3) == np.reshape(x, (2, 3))
        return self._call_op(node, key, (x,) + args, kwargs, text, f"ndarray.{name}")

    def _call_op(self, node, callee, args, kwargs, text, name):
        callee = R.variant(callee, kwargs)  # np.sum(x, where=m): a masked sum, with its own rule
        if (
            callee is np.einsum
            and args
            and not (isinstance(args[0], ir.Const) and isinstance(args[0].value, str))
        ):
            args, text = self._einsum_subscripts(node, args, text)
        if self.no_grad or R.is_nondiff(callee):
            return ir.Op(callee, args, kwargs, text, "nondiff")
        if R.lookup(callee) is not None:
            return ir.Op(callee, args, kwargs, text, "call")
        cls = getattr(callee, "__self__", None)
        if (
            isinstance(cls, type)
            and issubclass(cls, Function)
            and getattr(callee, "__name__", "") == "apply"
        ):
            return self._custom_function(node, cls, args, kwargs)
        if isinstance(callee, types.FunctionType) and _is_users(callee):
            return self._inline(node, callee, args, kwargs)
        if hasattr(callee, "refusal_in_gradient"):  # made by sourcegrad
            return self._gradient_call(node, callee, args, kwargs, text, name)
        # no rule: it runs as a constant, and the gate (gate.py) refuses it if an active value flows in
        return ir.Op(callee, args, kwargs, text, "nondiff")

    def _einsum_subscripts(self, node, args, text):
        """``np.einsum(a, [0, 1], b, [1, 2], [0, 2])`` (operands with index lists) is
        ``np.einsum("ab,bc->ac", a, b)``: the rule reads the subscripts as a string."""
        pairs, out = list(args), None
        if len(pairs) % 2:
            out = pairs.pop()
        operands, terms = pairs[0::2], pairs[1::2]

        def letters(sub):
            if not isinstance(sub, Tup) or not all(isinstance(a, ir.Const) for a in sub):
                fence.refuse(
                    self.src,
                    node,
                    msg="np.einsum's index lists must be written as literal lists of integers",
                    hint='or pass the subscripts as a string: np.einsum("ij,jk->ik", a, b)',
                )
            chars = []
            for a in sub:
                if a.value is Ellipsis:
                    chars.append("...")
                elif isinstance(a.value, int) and 0 <= a.value < 52:
                    chars.append("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[a.value])
                else:
                    fence.refuse(
                        self.src,
                        node,
                        msg=f"np.einsum index {a.value!r} is not an integer in [0, 52)",
                    )
            return "".join(chars)

        spec = ",".join(letters(t) for t in terms) + (
            "->" + letters(out) if out is not None else ""
        )
        new_args = (ir.Const(spec, repr(spec)),) + tuple(operands)
        return new_args, f"{text.split('(')[0]}({', '.join(a.render() for a in new_args)})"

    def _kind(self, fn):
        return "nondiff" if self.no_grad or R.is_nondiff(fn) else "call"

    # ---- calls to the user's own functions: inlined ----------------------------------------------
    def _inline(self, node, callee, args, kwargs, self_class=None):
        """Compile a call to a Python function by inlining its (normalized) body here
        (``self_class``: the class of its first argument, for a method called on ``self``)."""
        if callee in self.inlining:
            fence.refuse(
                self.src,
                node,
                msg=f"recursive call to {callee.__qualname__} cannot be differentiated",
                hint="write the recursion as a loop",
            )
        if len(self.inlining) > self.MAX_INLINE_DEPTH:
            fence.refuse(
                self.src,
                node,
                msg="calls nest too deeply to inline",
                hint=f"at most {self.MAX_INLINE_DEPTH} nested calls of user functions are compiled",
            )
        try:
            src = get_source(callee)
        except NoSourceError as e:
            raise NoSourceError(
                f"{e}\n(called from {self.fn.__qualname__}, {self._pos(node).filename}:{self._pos(node).line})"
            ) from None
        child = Normalizer(src, parent=self)
        if self_class is not None and child.params and child.params[0] not in child.assigned:
            child.self_class = self_class
        return self._inline_call(node, child, inspect.signature(callee), callee, args, kwargs)

    def _inline_call(self, node, child, signature, callee, args, kwargs):
        """Bind the arguments to ``child``'s parameters and lower its body here; its result."""
        src = child.src
        child.no_grad = self.no_grad
        try:
            bound = signature.bind(*args, **dict(kwargs))
        except TypeError as e:
            fence.refuse(
                self.src,
                node,
                msg=f"cannot call {callee.__qualname__} with these arguments: {e}",
                hint=f"call it as its signature says: {callee.__name__}{signature}",
            )
        pos = self._pos(node)
        written = _written_into(src.ast_fn)
        for p in child.params:
            if p in bound.arguments:
                value = bound.arguments[p]
            else:
                default = bound.signature.parameters[p].default
                value = default if isinstance(default, ir.Const) else self._constant(default, p)
            # a module-level or closure value, or a default
            if p in written and isinstance(value, ir.Const):
                what = value.render() if p in bound.arguments else "its default value"
                fence.refuse(
                    self.src,
                    node,
                    msg=f"{callee.__qualname__} writes into its parameter {p!r}, which "
                    f"is bound to {what}, a value from outside the function",
                    hint=f"pass a copy: {callee.__name__}(np.copy(...))",
                )
            if p in child.assigned or p in written:  # (u[0] = 0.0 writes through a name of its own)
                self._emit(ir.Assign(child._local(p), self._copy_op(value), pos))
            else:  # never rebound in the callee: read the argument itself
                child.subst[p] = value
        body = child._body()
        self.block.extend(body[:-1])
        return body[-1].value

    # ---- a def or lambda inside the function: inlined where it is called -----------------------
    def _stmt_FunctionDef(self, s):
        if s.decorators or s.asynchronous is not None:
            fence.refuse(
                self.src,
                s,
                kind="AsyncFunctionDef" if s.asynchronous is not None else None,
                msg=None
                if s.asynchronous is not None
                else "a decorated def inside a differentiated function is not supported",
                hint="define the decorated function at module level",
            )
        self._local_def(s.name.value, s, s)

    def _local_lambda(self, name, lam):
        """``h = lambda t: ...``: a local function ``def h(t): return ...``."""
        ret = cst.Return(value=lam.body)
        self._src_alias(ret, lam.body)
        tree = cst.FunctionDef(
            name=cst.Name(name), params=lam.params, body=cst.SimpleStatementSuite(body=[ret])
        )
        self._src_alias(tree, lam)
        self._local_def(name, tree, lam)

    def _local_def(self, name, tree, node):
        # (an unrolled loop: the same def)
        again = name in self.local_defs and self.local_defs[name][2] is not node
        if again or self.bind_counts.get(name, 0) > (1 if isinstance(node, cst.Lambda) else 0):
            fence.refuse(
                self.src,
                node,
                msg=f"the local function {name!r} is defined more than once or rebound",
                hint="give each local function its own name, or define it at module level",
            )
        afn = ast.parse(_code(tree.with_changes(leading_lines=(), decorators=()))).body[0]
        self.local_defs[name] = (tree, afn, node)

    def _call_local_def(self, node, name, args, kwargs):
        """A call of a def or lambda written in this function: its body inlined here, with this
        function's locals visible (it reads them as they are at the call, as Python does)."""
        if name in self.defs_inlining:
            fence.refuse(
                self.src,
                node,
                msg=f"recursive call to the local function {name!r} cannot be differentiated",
                hint="write the recursion as a loop",
            )
        tree, afn, _ = self.local_defs[name]
        child = Normalizer(_LocalSource(self.src, tree, afn), parent=self)
        child.defs_inlining = self.defs_inlining | {name}
        child.local_defs = dict(self.local_defs)
        for n in sorted(_Locals(afn).all_names - child.locals):
            if n in self.locals:  # an enclosing local: read as the enclosing function names it
                child.locals.add(n)
                child.rename[n] = self._local(n)
                if n in self.subst:
                    child.subst[n] = self.subst[n]
        params = []
        for p in (*tree.params.params, *tree.params.kwonly_params):
            default = inspect.Parameter.empty if p.default is None else self._atom(p.default)
            if not isinstance(default, (ir.Const, type(inspect.Parameter.empty))):
                fence.refuse(
                    self.src,
                    p.default,
                    msg="a default value of a local function must be a constant",
                    hint="pass the value as an argument",
                )
            kind = (
                inspect.Parameter.KEYWORD_ONLY
                if p in tree.params.kwonly_params
                else inspect.Parameter.POSITIONAL_OR_KEYWORD
            )
            params.append(inspect.Parameter(p.name.value, kind, default=default))
        callee = types.SimpleNamespace(
            __qualname__=f"{self.fn.__qualname__}.<locals>.{name}", __name__=name
        )
        return self._inline_call(node, child, inspect.Signature(params), callee, args, kwargs)

    def _refuse_local_def_value(self, node):
        fence.refuse(
            self.src,
            node,
            msg=f"the local function {node.value!r} can only be called: sourcegrad "
            "inlines it, so it cannot be returned, stored or passed",
            hint="define it at module level to pass it around",
        )

    def _alias(self, name, value):
        """A name for ``value`` in the generated code's namespace."""
        for k, v in self.extra_ns.items():
            if v is value:
                return k
        alias = self.naming.unique(name)
        self.extra_ns[alias] = value
        return alias

    def _constant(self, value, hint):
        """An atom for a Python value known at compile time (a default argument): its literal
        where its repr is one, otherwise a name bound to it (``inf``, ``nan``, an array)."""
        if (
            value is None
            or type(value) in (bool, int, str)
            or (type(value) is float and _INF > abs(value))
        ):
            return ir.Const(value, repr(value))
        alias = self.naming.unique(f"_{hint}_default")
        self.extra_ns[alias] = value
        return ir.Const(value, alias)

    # ---- custom Functions: a black box with the user's own backward ---------------------------
    def _custom_function(self, node, cls, args, kwargs):
        if kwargs:
            fence.refuse(
                self.src,
                node,
                msg=f"{cls.__name__}.apply takes positional arguments only",
                hint=f"pass them by position: {cls.__name__}.apply(x, ...)",
            )
        if (
            self.inlining[0].__globals__.get(cls.__name__) is cls
            and cls.__name__ not in self.locals
        ):
            self.extra_ns.setdefault(cls.__name__, cls)  # the user's own name for it
        template, alias = custom_template(cls, len(args), self.naming, self.extra_ns)
        ctx = self.naming.temp("ctx")
        context = self._alias("Context", Context)
        self._emit(
            ir.Assign(ctx, ir.Op(Context, (), (), f"{context}()", "nondiff"), self._pos(node))
        )
        text = f"{alias}.forward({', '.join([ctx] + [a.render() for a in args])})"
        return ir.Op(template, (ir.Name(ctx),) + tuple(args), (), text, "call")

    # ---- a gradient made by sourcegrad, called: its second derivatives (sourcegrad/higher.py) --
    def _gradient_call(self, node, g, args, kwargs, text, name):
        why = g.refusal_in_gradient()
        if why is not None:
            fence.refuse(self.src, node, msg=f"{name} is {why[0]}", hint=why[1])
        if kwargs:
            fence.refuse(
                self.src,
                node,
                msg=f"a gradient made by sourcegrad ({name}) takes positional arguments here",
                hint=f"pass them by position: {name}(x, ...)",
            )
        if (
            name.isidentifier()
            and name not in self.locals
            and self.inlining[0].__globals__.get(name) is g
        ):
            self.extra_ns.setdefault(name, g)  # the user's own name for it
        template = gradient_call_template(g, len(args), self.naming, self.extra_ns)
        return ir.Op(template, tuple(args), (), text, "call")

    # ---- name resolution -------------------------------------------------------------------------
    def _is_local_expr(self, node):
        """Does ``node`` compute from local values (so ``node.attr`` is an array attribute)?"""
        while isinstance(node, cst.Attribute):
            node = node.value
        if isinstance(node, cst.Name):
            return node.value in self.locals
        return True

    def _static_callee(self, func):
        if isinstance(func, cst.Name) and self._local(func.value) in self.static_locals:
            return self.static_locals[self._local(func.value)]
        if isinstance(func, (cst.Name, cst.Attribute)) and not self._is_local_expr(func):
            return self._static_value(func)
        return None

    def _static_value(self, node, record=True):
        """The value of a module-level or closure name, or of an attribute chain of one. Unless
        ``record`` is False, the compile decides from it: it goes to the captures, whose guard
        recompiles when it changes (``captures.py``)."""
        value, read = self._resolve(node)
        if record and read is not None:
            where, name, attrs, read_value, _ = read
            self.captures.record(where, name, attrs, read_value)
        return value

    def _resolve(self, node):
        """(value, read): read is (where, name, attrs, the value read, cut) for the part of the
        chain a guard checks, None for a builtin. The chain is cut after a library module
        (``np.tanh`` is checked as ``np``: numpy's attributes are trusted to stay)."""
        if isinstance(node, cst.Name):
            return self._lookup_global(node)
        if isinstance(node, cst.Attribute):
            base, read = self._resolve(node.value)
            try:
                value = getattr(base, node.attr.value)
            except AttributeError:
                fence.refuse(
                    self.src,
                    node,
                    msg=f"{_code(node)} does not exist",
                    hint=_did_you_mean(base, node.attr.value),
                )
            if read is not None and not read[4]:
                read = (read[0], read[1], read[2] + (node.attr.value,), value, _trusted(value))
            return value, read
        fence.refuse(self.src, node)

    def _lookup_global(self, node):
        """A name the function does not bind: (value, read) from its closure, globals or builtins."""
        name = node.value
        fn = self.fn
        code = fn.__code__
        if name in code.co_freevars and fn.__closure__:
            cell = fn.__closure__[code.co_freevars.index(name)]
            try:
                value = cell.cell_contents
                return value, (cell, name, (), value, _trusted(value))
            except ValueError:
                pass
        g = fn.__globals__
        if name in g:
            value = g[name]
            return value, (g, name, (), value, _trusted(value))
        if hasattr(builtins, name):
            self.captures.record(g, name, (), None, "absent")
            return getattr(builtins, name), None
        fence.refuse(
            self.src,
            node,
            msg=f"name {name!r} is not defined",
            hint="define it before differentiating",
        )

    def _copy_op(self, atom):
        return ir.Op(None, (atom,), (), atom.render(), "copy")


class _LocalSource:
    """A def or lambda written inside the function: its own trees, the enclosing function's file
    (positions, error messages, the globals and closure it reads)."""

    def __init__(self, src, tree, afn):
        self._src, self.tree, self.ast_fn = src, tree, afn

    def __getattr__(self, name):
        return getattr(self._src, name)


def _names_read(node):
    """The names ``node`` reads (not attribute names or keyword labels): what a condition or a
    bound kept as text reads. Names a comprehension binds are included (an over-estimate)."""
    names, labels = set(), set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n):
            labels.add(id(n.attr))

        def visit_Arg(self, n):
            if n.keyword is not None:
                labels.add(id(n.keyword))

        def visit_Name(self, n):
            if id(n) not in labels:
                names.add(n.value)

    node.visit(V())
    return names


class _Renamer(cst.CSTTransformer):
    def __init__(self, rename):
        self.rename = rename

    def leave_Name(self, original, updated):
        new = self.rename.get(updated.value)
        if not new:
            return updated
        if new.isidentifier():
            return updated.with_changes(value=new)
        return cst.parse_expression(new)  # an inlined parameter bound to a constant

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)


_INPLACE_METHODS = {
    "fill": "make a new array: y = np.full_like(y, value)",
    "sort": "use y = np.sort(y)",
    "resize": "use y = np.resize(y, shape) (no gradient) or np.reshape",
    "put": "write with an index: y[idx] = v",
    "itemset": "write with an index: y[i] = v",
    "setflags": "remove the call",
    "partition": "use np.sort",
}


def _literal_const(t):
    """A literal whose entries are all constants, as one ``Const`` of its nested Python value."""
    if not isinstance(t, Tup):
        return t
    entries = [_literal_const(a) for a in t]
    if not all(isinstance(a, ir.Const) for a in entries):
        return None
    value = [a.value for a in entries] if t.is_list else tuple(a.value for a in entries)
    return _LiteralConst(value, _tup(entries, t.is_list).render())


class _LiteralConst(ir.Const):
    """A constant nested literal: its value may hold lists, so it hashes by its text."""

    def __hash__(self):
        return hash(self.text)


def _op_text(op):
    """An operator node as Python writes it (``<<=``, ``&``)."""
    return _code_op(op).strip() or type(op).__name__


def _code_op(op):
    tok = getattr(op, "_get_token", None)
    return tok() if tok else ""


def _did_you_mean(obj, name):
    import difflib

    close = difflib.get_close_matches(name, [n for n in dir(obj) if not n.startswith("_")], n=1)
    return (
        f"did you mean {close[0]}?"
        if close
        else f"{getattr(obj, '__name__', obj)!s} has no attribute {name!r}"
    )


_INF = float("inf")


def _trusted(value):
    """Is ``value`` a library module, whose attributes a guard need not check?"""
    return isinstance(value, types.ModuleType) and is_library(value)


def _result_fields(callee):
    """(field names, keywords that keep the namedtuple) of a library function's result, or None."""
    try:
        return _RESULT_FIELDS.get(callee)
    except TypeError:  # an unhashable callable
        return None


def _method_class(fn):
    """The class ``fn`` is a plain method of, found by its qualified name (``Model.loss``), or None
    (a function, a class defined inside a function, a static or class method)."""
    parts = getattr(fn, "__qualname__", "").split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    obj = fn.__globals__.get(parts[0])
    for p in parts[1:-1]:
        obj = getattr(obj, "__dict__", {}).get(p)
    if isinstance(obj, type) and obj.__dict__.get(parts[-1]) is fn:
        return obj
    return None


def _written_into(afn):
    """Names an ``ast`` function assigns into by subscript (``u[0] = 0.0``, ``u[i] += v``)."""
    out = set()
    for node in ast.walk(afn):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        )
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name):
                    out.add(sub.value.id)
    return out


def _is_users(fn):
    """Is ``fn`` the user's own Python code (inlined), rather than a library's (needs a rule)?"""
    top = (fn.__module__ or "").partition(".")[0]
    return top not in sys.stdlib_module_names and top not in ("numpy", "scipy", "sourcegrad")


def _assigned_in(node):
    """Names bound anywhere in a libcst subtree."""
    out = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n):
            out.update(_target_names(n.target))

        def visit_AugAssign(self, n):
            out.update(_target_names(n.target))

        def visit_For(self, n):
            out.update(_target_names(n.target))

    node.visit(V())
    return out


def _target_names(target):
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []


def _indexes_by(body, seq, key):
    """Whether ``body`` reads ``seq[key]`` (``for k in params: ... params[k]``: a dict's keys)."""
    return (
        re.search(rf"\b{re.escape(seq)}\s*\[\s*{re.escape(key)}\s*\]", _EMPTY.code_for_node(body))
        is not None
    )


def _sorted_keys(d):
    """``sorted(name)`` of a local: a dict's keys, or a sequence with nothing to differentiate
    (integers, strings); a float or an array could carry a gradient that sorting would drop."""
    if isinstance(d, dict):
        return sorted(d)
    values = list(d)
    if all(isinstance(v, (int, str, np.integer, np.str_)) for v in values):
        return sorted(values)
    from sourcegrad.errors import UnsupportedValueError

    raise UnsupportedValueError(
        "sorted(...) in a differentiated function sorts a dict's keys or integers and "
        "strings only: sorting floats or arrays drops their gradient; use np.sort(...)"
    )


def _find_name(node, names):
    """The first ``Name`` in ``node`` spelled as one of ``names``, or None."""
    found = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n):
            if not found and n.value in names:
                found.append(n)

    node.visit(V())
    return found[0] if found else None


def _find(node, kind):
    found = []

    class V(cst.CSTVisitor):
        def on_visit(self, n):
            if isinstance(n, kind) and not found:
                found.append(n)
            return not found

    node.visit(V())
    return found[0] if found else None
