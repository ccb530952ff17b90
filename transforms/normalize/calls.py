"""Calls, resolved to the object whose rule applies.

Expects: the walk of ``anf``, name resolution (``resolve``) and its state. Guarantees: a call is
one ``Op`` whose ``key`` is what its adjoint is looked up by: a library function with a rule
(``kind="call"``), one without (``"nondiff"``: the gate refuses it where a varied value flows in),
an array method (its numpy function), a ``sourcegrad.Function`` (its own backward), or a
gradient made by sourcegrad (its second derivatives); a call of the user's own function, a
local def or lambda, ``self.method`` or a module-level object's ``model.method`` is inlined
(``inline``). ``f(*seq)`` passes the entries of ``seq`` one by one where their number is known
now (a literal, a helper's tuple, a name bound once to a literal); otherwise the call runs as
written with no gradient (``np.random.rand(*x.shape)``), ``x.reshape(*shape)`` is
``x.reshape(shape)``, and a call that needs its arguments one by one (a rule, an inlined
function) is refused. ``f(**d)`` passes the entries of a dict literal, a local dict literal or a
dict known now. ``out=`` and in-place array methods are refused.
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
from .objects import object_like
from .strings import STR_METHODS
from .syntax import Unpacked, code_of, tup


_INPLACE_METHODS = {
    "fill": "make a new array: y = np.full_like(y, value)",
    "sort": "use y = np.sort(y)",
    "resize": "use y = np.resize(y, shape) (no gradient) or np.reshape",
    "put": "write with an index: y[idx] = v",
    "itemset": "write with an index: y[i] = v",
    "setflags": "remove the call",
    "partition": "use np.sort",
}


def call_unpacked(fn, args, **kwargs):
    """The key of ``fn(*args)`` (an ``Op`` made by ``Calls._unpacked_call``): its text runs the
    call as written; no analysis reads ``fn``'s parameters by position off this one tuple."""
    return fn(*args, **kwargs)


def _is_users(fn):
    """Is ``fn`` the user's own Python code (inlined), rather than a library's (needs a rule)?"""
    top = ir.module_of(fn).partition(".")[0]
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


def _out_keyword(node):
    """The ``out=`` argument of a call, or None."""
    for a in node.args:
        if a.keyword is not None and a.keyword.value == "out":
            return a
    return None


def _is_library(callee):
    """Is ``callee`` numpy's or scipy's (where ``out=`` means: write the result there)?"""
    if isinstance(callee, np.ufunc) or isinstance(getattr(callee, "__self__", None), np.ufunc):
        return True
    return ir.module_of(callee).partition(".")[0] in ("numpy", "scipy")


def _is_distribution(obj):
    """Is ``obj`` one of ``scipy.stats``' distributions (``norm``, ``multivariate_normal``)?"""
    return (
        ir.module_of(type(obj)).startswith("scipy.stats.")
        and callable(obj)
        and not isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))
        and any(hasattr(obj, m) for m in ("logpdf", "logpmf"))
    )


class Calls:
    """The call methods of the ``Normalizer``."""

    def _distribution(self, func):
        """The ``scipy.stats`` distribution a call's ``func`` names, or None."""
        if type(func) not in (cst.Name, cst.Attribute) or self._is_local_expr(func):
            return None
        if type(func) is cst.Name and func.value in self.local_defs:
            return None
        obj = self._static_callee(func)
        return obj if _is_distribution(obj) else None

    def _freeze(self, name, value):
        """``name = norm(loc, scale)``, bound once outside loops: a frozen distribution, kept as
        its parameters (each name copied, so a later rebinding cannot change them) for the calls
        of its methods (``_frozen_method``). False where ``value`` is no such call."""
        dist = self._distribution(value.func)
        if dist is None or self.bind_counts.get(name, 0) != 1 or self._loop_depth:
            return False
        args, kwargs = self._call_args(value)
        pos = self._pos(value)

        def kept(a):
            if not isinstance(a, ir.Name):
                return a
            tmp = self.naming.temp()
            self._emit(ir.Assign(tmp, self._copy_op(a), pos))
            return ir.Name(tmp)

        self.frozen[name] = (
            dist,
            self._text(value.func),
            tuple(kept(a) for a in args),
            tuple((k, kept(a)) for k, a in kwargs),
        )
        return True

    def _frozen_method(self, node, func):
        """``norm(loc, scale).logpdf(x)``, ``d.logpdf(x)`` of ``d = norm(loc, scale)``, or of a
        module-level frozen distribution: the distribution's method with the frozen parameters
        after the call's own, ``norm.logpdf(x, loc, scale)`` (None where ``func`` is no frozen
        distribution's method)."""
        base = func.value
        if type(base) is cst.Call:
            dist = self._distribution(base.func)
            if dist is None:
                return None
            text = self._text(base.func)
            fargs, fkwargs = self._call_args(base)
        elif type(base) is cst.Name and self._local(base.value) in self.frozen:
            dist, text, fargs, fkwargs = self.frozen[self._local(base.value)]
        elif type(base) in (cst.Name, cst.Attribute) and not self._is_local_expr(base):
            found = self._captured_frozen(base)
            if found is None:
                return None
            dist, text, fargs, fkwargs = found
        else:
            return None
        attr = func.attr.value
        method = getattr(dist, attr, None)
        if not callable(method):
            fence.refuse(
                self.src,
                node,
                msg=f"a frozen {text} distribution has no method {attr}",
                hint=f"call {text}.<method>(x, parameters) directly",
            )
        args, kwargs = self._call_args(node)
        args, kwargs = args + fargs, kwargs + fkwargs
        written = f"{text}.{attr}({self._render_args(args, kwargs)})"
        return self._call_op(node, method, args, kwargs, written, f"{text}.{attr}")

    def _captured_frozen(self, node):
        """A module-level or closed-over frozen distribution (``PRIOR = norm(0.0, 2.0)``) as
        ``_frozen_method`` takes it: its distribution (``scipy.stats.norm``, whose methods have
        the rules: the frozen one holds a copy of it) and its parameters, constants. None for
        any other value."""
        obj = self._static_value(node)
        dist = getattr(obj, "dist", None)
        if not (
            _is_distribution(dist)
            and isinstance(getattr(obj, "args", None), tuple)
            and isinstance(getattr(obj, "kwds", None), dict)
        ):
            return None
        from scipy import stats

        named = getattr(stats, getattr(dist, "name", ""), None)
        dist = named if type(named) is type(dist) else dist
        return (
            dist,
            self._alias(getattr(dist, "name", "dist"), dist),
            tuple(self._constant(a, "frozen") for a in obj.args),
            tuple((k, self._constant(v, "frozen")) for k, v in obj.kwds.items()),
        )

    def _writes_out(self, node):
        """Is ``node`` a call of a numpy or scipy function, or an array method, given ``out=``?"""
        if _out_keyword(node) is None:
            return False
        func = node.func
        if type(func) is cst.Name and func.value in self.local_defs:
            return False
        if isinstance(func, cst.Attribute) and self._is_local_expr(func.value):
            if (
                isinstance(func.value, cst.Name)
                and self.self_class is not None
                and func.value.value == self.params[0]
            ):
                return False  # self.method(out=...): the user's own
            return func.attr.value in R.METHODS  # x.clip(0, 1, out=x)
        return _is_library(self._static_callee(func))

    def _call_into_out(self, node):
        """``f(..., out=buf)`` of a numpy function is ``buf[...] = f(...)``, and its value is
        ``buf`` itself (``out=(buf,)`` alike). ``buf`` must be a local array: ``aliasing.py``
        refuses the write where it is an argument, a captured array or shares another name's
        memory, and ``views.py`` makes a write into a view a write into its array."""
        out = _out_keyword(node)
        call = node.with_changes(args=[a for a in node.args if a is not out])
        self.src.alias(call, node)
        target = out.value
        if isinstance(target, cst.Name) and target.value == "None":
            return self._expr_Call(call)  # out=None written out: the plain call
        if isinstance(target, cst.Tuple) and len(target.elements) == 1:
            target = target.elements[0].value
        where = next(
            (a for a in node.args if a.keyword is not None and a.keyword.value == "where"), None
        )
        if where is not None and not (
            isinstance(where.value, cst.Name) and where.value.value == "True"
        ):
            fence.refuse(
                self.src,
                where,
                msg="out= with where= (entries of out kept where the mask is False) is not supported",
                hint=f"write it with np.where: {code_of(target)}[...] = np.where(mask, "
                f"{code_of(node.func)}(...), {code_of(target)})",
            )
        base = target.value if isinstance(target, cst.Subscript) else target
        buf = self._atom(target) if self._is_local_name(base) else None
        if not isinstance(buf, ir.Name):
            fence.refuse(
                self.src,
                out,
                msg="out= must name an array the function allocated, held in a local variable",
                hint="buf = np.empty(shape); np.multiply(a, b, out=buf), or assign the result: "
                "buf = np.multiply(a, b)",
            )
        value = self._atom(call)
        self._emit(ir.SetItem(buf.id, ir.Index((Ellipsis,), False), value, self._pos(node)))
        return buf

    def _is_local_name(self, node):
        return (
            isinstance(node, cst.Name)
            and node.value in self.locals
            and node.value not in self.dicts
            and node.value not in self.local_defs
        )

    def _expr_Call(self, node):
        func = node.func
        if self.dicts:
            used = self._namespace_call(node)
            if used is not None:
                return used
        view = self._dict_view(node)
        if view is not None:
            return view
        if self._writes_out(node):
            return self._call_into_out(node)
        if type(func) is cst.Attribute:
            frozen = self._frozen_method(node, func)
            if frozen is not None:
                return frozen
        parts = self._getattr_parts(node)
        if parts is not None:  # getattr(obj, "name") is obj.name
            if not self._is_local_expr(node):
                return ir.Const(self._static_value(node), self._text(node))
            read = cst.Attribute(value=parts[0], attr=cst.Name(parts[1]))
            self.src.alias(read, node)
            return self._op(read)
        higher = self._higher_order_call(node)
        if higher is not None:
            return higher
        args, kwargs = self._call_args(node)
        if (
            type(func) is cst.Name
            and func.value == "zip"
            and func.value not in self.locals
            and self._static_callee(func) is builtins.zip
        ):
            return self._zip_value(node, args, kwargs)
        if any(isinstance(a, Unpacked) for a in args) and not self._object_call(func):
            return self._call_with_unpacked(node, func, args, kwargs)
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
            if k is not None and object_like(k.value):
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
                callee = self._static_callee(func)  # a local alias of a function
            else:
                return self._call_held(node, self._atom(func), args, kwargs, code_of(func))
        else:
            callee = self._static_callee(func)
        if callee is None:
            fence.refuse(
                self.src,
                func,
                msg="only functions named at module level (or array methods) can be called",
                hint="call a module-level function, or an array method",
            )
        return self._call_known(node, func, callee, args, kwargs)

    def _call_resolved(self, node, func, callee, args, kwargs, written):
        """The call of ``callee``, known now, written ``written`` in the generated code (``func``:
        its libcst node, or None where the call is not written so)."""
        method = _users_method(callee, func) if func is not None else None
        if method is not None:
            # model.loss(x) or layer(x) of a module-level object: its class's method, inlined with
            # the object read where the call is (the captures' guard recompiles if it is rebound)
            fn, obj, obj_node = method
            this = self._atom(obj_node)
            if not isinstance(this, ir.Name):  # a local name for it: self.w reads a field
                const, this = this, ir.Name(self.naming.temp())
                self._emit(ir.Assign(this.id, self._copy_op(const), self._pos(node)))
            return self._inline(node, fn, (this,) + tuple(args), kwargs, type(obj))
        text = f"{written}({self._render_args(args, kwargs)})"
        return self._call_op(
            node, callee, args, kwargs, text, code_of(func) if func is not None else written
        )

    def _call_args(self, node, skip=0):
        """The atoms of a call's positional and keyword arguments. ``*seq`` gives the atoms of
        its entries where their number is known now (``_known_entries``, or ``_held_entries``:
        held by an argument, its length guarded), else one ``Unpacked``
        (``_unpacked_call`` decides); ``**d`` gives the entries of a local dict literal or of a
        dict known now, by key. The first ``skip`` arguments are left out."""
        args, kwargs = [], []
        for a in node.args[skip:]:
            if a.star == "*":
                atom = self._atom(a.value)
                known = self._known_entries(atom, self._pos(a))
                if known is None:  # a list or tuple an argument holds (objects.py)
                    known = self._held_entries(atom, a)
                args.extend(known if known is not None else [Unpacked(atom, a)])
                continue
            if a.star == "**":
                kwargs.extend(self._keywords_of(a))
                continue
            if a.keyword is not None and a.keyword.value == "out":
                self._refuse_out(a)
            atom = self._atom(a.value)
            if a.keyword is not None:
                kwargs.append((a.keyword.value, atom))
            else:
                args.append(atom)
        seen = set()
        for k, _ in kwargs:
            if k == "out":
                self._refuse_out(node)
            if k in seen:
                fence.refuse(
                    self.src,
                    node,
                    msg=f"{code_of(node.func)}(...) is given the keyword argument {k!r} twice",
                    hint="pass each keyword argument once",
                )
            seen.add(k)
        return tuple(args), tuple(kwargs)

    def _refuse_out(self, node):
        fence.refuse(
            self.src,
            node,
            msg="out= is supported for numpy and scipy functions and array methods "
            "only (a write into an array the function allocated)",
            hint="assign the result to a variable instead",
        )

    def _keywords_of(self, arg):
        """The (key, atom) pairs ``**d`` passes: a dict literal's entries, a local dict literal's
        entries written so far (as its variables hold them now), or a dict known now (a
        module-level one, read by key)."""
        node = arg.value
        if type(node) is cst.Dict and not any(
            isinstance(el, cst.StarredDictElement) for el in node.elements
        ):  # f(**{"b": 2.0}): its entries, each key a string constant
            return [(self._dict_key(el.key), self._atom(el.value)) for el in node.elements]
        if type(node) is cst.Name and node.value in self.dicts:
            written = self.dict_keys.get(node.value, set())
            return [
                (key, ir.Name(slot))
                for key, slot in self.dicts[node.value].items()
                if key in written
            ]
        atom = self._atom(node)
        if (
            isinstance(atom, ir.Const)
            and isinstance(atom.value, dict)
            and all(isinstance(k, str) and k.isidentifier() for k in atom.value)
        ):
            # (read by key where the call runs: the captures' guard keeps the dict's identity)
            return [(k, ir.Const(v, f"{atom.render()}[{k!r}]")) for k, v in atom.value.items()]
        fence.refuse(
            self.src,
            arg,
            msg=f"**{code_of(node)}: the keys of this dict are not known when sourcegrad "
            "compiles the function",
            hint="pass the keyword arguments one by one, or build a local dict literal with "
            'string keys (kw = {"scale": 2.0}) and pass **kw',
        )

    def _unpacked_call(self, node, callee, args, kwargs, text_of_func):
        """A call with ``*seq`` whose number of values is known only when it runs: the call runs
        as written, with no gradient (``np.random.rand(*x.shape)``); the gate refuses it where a
        differentiated value flows in. A function with a rule, or one sourcegrad inlines, needs
        its arguments one by one: refused."""
        star = next(a for a in args if isinstance(a, Unpacked))
        if callee is None or (
            not self.no_grad
            and not R.is_nondiff(callee)
            and (R.lookup(callee) is not None or isinstance(callee, types.FunctionType))
        ):
            fence.refuse(
                self.src,
                star.node,
                msg=f"*{code_of(star.node.value)}: the number of values it unpacks is not known "
                f"when sourcegrad compiles the call of {code_of(node.func)}",
                hint="unpack a tuple literal, or a name bound once to one (args = (a, b)), or a "
                "helper's returned tuple; or pass the values one by one",
            )
        whole = self._positional_tuple(node, args)
        rendered = ", ".join([f"*{whole.render()}"] + [f"{k}={v.render()}" for k, v in kwargs])
        return ir.Op(
            call_unpacked,
            (ir.Const(callee, text_of_func), whole),
            kwargs,
            f"{text_of_func}({rendered})",
            "nondiff",
        )

    def _positional_tuple(self, node, args):
        """The positional arguments ``args`` (one or more ``Unpacked``) as one tuple made when
        the call runs: ``(a,) + tuple(seq) + (b,)``."""
        pieces, run = [], []
        for a in args:
            if not isinstance(a, Unpacked):
                run.append(a)
                continue
            if run:
                pieces.append(tup(run, False))
                run = []
            fn = self.captures.bind("tuple")
            pieces.append(
                ir.Op(tuple, (a.atom,), (), f"{fn}({a.atom.render()})", self._kind(tuple))
            )
        if run:
            pieces.append(tup(run, False))
        pos = self._pos(node)
        head = self._held(pieces[0], pos)
        for piece in pieces[1:]:
            head = self._held(
                self._binop(operator.add, "+", head, self._held(piece, pos), node), pos
            )
        return head

    def _call_with_unpacked(self, node, func, args, kwargs):
        """A call with a ``*seq`` of a number of values known only when it runs (``_call_args``):
        ``x.reshape(*shape)`` is ``x.reshape(shape)``; any other runs as written, with no
        gradient (``_unpacked_call``)."""
        if (
            isinstance(func, cst.Attribute)
            and self._is_local_expr(func.value)
            and not (type(func.value) is cst.Name and func.value.value in self.local_defs)
            and func.attr.value in ("reshape", "transpose")
            and not kwargs
        ):
            # x.reshape(2, *rest) == x.reshape((2, *rest)): one tuple of the dimensions
            whole = self._positional_tuple(node, args)
            return self._method_call(node, func, (whole,), (), self._atom(func.value))
        callee = self._static_callee(func) if type(func) in (cst.Name, cst.Attribute) else None
        if type(func) is cst.Name and func.value in self.local_defs:
            callee = None
        return self._unpacked_call(node, callee, args, kwargs, self._text(func))

    @staticmethod
    def _render_args(args, kwargs):
        return ", ".join([a.render() for a in args] + [f"{k}={v.render()}" for k, v in kwargs])

    def _method_call(self, node, func, args, kwargs, x):
        """``x.name(...)`` of a local array (``x``, ``func.value`` lowered): the method's numpy
        function."""
        name = func.attr.value
        key = R.METHODS.get(name) or R.GENERATOR_METHODS.get(name)  # rng.normal(size=3): a draw
        text = f"{x.render()}.{name}({self._render_args(args, kwargs)})"
        if key is None and name == "get" and 1 <= len(args) <= 2 and not kwargs:
            return self._dict_get(x, args, node)
        if key is None and name in STR_METHODS:
            return self._string_method(x, name, args, kwargs, text)
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
        if any(isinstance(a, Unpacked) for a in args):  # rs.randn(*x.shape), rs an argument
            fn = self._alias(getattr(callee, "__name__", "function"), callee)
            return self._unpacked_call(node, callee, args, kwargs, fn)
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
