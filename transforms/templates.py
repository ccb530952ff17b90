"""Adjoint templates: rules written as Python in which ``d[x]`` means "the adjoint of x".

A template is parsed once (libcst) into a list of statements whose names are fields;
instantiating it for one call (``instantiate.py``) fills the fields with the call's atoms, so the
generated code reads like the rule. Because every operand is a name or a parenthesised constant after
normalization, substituting it can never change operator precedence.

Template statements take two forms::

    d[x] += <expr>      # accumulate into the adjoint of parameter x
    name = <expr>       # a local temporary (renamed to a fresh name per use)
"""

from __future__ import annotations

import builtins
import inspect
import re
import textwrap
from dataclasses import dataclass

import libcst as cst

from .instantiate import Instance, instantiate  # noqa: F401  (where the passes read them)

_FIELD = re.compile(r"__(V|A|L|F)_([A-Za-z0-9_]+?)__")


@dataclass(frozen=True)
class TemplateStmt:
    target: str  # parameter name (accumulate) or local name (assign)
    accumulate: bool
    parts: tuple  # literal text and fields: ("V", param) value, ("A", param) adjoint, ("L", local), ("F", global)
    reads_values: frozenset
    shape_only: (
        frozenset  # parameters read only for their shape/dtype (unbroadcast(g, x), np.shape(x))
    )
    reads_adjoints: frozenset
    reads_locals: frozenset
    # ``d[x] += unbroadcast(E, x)``: the parts of E, which shape inference may use alone
    # (shapes already match) or sum over known axes; None for any other form
    inner: tuple = None
    inner_reads_target: bool = False  # does E read x's value too?
    # may ``k * <expr>`` be written without parentheses (a call, a name, a product or quotient)?
    tight: bool = False
    inner_tight: bool = False
    # ``d[x] += unreduce(d[y], x, axis, keepdims[, mean=True])``, y the result: (axis, keepdims,
    # mean); with the constant seed as d[y] it is ``seed_like(x)`` (``reverse._seeded``)
    reduces: tuple = None

    @property
    def outer_unbroadcast(self):
        return self.inner is not None


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one rule, one template
class Template:
    params: tuple  # result first, then the primitive's parameters
    defaults: dict
    stmts: tuple
    free_names: frozenset  # globals the template text uses (np, unbroadcast, ...)
    namespace: dict  # where those free names resolve
    origin: str
    only: tuple = ()  # ((parameter, allowed constant values), ...): other values have no rule
    # parameters of ``only`` whose value must be a literal: a variable is refused, even though the
    # rule reads it (a variable could hold a value the rule does not handle)
    literal: frozenset = frozenset()
    # an elementwise broadcasting binary rule: each operand's adjoint is unbroadcast(an elementwise
    # expression linear in d[result], operand), so a d[result] that is still broadcast to a larger
    # shape (its sum over the extra axes left for later) gives the operands' adjoints exactly
    broadcasting: bool = False
    # ((operand ranks, Template), ...): variants used when shape inference knows the ranks of the
    # differentiated operands (``np.dot`` of two matrices needs no rank dispatch at run time)
    ranks: tuple = ()
    # ((parameter, why it carries no gradient), ...) for each parameter no statement accumulates
    # into and that has a declared reason; an active value reaching any other is refused (gate.py)
    nondiff: tuple = ()

    def signature(self):
        return self.params[1:]

    def global_object(self, name):
        """The object a free name of the template means."""
        return self.namespace[name] if name in self.namespace else getattr(builtins, name)


class Deferred:
    """A template registered but not parsed yet: ``get()`` builds it on first use and keeps it,
    so every primitive registered by one rule shares one ``Template``. A process pays for the
    templates of the primitives it differentiates, not for the whole library."""

    __slots__ = ("_build", "_template")

    def __init__(self, build):
        self._build = build
        self._template = None

    def get(self):
        if self._template is None:
            self._template = self._build()
            self._build = None
        return self._template


class Templates(dict):
    """primitive -> ``Template``; an entry registered as a ``Deferred`` is parsed when first
    read (``[]``, ``get``, ``items``, ``values``, ``pop``). Membership never parses."""

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        if type(value) is Deferred:
            value = value.get()
            dict.__setitem__(self, key, value)
        return value

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key, *default):
        if key in self:
            value = self[key]
            del self[key]
            return value
        return dict.pop(self, key, *default)

    def items(self):
        return [(k, self[k]) for k in self]

    def values(self):
        return [self[k] for k in self]


_KEYWORDS = frozenset({"None", "True", "False"})


class _Placeholders(cst.CSTTransformer):
    """Every name of a template statement becomes a field: ``__V_x__`` a parameter's value,
    ``__A_x__`` its adjoint (``d[x]``), ``__L_t__`` a local, ``__F_np__`` a global."""

    def __init__(self, params, local_names):
        self.params = params
        self.locals = local_names
        self.free = set()
        # ids of names that label something (``x.shape``, ``axis=``): no fields
        self._labels = set()

    def visit_Attribute(self, node):
        self._labels.add(id(node.attr))

    def visit_Arg(self, node):
        if node.keyword is not None:
            self._labels.add(id(node.keyword))

    def leave_Subscript(self, original, updated):
        if (
            isinstance(updated.value, cst.Name)
            and updated.value.value == "d"
            and len(updated.slice) == 1
            and isinstance(updated.slice[0].slice, cst.Index)
            and isinstance(updated.slice[0].slice.value, cst.Name)
        ):
            name = updated.slice[0].slice.value.value
            if name.startswith("__V_"):
                name = name[4:-2]
            if name not in self.params:
                raise ValueError(f"d[{name}]: {name} is not a parameter of the template")
            return cst.Name(f"__A_{name}__")
        return updated

    def leave_Name(self, original, updated):
        n = updated.value
        if id(original) in self._labels:
            return updated
        if n in self.params:
            return cst.Name(f"__V_{n}__")
        if n in self.locals:
            return cst.Name(f"__L_{n}__")
        if n in _KEYWORDS or n == "d" or n.startswith("__"):
            return updated
        self.free.add(n)
        return cst.Name(f"__F_{n}__")

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)  # ``x.shape``: ``shape`` is no parameter

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)  # ``axis=axis`` keeps its keyword


_SHAPE_READERS = {"shape", "size", "ndim"}  # np.shape(x), np.size(x), np.ndim(x)


def _shape_only_uses(expr, param):
    """Is every use of ``param`` in the template expression one that needs only its shape and
    dtype: the last argument of ``unbroadcast``, the second of ``unreduce``, or
    ``np.shape/size/ndim(param)``? Decided on the template's libcst tree."""
    allowed, uses = set(), []

    class V(cst.CSTVisitor):
        def visit_Call(self, node):
            f, args = node.func, node.args
            positional = [a for a in args if a.keyword is None]
            if (
                isinstance(f, cst.Name)
                and f.value == "unbroadcast"
                and args
                and args[-1].keyword is None
            ):
                allowed.add(id(args[-1].value))
            elif isinstance(f, cst.Name) and f.value == "unreduce" and len(positional) > 1:
                allowed.add(id(positional[1].value))
            elif (
                isinstance(f, cst.Attribute)
                and isinstance(f.value, cst.Name)
                and f.value.value == "np"
                and f.attr.value in _SHAPE_READERS
                and len(args) == 1
            ):
                allowed.add(id(args[0].value))

        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

        def visit_Arg(self, node):
            node.value.visit(self)
            return False

        def visit_Name(self, node):
            if node.value == param:
                uses.append(id(node))

    expr.visit(V())
    return all(u in allowed for u in uses)


def _outer_unbroadcast(expr, target):
    """``unbroadcast(E, target)`` as the whole expression: E, else None."""
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "unbroadcast"
        and len(expr.args) == 2
        and all(a.keyword is None and not a.star for a in expr.args)
        and isinstance(expr.args[1].value, cst.Name)
        and expr.args[1].value.value == target
    ):
        return expr.args[0].value
    return None


def _unreduce_of_result(expr, target, result):
    """``unreduce(d[result], target, axis, keepdims)``, or with ``mean=True``, as the whole
    expression: (the axis parameter, the keepdims parameter, mean), else None."""
    if not (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "unreduce"
    ):
        return None
    args = expr.args
    positional = [a.value for a in args if a.keyword is None and not a.star]
    keywords = [a for a in args if a.keyword is not None]
    mean = (
        len(keywords) == 1
        and keywords[0].keyword.value == "mean"
        and isinstance(keywords[0].value, cst.Name)
        and keywords[0].value.value == "True"
    )
    if (
        len(positional) != 4
        or len(positional) + len(keywords) != len(args)
        or (keywords and not mean)
    ):
        return None
    g, x, axis, keepdims = positional
    seeded = (
        isinstance(g, cst.Subscript)
        and isinstance(g.value, cst.Name)
        and g.value.value == "d"
        and len(g.slice) == 1
        and isinstance(g.slice[0].slice, cst.Index)
        and isinstance(g.slice[0].slice.value, cst.Name)
        and g.slice[0].slice.value.value == result
    )
    if (
        not seeded
        or not all(isinstance(n, cst.Name) for n in (x, axis, keepdims))
        or x.value != target
    ):
        return None
    return axis.value, keepdims.value, mean


def _reads_name(expr, name):
    found = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

        def visit_Arg(self, node):
            node.value.visit(self)
            return False

        def visit_Name(self, node):
            found.append(node.value == name)

    expr.visit(V())
    return any(found)


_TIGHT_OPERATORS = (cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power)


def _tight(expr):
    """Does ``k * expr`` read as ``k * (expr)``? (For a product or quotient, ``(k * a) * b``
    equals ``k * (a * b)`` exactly when ``k`` is a power of two.)"""
    if expr.lpar:
        return True
    if isinstance(expr, (cst.Call, cst.Name, cst.Attribute, cst.Subscript, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return True
    return isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _TIGHT_OPERATORS)


def _parts(expr, params, local_names, free):
    """The template expression as literal text and fields."""
    tr = _Placeholders(params, local_names)
    code = cst.Module([]).code_for_node(expr.visit(tr))
    free |= tr.free
    parts, last = [], 0
    for m in _FIELD.finditer(code):
        if m.start() > last:
            parts.append(code[last : m.start()])
        parts.append((m.group(1), m.group(2)))
        last = m.end()
    if last < len(code):
        parts.append(code[last:])
    return tuple(parts)


def parse_template(text, params, defaults, namespace, origin):
    """Parse the body ``text`` of a template with the given parameter names."""
    stmts, local_names = _statements(cst.parse_module(textwrap.dedent(text)), origin)
    free = set()
    out = [
        _template_stmt(tname, accumulate, expr, params, local_names, free)
        for tname, accumulate, expr in stmts
    ]
    missing = {n for n in free if n not in namespace and not hasattr(builtins, n)}
    if missing:
        raise ValueError(f"{origin}: template uses undefined names {sorted(missing)}")
    return Template(tuple(params), dict(defaults), tuple(out), frozenset(free), namespace, origin)


def _statements(module, origin):
    """The template's statements as (target, accumulates?, expression), and its local names."""
    local_names = set()
    stmts = []
    shape = f"{origin}: a template statement must be `d[x] += expr` or `name = expr`"
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            raise ValueError(shape)
        small = line.body[0]
        if isinstance(small, cst.Expr) and isinstance(
            small.value, (cst.SimpleString, cst.ConcatenatedString)
        ):
            continue  # docstring
        if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
            target = small.target
            if not (
                isinstance(target, cst.Subscript)
                and isinstance(target.value, cst.Name)
                and target.value.value == "d"
            ):
                raise ValueError(f"{origin}: only d[x] += ... accumulates")
            stmts.append((target.slice[0].slice.value.value, True, small.value))
        elif (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
        ):
            tname = small.targets[0].target.value
            local_names.add(tname)
            stmts.append((tname, False, small.value))
        else:
            raise ValueError(shape)
    return stmts, local_names


def _template_stmt(tname, accumulate, expr, params, local_names, free):
    """One statement's record: its pieces, and the facts later passes read from its tree."""
    parts = _parts(expr, params, local_names, free)
    fields = [p for p in parts if type(p) is tuple]
    inner = _outer_unbroadcast(expr, tname) if accumulate else None
    values = frozenset(n for k, n in fields if k == "V")
    return TemplateStmt(
        target=tname,
        accumulate=accumulate,
        parts=parts,
        reads_values=values,
        shape_only=frozenset(n for n in values if _shape_only_uses(expr, n)),
        reads_adjoints=frozenset(n for k, n in fields if k == "A"),
        reads_locals=frozenset(n for k, n in fields if k == "L"),
        inner=_parts(inner, params, local_names, set()) if inner is not None else None,
        inner_reads_target=inner is not None and _reads_name(inner, tname),
        tight=_tight(expr),
        inner_tight=inner is not None and _tight(inner),
        reduces=_unreduce_of_result(expr, tname, params[0]) if accumulate else None,
    )


def template_from_function(fn):
    """Parse a template written as a Python function (the ``@adjoint`` decorator form)."""
    src = textwrap.dedent(inspect.getsource(fn))
    module = cst.parse_module(src)
    fdef = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    sig = inspect.signature(fn)
    params = list(sig.parameters)
    defaults = {
        k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty
    }
    body = cst.Module(list(fdef.body.body)).code
    origin = f"{fn.__module__}:{fn.__code__.co_firstlineno}"
    return parse_template(body, params, defaults, fn.__globals__, origin)


def custom_template(cls, nargs, naming, namespace):
    """The template that calls a ``sourcegrad.Function`` subclass's own ``backward``.

    Returns (template, the name the class has in the generated code)."""
    import sourcegrad.runtime as rt

    alias = None
    for k, v in namespace.items():
        if v is cls:
            alias = k
    if alias is None:
        alias = naming.unique(cls.__name__)
        namespace[alias] = cls
    xs = [f"x{i}" for i in range(nargs)]
    # custom_backward reads y (the zero cotangents of a tuple's parts) and every input (the check
    # of each gradient's shape, a clear error rather than a broadcast): see runtime.custom_backward
    inputs = f"({', '.join(xs)}{',' if nargs == 1 else ''})"
    body = [f"g = custom_backward({alias}, ctx, d[y], y, {inputs})"]
    body += [f"d[{x}] += grad_of(g, {i}, {x})" for i, x in enumerate(xs)]
    ns = {alias: cls, "grad_of": rt.grad_of, "custom_backward": rt.custom_backward}
    return parse_template(
        "\n".join(body), ["y", "ctx"] + xs, {}, ns, f"{cls.__qualname__}.backward"
    ), alias


def gradient_call_template(g, nargs, naming, namespace):
    """The template of a call ``y = g(x0, ...)`` to a gradient ``g`` made by sourcegrad: each
    active argument's adjoint comes from ``g``'s second derivatives (``pullback_of_gradient``).
    One statement per argument, so only the arguments that are active cost a pass."""
    import sourcegrad.runtime as rt

    alias = next((k for k, v in namespace.items() if v is g), None)
    if alias is None:
        alias = naming.unique(getattr(g, "__name__", "gradient"))
        namespace[alias] = g
    xs = [f"x{i}" for i in range(nargs)]
    inputs = f"({', '.join(xs)}{',' if nargs == 1 else ''})"
    body = [
        f"d[{x}] += pullback_of_gradient({alias}, {i}, d[y], {inputs})" for i, x in enumerate(xs)
    ]
    ns = {alias: g, "pullback_of_gradient": rt.pullback_of_gradient}
    return parse_template(
        "\n".join(body), ["y"] + xs, {}, ns, f"{alias} (a gradient made by sourcegrad)"
    )
