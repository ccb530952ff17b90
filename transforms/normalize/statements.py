"""Statements other than assignments and loops: expression statements, ``return``, ``assert``,
``raise``, ``break``/``continue`` (which exit the ``with`` blocks they leave: ``contexts``),
``if``, and ``for``/``while`` with an ``else`` (a flag the loop's ``break`` sets).

Expects: the walk of ``anf`` and its state. Guarantees: a call made for its side effect is a
local list's ``append``/``extend`` (``Append`` statements), ``np.<ufunc>.at`` (an in-place
``Assign``), ``print``, ``breakpoint``, ``warnings.warn``, a logger's methods or one of
sourcegrad's own checks (an ``Effect``), and any other is refused; ``break``/``continue`` appear
only inside loops (``exits.py`` lowers them); inside ``with no_grad():`` every operation is
non-differentiable. A helper's ``return a, b`` gives its caller the tuple's atoms (``inline``);
the compiled function's own tuple is its value (refused for ``grad``, which needs one scalar).
``del name`` makes a later read of the name a compile-time error until it is bound again;
``del d["k"]`` forgets a local dict's entry; nothing runs for either.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import inspect
import logging
import sys
import types
import warnings
from dataclasses import replace

import libcst as cst

from sourcegrad.runtime import (
    check_entry_read,
    check_sequence,
    check_star_length,
    check_unpack,
    check_unpack_star,
)
from sourcegrad.runtime.contexts import enter_context, exit_context

from .. import fence, ir
from .. import rules as R
from ..ir import Tup
from .calls import _is_users, _users_method
from .syntax import code_of, find_node

# run in the forward as written: what they are given is never differentiated
_SIDE_EFFECT_ONLY = {
    builtins.print,
    builtins.breakpoint,
    warnings.warn,
    warnings.simplefilter,
    warnings.filterwarnings,
}
_LOG_METHODS = ("debug", "info", "warning", "error", "exception", "critical", "log")
# sourcegrad's own checks of a value (they return nothing, or raise): when the compiler reads code
# it generated (hvp differentiates a generated jvp), they run in the forward as written
_RUNTIME_CHECKS = {
    check_sequence,
    check_unpack,
    check_unpack_star,
    check_star_length,
    check_entry_read,
    enter_context,
    exit_context,
}


class Statements:
    """The statement methods of the ``Normalizer`` (assignments: ``assign``; loops: ``loops``)."""

    def _small_Expr(self, s):
        v = s.value
        if isinstance(v, (cst.SimpleString, cst.ConcatenatedString)):
            return  # docstring
        if isinstance(v, cst.Call):
            self._call_statement(v, s)
            return
        if type(v) is cst.Yield:
            self._small_yield(s, v)  # (generators.py)
            return
        if isinstance(v, cst.Await):
            fence.refuse(self.src, v)
        fence.refuse(
            self.src,
            s,
            msg="an expression statement whose value is discarded is not supported",
            hint="assign the value to a variable, or remove the statement",
        )

    def _small_Nonlocal(self, s):
        """``nonlocal n`` in a local def: the caller's ``n`` (``inline._bind_nonlocals``)."""
        if not all(n.name.value in self.nonlocals for n in s.names):
            fence.refuse(self.src, s)

    def _call_statement(self, v, s):
        """A call ``v`` whose value is discarded (the statement ``s``)."""
        func = v.func
        if self.dicts and self._namespace_call(v) is not None:
            return  # d.update(...), d.pop(k), d.setdefault(k, v)
        if type(func) is cst.Name and func.value in self.local_defs:
            # a local def called for what it does: its nonlocal writes, its appends
            args, kwargs = self._call_args(v)
            self._call_local_def(v, func.value, args, kwargs)
            return
        if self._local_method(func, "append"):
            if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                fence.refuse(self.src, v, msg="append takes one value")
            # (a literal appended is one value: its entries' adjoints come back through it)
            value = self._named(self._atom(v.args[0].value), self._pos(s))
            self._emit(ir.Append(self._local(func.value.value), value, self._pos(s)))
            return
        if self._local_method(func, "extend"):
            if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                fence.refuse(self.src, v, msg="extend takes one sequence")
            self._extend(self._local(func.value.value), self._atom(v.args[0].value), self._pos(s))
            return
        if (
            type(func) is cst.Attribute
            and func.attr.value in ("append", "extend")
            and type(func.value) in (cst.Attribute, cst.Subscript)
            and self._is_local_expr(func.value)
        ):
            self._list_append(func, v, s)  # self.cache.append(x): objects.py
            return
        if type(func) is cst.Name and func.value not in self.locals:
            if self._static_callee(func) is builtins.setattr:
                self._setattr(v, s)
                return
        if self._writes_out(v):  # np.exp(x, out=buf): the write into buf is its effect
            self._expr_Call(v)
            return
        if (type(func) is cst.Attribute and self._is_local_expr(func.value)) or (
            type(func) is cst.Name and func.value in self.locals
        ):
            # a method or a function held in a value, called for what it does (a check, a
            # write into self): inlined, its value (None) dropped
            self._statement_call(v, s)
            return
        callee = self._static_callee(v.func)
        if (
            getattr(callee, "__name__", None) == "at"
            and getattr(callee, "__self__", None) in R.UFUNC_AT
        ):
            self._ufunc_at(v, R.UFUNC_AT[callee.__self__], s)
            return
        if _member(callee, R.IN_PLACE):
            self._in_place_call(v, callee, R.IN_PLACE[callee], s)
            return
        if callee in _SIDE_EFFECT_ONLY or callee in _RUNTIME_CHECKS or _is_logging(callee):
            walrus = find_node(v, cst.NamedExpr)
            if walrus is not None:  # kept as written, the name it binds would go unseen
                fence.refuse(
                    self.src,
                    walrus,
                    msg="the walrus operator := is not supported in "
                    "a call kept for its side effect (print, warnings.warn, logging)",
                )
            self._emit(ir.Effect(self._kept(v), self._pos(s)))
            return
        if (isinstance(callee, types.FunctionType) and _is_users(callee)) or _users_method(
            callee, v.func
        ) is not None:
            self._statement_call(v, s)  # is_binary(y), MODEL.check(x): inlined
            return
        self._refuse_discarded(v, s, callee)

    def _statement_call(self, v, s):
        """A call of the user's code made for what it does (a validation helper, a method that
        writes into ``self``): inlined, as any call of it is, its value dropped. A call that turns
        out to be a library's is refused as a discarded value."""
        op = self._op(v)
        if isinstance(op, ir.Op):
            self._refuse_discarded(v, s, None)

    def _local_method(self, func, name):
        """Is ``func`` the method ``name`` of a local variable (``xs.append``)?"""
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == name
            and isinstance(func.value, cst.Name)
            and func.value.value in self.locals
        )

    def _refuse_discarded(self, v, s, callee):
        """Refuse a call made only for its side effect, saying why."""
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
                msg=f"the call {code_of(v.func)}(...) changes an object outside the function, "
                "which sourcegrad cannot differentiate",
                hint="build a local value and return it instead",
            )
        self._op(v)  # refuses what the call itself does wrong (out=, in-place methods, ...)
        if callee is not None and (R.lookup(callee) is not None or R.is_nondiff(callee)):
            fence.refuse(
                self.src,
                s,
                msg=f"the value of {code_of(v.func)}(...) is discarded",
                hint="assign the value to a variable, or remove the statement",
            )
        fence.refuse(
            self.src,
            s,
            msg=f"the call {code_of(v.func)}(...) is made only for its side effect, "
            "which sourcegrad cannot differentiate",
            hint="assign its result to a variable and use it; objects outside the function cannot be changed",
        )

    def _ufunc_at(self, call, fn, s):
        """``np.add.at(buf, idx, v)`` updates ``buf`` in place: ``buf = add_at(buf, idx, v)``,
        refused as ``buf += v`` is where another name sees ``buf`` (``aliasing.py``)."""
        args, kwargs = self._call_args(call)
        if (
            kwargs
            or len(args) != 3
            or not isinstance(args[0], ir.Name)
            or not all(isinstance(a, (ir.Name, ir.Const, Tup)) for a in args)
        ):
            fence.refuse(
                self.src,
                call,
                msg=f"{code_of(call.func)}(buf, indices, values) is supported with three "
                "arguments by position, buf an array the function allocated",
                hint="buf = np.zeros(n); np.add.at(buf, idx, values)",
            )
        buf = call.args[0].value
        if len(self.inlining) == 1 and isinstance(buf, cst.Name) and buf.value in self.params:
            fence.refuse(
                self.src,
                call,
                msg=f"{code_of(call.func)} writes into {buf.value!r}, an argument: it would change "
                "the caller's data",
                hint=f"work on a copy: buf = {buf.value}.copy(), then {code_of(call.func)}(buf, ...)",
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

    def _in_place_call(self, call, callee, fn, s):
        """``np.fill_diagonal(buf, v)`` updates ``buf`` in place: ``buf = filled_diagonal(buf, v,
        wrap)`` (``R.IN_PLACE``), every parameter by position, refused as ``buf += v`` is where
        another name sees ``buf`` (``aliasing.py``)."""
        name = f"np.{callee.__name__}"
        args, kwargs = self._call_args(call)
        try:
            bound = inspect.signature(callee).bind(*args, **dict(kwargs))
        except TypeError as e:
            fence.refuse(self.src, call, msg=f"{name}(...) called this way: {e}")
        bound.apply_defaults()
        values = tuple(
            v if isinstance(v, (ir.Name, ir.Const, Tup)) else ir.Const(v, repr(v))
            for v in bound.arguments.values()
        )
        buf = call.args[0].value
        if not isinstance(values[0], ir.Name):
            fence.refuse(
                self.src,
                call,
                msg=f"{name} writes into its first argument, which must be an array the "
                "function allocated, held in a local variable",
                hint=f"a = np.zeros((n, n)); {name}(a, ...)",
            )
        if len(self.inlining) == 1 and isinstance(buf, cst.Name) and buf.value in self.params:
            fence.refuse(
                self.src,
                call,
                msg=f"{name} writes into {buf.value!r}, an argument: it would change the "
                "caller's data",
                hint=f"work on a copy: a = {buf.value}.copy(), then {name}(a, ...)",
            )
        text = f"{self.captures.bind(fn.__name__)}({', '.join(a.render() for a in values)})"
        self._emit(
            ir.Assign(
                values[0].id,
                ir.Op(fn, values, (), text, self._kind(fn)),
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
        with self._collecting() as body:
            self._emit(ir.Assign(entry, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos))
            self._emit(ir.Append(target, ir.Name(entry), pos))
        self._emit(ir.For(k, self._range_len(seq), tuple(body), pos))

    def _small_Import(self, s):
        """``import numpy as np2`` (``import scipy.special``) in the function: the name holds the
        module, known now, as a module-level import would (``np2.tanh(x)`` has numpy's rule)."""
        for alias in s.names:
            dotted = code_of(alias.name)
            module = self._import(s, dotted)
            if alias.asname is not None:
                name = alias.asname.name.value
            else:  # import numpy.linalg binds numpy
                name = dotted.partition(".")[0]
                module = sys.modules[name]
            self._bind_import(s, name, module, ("module", name))

    def _small_ImportFrom(self, s):
        """``from numpy.linalg import norm`` in the function: each name holds what it imports."""
        if s.relative:
            fence.refuse(
                self.src,
                s,
                msg="a relative import inside a differentiated function is not supported",
                hint="import it at module level",
            )
        if isinstance(s.names, cst.ImportStar):
            fence.refuse(
                self.src,
                s,
                msg="import * inside a function is not Python",
                hint="import the names one by one",
            )
        dotted = code_of(s.module)
        module = self._import(s, dotted)
        for alias in s.names:
            attr = alias.name.value
            if hasattr(module, attr):
                value = getattr(module, attr)
            else:  # a submodule not imported yet
                value = self._import(s, f"{dotted}.{attr}")
            name = alias.asname.name.value if alias.asname is not None else attr
            self._bind_import(s, name, value, (module, attr))

    def _import(self, s, dotted):
        """The module ``dotted``, imported now (the function would import it when it runs)."""
        try:
            return importlib.import_module(dotted)
        except ImportError as e:
            fence.refuse(
                self.src,
                s,
                msg=f"cannot import {dotted}: {e}",
                hint="install the module, or import what exists",
            )

    def _bind_import(self, s, name, value, source):
        """The local ``name`` holds ``value``, imported from ``source``: (module, attribute) or
        ("module", the name sys.modules has it under). The guard checks that it still holds it
        (``captures.py``), a library's module as any other: ``np.tanh = np.sin`` is seen."""
        local = self._local(name)
        where, attr = source
        where = sys.modules if where == "module" else vars(where)
        read = (where, attr, (), value)
        self.captures.record(where, attr, (), value)
        pos = self._pos(s)
        self._emit(ir.Assign(local, self._copy_op(ir.Const(value, self._alias(name, value))), pos))
        self._bind_static(local, value, (value, read), anywhere=True)

    def _small_Return(self, s):
        if self._yield_sink is not None:
            fence.refuse(
                self.src,
                s,
                msg="return in a generator consumed by a for loop is not supported",
                hint="end the generator's loop with its condition instead",
            )
        if s.value is None:
            fence.refuse(
                self.src,
                s,
                msg="a differentiated function must return a value",
                hint="return the value to differentiate: return loss",
            )
        atom = self._atom(s.value)
        pos = self._pos(s)
        self._exit_contexts(self._open_contexts, pos)
        if isinstance(atom, Tup) and self.parent is None:
            # a helper's tuple is its caller's values (inline.py); the function's own is its value
            if self.options.get("mode") == "value_and_grad":
                fence.refuse(
                    self.src,
                    s,
                    msg=f"{self.fn.__qualname__} returns a tuple of {len(atom)} values, but grad "
                    "differentiates one scalar value",
                    hint="return the loss alone; or differentiate with has_aux=True and return "
                    "(loss, aux), aux coming back with no gradient; or use sourcegrad.vjp, whose "
                    "pullback takes one cotangent per value",
                )
            atom = self._named(atom, pos)
        self._emit(ir.Return(atom, pos))

    def _small_Assert(self, s):
        """``assert`` runs in the forward as written; its condition is never differentiated."""
        self._kept_statement(s, "assert", s.test, ", ", s.msg)

    def _small_Raise(self, s):
        """``raise`` runs in the forward as written (argument checks: ``if x.ndim != 1: raise
        ValueError(...)``); a call that raises has no backward, so its branch has none either."""
        if s.exc is None:
            fence.refuse(
                self.src,
                s,
                msg="a bare raise re-raises the exception being handled, and there is none here",
                hint="raise an exception object: raise ValueError(...)",
            )
        cause = s.cause.item if s.cause is not None else None
        self._kept_statement(s, "raise", s.exc, " from ", cause)

    def _kept_statement(self, s, keyword, first, joiner, second):
        """``keyword first`` (``joiner second`` when given), an ``Effect`` run as written."""
        a = self._test(first)
        b = self._test(second) if second is not None else None
        text = f"{keyword} {a}" + (f"{joiner}{b}" if b is not None else "")
        names = a.names | (b.names if b is not None else set())
        self._emit(ir.Effect(ir.Text(text, names), self._pos(s)))

    def _small_Break(self, s):
        self._in_loop_only(s, "break")
        pos = self._pos(s)
        self._exit_contexts(self._open_contexts[self._loop_contexts :], pos)
        if self._break_flag is not None:  # the loop has an else: it must not run now
            self._emit(ir.Assign(self._break_flag, self._copy_op(ir.Const(True, "True")), pos))
        self._emit(ir.Break(pos))

    def _small_Continue(self, s):
        self._in_loop_only(s, "continue")
        self._exit_contexts(self._open_contexts[self._loop_contexts :], self._pos(s))
        self._emit(ir.Continue(self._pos(s)))

    def _in_loop_only(self, s, what):
        if not self._loop_depth:
            fence.refuse(self.src, s, msg=f"{what} outside a loop")

    @contextlib.contextmanager
    def _in_loop(self, broke=None):
        """Statements lowered inside the ``with`` are in a loop's body (``break`` is allowed;
        ``broke``: the flag its ``break`` sets, for a loop with an ``else``)."""
        self._loop_depth += 1
        saved, self._break_flag = self._break_flag, broke
        outside, self._loop_contexts = self._loop_contexts, len(self._open_contexts)
        try:
            yield
        finally:
            self._loop_depth -= 1
            self._break_flag = saved
            self._loop_contexts = outside

    def _loop_else_flag(self, s, pos):
        """The flag a ``break`` of loop ``s`` sets when the loop has an ``else`` that a ``break``
        may skip (False before the loop), else None."""
        if s.orelse is None or find_node(s.body, cst.Break) is None:
            return None
        broke = self.naming.temp("broke")
        self._emit(ir.Assign(broke, self._copy_op(ir.Const(False, "False")), pos))
        return broke

    def _loop_else(self, s, broke, pos):
        """``for``/``while`` ... ``else``: the else block runs when the loop was not broken (a
        ``return`` in the loop leaves before it, as in Python)."""
        if s.orelse is None:
            return
        body = tuple(self._block(s.orelse.body))
        if broke is None:
            self.block.extend(body)
        else:
            self._emit(ir.If(ir.Text(f"not {broke}", (broke,)), body, (), pos))

    def _stmt_If(self, s):
        pos = self._pos(s)
        known = self._decided_test(s.test)
        if known is not None:  # the other branch cannot run on this compile's calls
            self._taken(s.body if known else s.orelse)
            return
        test = self._test(s.test)
        before, deleted = set(self.deleted), []

        def side(which, branch):  # each from the names deleted before the if
            self.deleted = set(before)
            if branch is None:
                out = []
            else:  # (a refusal met in it is raised where it runs: deferral.py)
                out = self._branch(s, which, lambda: self._taken(branch))
            deleted.append(self.deleted)
            return out

        body, orelse = self._branches(
            lambda: side("body", s.body), lambda: side("orelse", s.orelse)
        )
        self.deleted = deleted[0] | deleted[1]  # deleted on either path: not read after the if
        self._emit(ir.If(test, tuple(body), tuple(orelse), pos))

    def _taken(self, branch):
        """The statements of the branch an ``if`` known now takes (``branch``: its suite, an
        ``elif``, an ``else`` or None), lowered in place; what follows a branch that ends in
        ``return``, ``break`` or ``continue`` is never lowered (it cannot run)."""
        if branch is None:
            return
        if isinstance(branch, cst.If):
            self._stmt_If(branch)
            return
        suite = branch.body if isinstance(branch, cst.Else) else branch
        if isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                self._small(small)
        else:
            for stmt in suite.body:
                self._stmt(stmt)
        if self.block and isinstance(self.block[-1], (ir.Return, ir.Break, ir.Continue)):
            self._unreachable = True

    def _small_Del(self, s):
        """``del name`` of a local (a later read is refused, as Python would raise NameError)
        and ``del d["k"]`` of a local dict literal's entry; nothing runs. Inside a loop, where a
        later iteration could read what an earlier one deleted, it is refused."""
        if self._loop_depth:
            fence.refuse(
                self.src,
                s,
                msg="del inside a loop is not supported",
                hint="let the variable go out of use, or bind it again instead",
            )
        target = s.target
        items = [el.value for el in target.elements] if isinstance(target, cst.Tuple) else [target]
        for t in items:
            if type(t) is cst.Name and t.value in self.locals and t.value not in self.dicts:
                self._expr_Name(t)  # (deleting a name never bound, or deleted, is refused)
                self.deleted.add(self._local(t.value))
            elif type(t) is cst.Subscript and self._dict_base(t) is not None:
                name = self._dict_entry(t, read=True)  # (its key must be written)
                self.dict_keys[self._dict_base(t)].discard(
                    next(k for k, v in self.dicts[self._dict_base(t)].items() if v == name)
                )
            else:
                fence.refuse(
                    self.src,
                    t,
                    kind="Del",
                    msg="del deletes a local variable or an entry of a local dict literal "
                    "here; a list's or an array's entries cannot be deleted in place",
                    hint="build a new value without the entry: xs[:i] + xs[i + 1:], or "
                    "np.delete(x, i) for an array",
                )

    def _stmt_While(self, s):
        pos = self._pos(s)
        broke = self._loop_else_flag(s, pos)
        with self._in_user_loop(s):
            if self._test_needs_operations(s.test):
                # while (chunk := f(n)) > 0: the test's operations run before every iteration
                with self._in_loop(broke), self._collecting() as body:
                    test = self._test(s.test)
                    not_test = ir.Text(f"not ({test})", test.names)
                    self._emit(ir.If(not_test, (ir.Break(pos),), (), pos))
                    body.extend(self._block(s.body))
                self._emit(ir.While(ir.Text("True"), tuple(body), pos))
            else:
                test = self._test(s.test)
                with self._in_loop(broke):
                    body = tuple(self._block(s.body))
                self._emit(ir.While(test, body, pos))
        self._loop_else(s, broke, pos)

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
            return replace(stmt, value=ir.Name(tmp))
        return stmt


def _member(callee, group):
    try:
        return callee in group
    except TypeError:  # an unhashable callee: none of them
        return False


def _is_logging(callee):
    """``log.info(...)`` of a ``logging.Logger`` (or ``logging.info(...)``): it only writes."""
    name = getattr(callee, "__name__", None)
    if name not in _LOG_METHODS:
        return False
    owner = getattr(callee, "__self__", None)
    return isinstance(owner, (logging.Logger, logging.LoggerAdapter)) or callee is getattr(
        logging, name
    )
