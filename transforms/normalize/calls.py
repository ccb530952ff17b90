"""Calls, resolved to the object whose rule applies.

Expects: the walk of ``anf``, name resolution (``resolve``) and its state. Guarantees: a call is
one ``Op`` whose ``key`` is what its adjoint is looked up by: a library function with a rule
(``kind="call"``), one without (``"nondiff"``: the gate refuses it where a varied value flows in),
an array method (its numpy function), a ``sourcegrad.Function`` (its own backward), or a
gradient made by sourcegrad (its second derivatives); a call of the user's own function, a
local def or lambda, ``self.method`` or a module-level object's ``model.method`` is inlined
(``inline``). ``out=``, ``*args`` and in-place array methods are refused.
"""

from __future__ import annotations

import builtins
import operator
import sys
import types

import libcst as cst
import numpy as np

from sourcegrad.runtime import Context, Function, outer_operand

from .. import fence, ir
from .. import rules as R
from ..dtypes import casts_to_exact
from ..ir import Tup
from ..templates import custom_template, gradient_call_template
from .objects import MISSING, Star, is_data
from .syntax import code_of, tup


class StarCall:
    """The key of a call with a ``*seq`` argument whose length is not known now (run as
    written, no gradient: ``rs.randn(*shape)``)."""

    __slots__ = ("callee",)

    def __init__(self, callee):
        self.callee = callee

    def __repr__(self):
        return f"{getattr(self.callee, '__name__', self.callee)}(*...)"


_INPLACE_METHODS = {
    "fill": "make a new array: y = np.full_like(y, value)",
    "sort": "use y = np.sort(y)",
    "resize": "use y = np.resize(y, shape) (no gradient) or np.reshape",
    "put": "write with an index: y[idx] = v",
    "itemset": "write with an index: y[i] = v",
    "setflags": "remove the call",
    "partition": "use np.sort",
}


def _is_users(fn):
    """Is ``fn`` the user's own Python code (inlined), rather than a library's (needs a rule)?"""
    top = (fn.__module__ or "").partition(".")[0]
    return top not in sys.stdlib_module_names and top not in ("numpy", "scipy", "sourcegrad")


def _is_outer(callee):
    """Is ``callee`` ``ufunc.outer`` of a two-operand ufunc with a rule (``np.subtract.outer``)?"""
    ufunc = getattr(callee, "__self__", None)
    return (
        getattr(callee, "__name__", None) == "outer"
        and isinstance(ufunc, np.ufunc)
        and ufunc.nin == 2
        and R.lookup(ufunc) is not None
    )


def _registered(callee):
    """Has ``callee`` a rule, or is it declared non-differentiable?"""
    try:
        return R.lookup(callee) is not None or R.is_nondiff(callee)
    except TypeError:  # unhashable (a dataclass instance): nothing is registered for it
        return False


def _users_method(callee, func):
    """(the function, the object, the object's node) of ``obj.method(...)`` or ``obj(...)``
    (its ``__call__``) where ``obj`` is an instance of the user's own class, else None."""
    if isinstance(callee, types.MethodType):
        fn, obj = callee.__func__, callee.__self__
        node = func.value if isinstance(func, cst.Attribute) else None
    elif isinstance(callee, (type, types.FunctionType, types.BuiltinFunctionType)):
        return None
    else:
        fn, obj, node = getattr(type(callee), "__call__", None), callee, func
    if (
        node is None
        or isinstance(obj, type)
        or not isinstance(fn, types.FunctionType)
        or not _is_users(fn)
        or _registered(callee)  # a rule registered for it (@sourcegrad.adjoint) wins
    ):
        return None
    return fn, obj, node


class Calls:
    """The call methods of the ``Normalizer``."""

    def _expr_Call(self, node):
        func = node.func
        view = self._dict_view(node)
        if view is not None:
            return view
        args, kwargs = self._call_args(node, stars=True)
        # (type(func) is: isinstance with a libcst class, an ABC, costs ten times more when false)
        if type(func) is cst.Name and func.value in self.local_defs:
            return self._call_local_def(node, func.value, args, kwargs)
        if (
            type(func) is cst.Attribute
            and type(func.value) is cst.Call
            and type(func.value.func) is cst.Name
            and func.value.func.value not in self.locals
            and self._static_callee(func.value.func) is builtins.super
        ):
            return self._super_call(node, func, args, kwargs)
        if isinstance(func, cst.Attribute) and self._is_local_expr(func.value):
            x = self._atom(func.value)
            k = self._known(x)
            if k is not None and (k.value is MISSING or not is_data(k.value)):
                # obj.method(...) of an object whose class is known now (self, a layer, ...)
                return self._call_attribute(node, func, x, k, args, kwargs)
            if (
                isinstance(func.value, cst.Name)
                and self.self_class is not None
                and func.value.value == self.params[0]
                and hasattr(self.self_class, func.attr.value)
            ):
                return self._self_method_call(node, func, args, kwargs, x)
            return self._method_call(node, func, args, kwargs, x)
        if (type(func) is cst.Name and func.value in self.locals) or type(func) not in (
            cst.Name,
            cst.Attribute,
        ):
            # a function held in a local, a parameter, a dict's entry, or returned by a call
            if type(func) is cst.Name and self._local(func.value) in self.static_locals:
                callee = self.static_locals[self._local(func.value)]
            else:
                return self._call_value(node, self._atom(func), args, kwargs, code_of(func))
        else:
            callee = self._static_callee(func)
        if callee is None:
            fence.refuse(
                self.src,
                func,
                msg="only functions named at module level (or array methods) can be called",
                hint="call a module-level function, or an array method",
            )
        method = _users_method(callee, func)
        if method is not None:
            # model.loss(x) or layer(x) of a module-level object: its class's method, inlined with
            # the object read where the call is (the captures' guard recompiles if it is rebound)
            fn, obj, obj_node = method
            this = self._atom(obj_node)
            if not isinstance(this, ir.Name):  # a local name for it: self.w reads a field
                const, this = this, ir.Name(self.naming.temp())
                self._emit(ir.Assign(this.id, self._copy_op(const), self._pos(node)))
            return self._inline(node, fn, (this,) + tuple(args), kwargs, type(obj))
        text = f"{self._text(func)}({self._render_args(args, kwargs)})"
        return self._call_op(node, callee, args, kwargs, text, code_of(func))

    def _call_args(self, node, stars=False):
        """The atoms of a call's positional and keyword arguments (``stars``: ``*seq`` is a
        ``Star``, which a call inlined expands where ``seq``'s length is known now)."""
        args, kwargs = [], []
        for a in node.args:
            if a.star == "*" and stars and a.keyword is None:
                args.append(Star(self._atom(a.value)))
                continue
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

    def _method_call(self, node, func, args, kwargs, x):
        """``x.name(...)`` of a local array (``x``, ``func.value`` lowered): the method's numpy
        function."""
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
                    + "; a method of an object is compiled as self.method(...) inside a method "
                    "of a module-level class, or as obj.method(...) of a module-level or "
                    "closed-over obj: call a module-level function with the object's arrays instead"
                ),
            )
        if name in ("reshape", "transpose") and len(args) > 1:
            args = (tup(args, False),)  # x.reshape(2, 3) == np.reshape(x, (2, 3))
        return self._call_op(node, key, (x,) + args, kwargs, text, f"ndarray.{name}")

    def _call_op(self, node, callee, args, kwargs, text, name):
        """The ``Op`` of a call of the object ``callee`` (or its inlined body's result)."""
        if isinstance(callee, types.FunctionType) and _is_users(callee):
            args = self._expanded(node, args, True)
        elif any(type(a) is Star for a in args):
            args = self._expanded(node, args, False)
            star = next((a for a in node.args if a.star == "*"), node)
            if any(type(a) is Star for a in args) and _registered(callee):
                fence.refuse(self.src, star, kind="Starred")  # a rule binds each argument
            if any(type(a) is Star for a in args):  # rs.randn(*shape): run as written
                atoms = tuple(a.atom if type(a) is Star else a for a in args)
                return ir.Op(StarCall(callee), atoms, kwargs, text, "nondiff")
        callee = R.variant(callee, kwargs)  # np.sum(x, where=m): a masked sum, with its own rule
        if callee is np.where and len(args) == 1 and not kwargs:
            callee = np.nonzero  # np.where(condition): the indices where it holds, as nonzero's
        if callee in (builtins.max, builtins.min) and len(args) > 2 and not kwargs:
            # max(a, b, c) is max(max(a, b), c): each pair has the two-argument rule
            head = ir.Name(self.naming.temp())
            self._emit(
                ir.Assign(
                    head.id,
                    self._call_op(
                        node,
                        callee,
                        args[:-1],
                        (),
                        f"{name}({', '.join(a.render() for a in args[:-1])})",
                        name,
                    ),
                    self._pos(node),
                    node=node,
                )
            )
            args = (head, args[-1])
            text = f"{name}({head.render()}, {args[1].render()})"
        if (
            callee is np.linalg.multi_dot
            and len(args) == 1
            and isinstance(args[0], Tup)
            and len(args[0]) >= 2
            and not kwargs
        ):
            # multi_dot([a, b, c]) is a @ b @ c (its order of evaluation aside)
            head = args[0][0]
            for k, b in enumerate(args[0][1:], 2):
                op = self._binop(operator.matmul, "@", head, b, node)
                if k == len(args[0]):
                    return op
                head = ir.Name(self.naming.temp())
                self._emit(ir.Assign(head.id, op, self._pos(node), node=node))
        if _is_outer(callee) and len(args) == 2 and not kwargs:
            # np.subtract.outer(a, b) is np.subtract(a with b.ndim new trailing axes, b)
            ufunc, (a, b) = callee.__self__, args
            head = ir.Name(self.naming.temp())
            helper = self.captures.bind("outer_operand")
            written = f"{helper}({a.render()}, {b.render()})"
            op = ir.Op(outer_operand, (a, b), (), written, self._kind(outer_operand))
            self._emit(ir.Assign(head.id, op, self._pos(node), node=node))
            callee, args = ufunc, (head, b)
            text = f"{text.split('(')[0].rsplit('.', 1)[0]}({head.render()}, {b.render()})"
        if (
            callee is np.einsum
            and args
            and not (isinstance(args[0], ir.Const) and isinstance(args[0].value, str))
        ):
            args, text = self._einsum_subscripts(node, args, text)
        if self.no_grad or R.is_nondiff(callee):
            return ir.Op(callee, args, kwargs, text, "nondiff")
        if R.lookup(callee) is not None:
            # dtype=int, bool, "int32", ...: a cast to integers is a step function (dtypes.py)
            kind = "nondiff" if casts_to_exact(callee, args, kwargs) else "call"
            return ir.Op(callee, args, kwargs, text, kind)
        cls = getattr(callee, "__self__", None)
        if (
            isinstance(cls, type)
            and issubclass(cls, Function)
            and getattr(callee, "__name__", "") == "apply"
        ):
            return self._custom_function(node, cls, args, kwargs)
        if isinstance(callee, types.FunctionType) and _is_users(callee):
            return self._inline(node, callee, args, kwargs)
        if (
            isinstance(callee, types.MethodType)
            and isinstance(callee.__self__, type)
            and isinstance(callee.__func__, types.FunctionType)
            and _is_users(callee.__func__)
        ):  # Model.create(...): a class method, its class bound first
            cls = callee.__self__
            return self._inline(node, callee.__func__, (self._class_const(cls),) + args, kwargs)
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

    def _custom_function(self, node, cls, args, kwargs):
        """``MyFunction.apply(x)``: a black box with the user's own backward."""
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

    def _gradient_call(self, node, g, args, kwargs, text, name):
        """A gradient made by sourcegrad, called: its second derivatives (``higher.py``)."""
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
