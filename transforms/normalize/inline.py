"""Inlining: a call of the user's own function, of a def or lambda written in the function, or of
``self.method`` inside a method, is lowered in place.

Expects: the walk of ``anf`` and its state. Guarantees: the callee's body is lowered by a child
``Normalizer`` sharing this one's naming, captures and namespace, its exits lowered
(``exits.py``) so its one ``Return`` gives the call's value (a tuple it returns is the literal
of its atoms, one variable per value where several returns give tuples, which the caller
unpacks, indexes or passes on with no tuple made); its ``*args`` is the literal of the atoms it
takes, its ``**kwargs`` a local dict; its locals renamed to fresh names,
and what it captures read live (``captures.py``); a parameter the callee never rebinds reads
the caller's atom itself (``subst``). Recursion, calls nested deeper than ``MAX_INLINE_DEPTH``
and a local function used other than by calling it are refused.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types

import libcst as cst

from sourcegrad.errors import NoSourceError, UnsupportedSyntaxError
from sourcegrad.runtime import structures as _structures

from .. import exits, fence, ir
from ..source import get_source
from .resolve import Locals
from .syntax import code_of


class _LocalSource:
    """A def or lambda written inside the function: its own trees, the enclosing function's file
    (positions, error messages, the globals and closure it reads)."""

    def __init__(self, src, tree, afn):
        self._src, self.tree, self.ast_fn = src, tree, afn

    def __getattr__(self, name):
        return getattr(self._src, name)


def _written_into(afn):
    """Names an ``ast`` function assigns into by subscript (``u[0] = 0.0``, ``u[i] += v``) or
    grows in place (``xs.append(v)``, ``xs.extend(vs)``)."""
    out = set()
    for node in ast.walk(afn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend")
            and isinstance(node.func.value, ast.Name)
        ):
            out.add(node.func.value.id)
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


class Inlining:
    """The inlining methods of the ``Normalizer`` (``_child`` makes the normalizer of a callee)."""

    MAX_INLINE_DEPTH = 32

    MAX_RECURSION_DEPTH = 64

    def _check_recursion(self, node, name, depth, args, kwargs):
        """A recursive call is inlined again, as a loop is unrolled, while its depth is known now:
        an argument is an int known when compiling (``power(x, n - 1)`` of a literal ``n``), whose
        value the stopping test reads (``static.py`` decides it and lowers only the branch taken).
        Otherwise the recursion's depth depends on data, and it is refused at its call."""
        known = any(
            type(a) is ir.Const and type(a.value) is int for a in (*args, *(v for _, v in kwargs))
        )
        if not known or depth >= self.MAX_RECURSION_DEPTH:
            why = (
                "its depth depends on values known only when it runs (no argument of the "
                "recursive call is an int known when compiling)"
                if not known
                else f"it is still recursing {depth} calls deep when compiled: its stopping test "
                "does not end it on the ints known when compiling"
            )
            error = fence.located(
                UnsupportedSyntaxError,
                self.src,
                node,
                f"recursive call to {name} cannot be differentiated: {why} (in {self.fn.__qualname__})",
                "write the recursion as a loop, or recurse on an int argument known when compiling "
                f"(a literal, or a constant) that reaches its stopping case in at most "
                f"{self.MAX_RECURSION_DEPTH} calls",
            )
            error.final = True  # a refusal of the recursion itself, never deferred (transforms/)
            raise error

    @property
    def _recursions(self):
        """How many of the calls being inlined here are recursive calls (unrolled)."""
        return len(self.inlining) - len({id(f) for f in self.inlining})

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

    def _inline(self, node, callee, args, kwargs, self_class=None, lower=None):
        """Compile a call to a Python function by inlining its (normalized) body here
        (``self_class``: the class of its first argument, for a method called on ``self``;
        ``lower``: how its body is lowered, as ``_inline_call`` takes it)."""
        if callee in self.inlining:
            self._check_recursion(
                node, callee.__qualname__, self.inlining.count(callee), args, kwargs
            )
        elif len(self.inlining) - self._recursions > self.MAX_INLINE_DEPTH:
            fence.refuse(
                self.src,
                node,
                msg="calls nest too deeply to inline",
                hint=f"at most {self.MAX_INLINE_DEPTH} nested calls of user functions are compiled",
            )
        args = self._expanded(node, args, True)
        try:
            src = get_source(callee)
        except NoSourceError as e:
            raise NoSourceError(
                f"{e}\n(called from {self.fn.__qualname__}, {self._pos(node).filename}:{self._pos(node).line})"
            ) from None
        child = self._child(src)
        if self_class is not None and child.params and child.params[0] not in child.assigned:
            child.self_class = self_class
        return self._inline_call(
            node, child, inspect.signature(callee), callee, args, kwargs, lower
        )

    def _inline_call(self, node, child, signature, callee, args, kwargs, lower=None):
        """Bind the arguments to ``child``'s parameters and lower its body here; its result.
        ``lower(child)``, when given, lowers the body instead (a generator: ``generators.py``)."""
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
        self._bind_star_params(child, bound, written, pos)
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
        if lower is not None:
            return lower(child)
        # its exits lowered first, so its one return, last, gives the call's value (a local
        # def may end without one: it returns None, as Python's does)
        local = isinstance(src, _LocalSource)
        body = exits.lower_function(child.lower(implicit_none=local), self.naming, entries=True)
        self.block.extend(body[:-1])
        return body[-1].value

    def _bind_star_params(self, child, bound, written, pos):
        """A helper's ``*args`` is the tuple of the atoms it takes (a literal its body reads
        entry by entry), its ``**kwargs`` a local dict of the keyword atoms it takes."""
        var_args, var_kwargs = child.star_params
        if var_args is not None:
            value = self._literal(list(bound.arguments.get(var_args, ())), False, pos)
            if var_args in child.assigned or var_args in written:
                self._emit(ir.Assign(child._local(var_args), self._copy_op(value), pos))
            else:
                child.subst[var_args] = value
        if var_kwargs is not None:
            if var_kwargs in child.assigned:
                fence.refuse(
                    child.src,
                    child.src.tree.params.star_kwarg,
                    msg=f"the **{var_kwargs} of {child.fn.__qualname__} is rebound in its body",
                    hint="read its entries by key, and give any new dict a name of its own",
                )
            entries = bound.arguments.get(var_kwargs, {})
            child.dicts[var_kwargs] = {}
            for key, atom in entries.items():
                self._emit(ir.Assign(child._dict_slot(var_kwargs, key), self._copy_op(atom), pos))
            child.dict_keys[var_kwargs] = set(entries)
            child.dict_sure[var_kwargs] = dict.fromkeys(entries)  # held on every path

    def _self_method_call(self, node, func, args, kwargs, this):
        """``self.helper(z)`` in a method: the class's own method (or static method), inlined as a
        module-level helper is. It is resolved now from the class the method is defined in; the
        forward checks that ``self``'s class still means that function (a subclass may override it)."""
        cls, name = self.self_class, func.attr.value
        self.objects.blind = True  # (a call passing self compiles for its own class)
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, staticmethod) and isinstance(raw.__func__, types.FunctionType):
            fn, bound = raw.__func__, False
        elif isinstance(raw, types.FunctionType):
            fn, bound = raw, True
        else:
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(func)}(...): {cls.__name__}.{name} is a "
                f"{type(raw).__name__}, not a method sourcegrad can inline",
                hint="call a plain method (def name(self, ...)) or a static method, or a module-level function",
            )
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
        self.src.alias(ret, lam.body)
        tree = cst.FunctionDef(
            name=cst.Name(name), params=lam.params, body=cst.SimpleStatementSuite(body=[ret])
        )
        self.src.alias(tree, lam)
        self._local_def(name, tree, lam)

    def _local_def(self, name, tree, node, anonymous=False):
        # (an unrolled loop: the same def)
        again = name in self.local_defs and self.local_defs[name][2] is not node
        if not anonymous and (
            again or self.bind_counts.get(name, 0) > (1 if isinstance(node, cst.Lambda) else 0)
        ):
            fence.refuse(
                self.src,
                node,
                msg=f"the local function {name!r} is defined more than once or rebound",
                hint="give each local function its own name, or define it at module level",
            )
        afn = ast.parse(code_of(tree.with_changes(leading_lines=(), decorators=()))).body[0]
        self.local_defs[name] = (tree, afn, node)

    def _call_local_def(self, node, name, args, kwargs, lower=None):
        """A call of a def or lambda written in this function: its body inlined here, with this
        function's locals visible (it reads them as they are at the call, as Python does)."""
        if name in self.defs_inlining:
            self._check_recursion(
                node,
                f"the local function {name!r}",
                self.defs_inlining.count(name),
                args,
                kwargs,
            )
        args = self._expanded(node, args, True)
        tree, afn, _ = self.local_defs[name]
        child = self._child(_LocalSource(self.src, tree, afn))
        child.defs_inlining = self.defs_inlining + (name,)
        child.local_defs = dict(self.local_defs)
        child.partials = dict(self.partials)
        child.static_locals = dict(self.static_locals)
        for n in sorted(Locals(afn).all_names - child.locals):
            if n in self.locals:  # an enclosing local: read as the enclosing function names it
                child.locals.add(n)
                child.rename[n] = self._local(n)
                if n in self.subst:
                    child.subst[n] = self.subst[n]
        self._bind_nonlocals(node, child, afn)
        signature = self._local_signature(tree)
        callee = types.SimpleNamespace(
            __qualname__=f"{self.fn.__qualname__}.<locals>.{name}", __name__=name
        )
        return self._inline_call(node, child, signature, callee, args, kwargs, lower)

    def _bind_nonlocals(self, node, child, afn):
        """``nonlocal total`` in a local def: the def's ``total`` is this function's, read and
        written where the call is inlined (as Python runs the def's body at its call)."""
        for name in _nonlocals(afn):
            if name not in self.locals:
                fence.refuse(
                    self.src,
                    node,
                    msg=f"the local function called here declares nonlocal {name!r}, which is "
                    "not a variable of the differentiated function",
                    hint="pass the value in as an argument and return the new value",
                )
            child.rename[name] = self._local(name)
            child.locals.add(name)
            child.subst.pop(name, None)
            child.nonlocals.add(name)

    def _refuse_local_def_value(self, node):
        fence.refuse(
            self.src,
            node,
            msg=f"the local function {node.value!r} can only be called: sourcegrad "
            "inlines it, so it cannot be returned, stored or passed",
            hint="define it at module level to pass it around",
        )

    def _local_signature(self, tree):
        """The ``inspect.Signature`` of a local def, its defaults lowered to constants here."""
        params = []
        every = (
            *tree.params.posonly_params,
            *tree.params.params,
            *tree.params.kwonly_params,
        )
        for p in every:
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
                else inspect.Parameter.POSITIONAL_ONLY
                if p in tree.params.posonly_params
                else inspect.Parameter.POSITIONAL_OR_KEYWORD
            )
            params.append(inspect.Parameter(p.name.value, kind, default=default))
        star, star_kw = tree.params.star_arg, tree.params.star_kwarg
        if isinstance(star, cst.Param):  # (after the positional ones, before the keyword-only)
            at = sum(1 for q in params if q.kind != inspect.Parameter.KEYWORD_ONLY)
            params.insert(at, inspect.Parameter(star.name.value, inspect.Parameter.VAR_POSITIONAL))
        if star_kw is not None:
            params.append(inspect.Parameter(star_kw.name.value, inspect.Parameter.VAR_KEYWORD))
        return inspect.Signature(params)


def _nonlocals(afn):
    """The names a def declares ``nonlocal`` in its own scope (not in defs nested in it)."""
    out, stack = [], list(afn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Nonlocal):
            out.extend(node.names)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            stack.extend(ast.iter_child_nodes(node))
    return out
