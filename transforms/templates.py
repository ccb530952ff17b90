"""Adjoint templates: rules written as Python in which ``d[x]`` means "the adjoint of x".

A template is parsed once (libcst) into a list of statements whose names are format fields;
instantiating it for one call is a ``str.format`` with the call's atoms, so the generated code
reads like the rule. Because every operand is a name or a parenthesised constant after
normalization, substituting it can never change operator precedence.

Template statements take two forms::

    d[x] += <expr>      # accumulate into the adjoint of parameter x
    name = <expr>       # a local temporary (renamed to a fresh name per use)
"""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass

import libcst as cst

_FIELD = re.compile(r"__(V|A|L)_([A-Za-z0-9_]+?)__")


@dataclass(frozen=True)
class TemplateStmt:
    target: str  # parameter name (accumulate) or local name (assign)
    accumulate: bool
    fmt: str  # format string; fields V_<param>, A_<param>, L_<local>
    reads_values: frozenset
    shape_only: frozenset  # parameters read only for their shape/dtype (unbroadcast(g, x), np.shape(x))
    reads_adjoints: frozenset
    reads_locals: frozenset


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one rule, one template
class Template:
    params: tuple  # result first, then the primitive's parameters
    defaults: dict
    stmts: tuple
    free_names: frozenset  # globals the template text uses (np, unbroadcast, ...)
    namespace: dict  # where those free names resolve
    origin: str
    only: tuple = ()  # ((parameter, allowed constant values), ...): other values have no rule
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


class _Placeholders(cst.CSTTransformer):
    def __init__(self, params, local_names):
        self.params = params
        self.locals = local_names
        self.free = set()

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
        if n in self.params:
            return cst.Name(f"__V_{n}__")
        if n in self.locals:
            return cst.Name(f"__L_{n}__")
        return updated

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)  # ``x.shape``: ``shape`` is no parameter

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)  # ``axis=axis`` keeps its keyword


def _free_names(expr_code, params, local_names):
    names = set()
    module = cst.parse_expression(expr_code)

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

        def visit_Name(self, node):
            names.add(node.value)

        def visit_Arg(self, node):
            node.value.visit(self)
            return False

    module.visit(V())
    keywords = {"None", "True", "False"}
    return {n for n in names if not n.startswith("__") and n not in params and n not in local_names
            and n != "d" and n not in keywords}


_SHAPE_CALLS = ("np.shape(", "np.size(", "np.ndim(")


def _shape_only(code, param):
    """Is every use of ``param`` in ``code`` one that needs only its shape and dtype: the last
    argument of ``unbroadcast``, the second of ``unreduce``, or ``np.shape/size/ndim(param)``?"""
    field = f"__V_{param}__"
    start = 0
    while True:
        i = code.find(field, start)
        if i < 0:
            return True
        start = i + len(field)
        before, after = code[:i], code[start:]
        if any(before.endswith(c) for c in _SHAPE_CALLS) and after.startswith(")"):
            continue
        opener = _call_of_argument(before)
        if opener == "unbroadcast" and after.startswith(")"):
            continue
        if opener == "unreduce" and _argument_index(before) == 1:
            continue
        return False


def _call_of_argument(before):
    """The name of the call whose argument list ``before`` ends inside."""
    depth = 0
    for j in range(len(before) - 1, -1, -1):
        ch = before[j]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                k = j
                while k > 0 and (before[k - 1].isalnum() or before[k - 1] in "_."):
                    k -= 1
                return before[k:j] if ch == "(" else None
            depth -= 1
    return None


def _argument_index(before):
    """How many top-level commas precede the argument ``before`` ends at, in its call."""
    depth, commas = 0, 0
    for ch in reversed(before):
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                return commas
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
    return commas


def _escape(code):
    return code.replace("{", "{{").replace("}", "}}")


def _to_fmt(code):
    return _FIELD.sub(lambda m: "{" + m.group(1) + "_" + m.group(2) + "}", _escape(code))


def parse_template(text, params, defaults, namespace, origin):
    """Parse the body ``text`` of a template with the given parameter names."""
    module = cst.parse_module(textwrap.dedent(text))
    local_names = set()
    stmts = []
    free = set()
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            raise ValueError(f"{origin}: a template statement must be `d[x] += expr` or `name = expr`")
        small = line.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            continue  # docstring
        if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
            target = small.target
            if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and target.value.value == "d"):
                raise ValueError(f"{origin}: only d[x] += ... accumulates")
            tname = target.slice[0].slice.value.value
            stmts.append((tname, True, small.value))
        elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            tname = small.targets[0].target.value
            local_names.add(tname)
            stmts.append((tname, False, small.value))
        else:
            raise ValueError(f"{origin}: a template statement must be `d[x] += expr` or `name = expr`")
    out = []
    for tname, accumulate, expr in stmts:
        code = cst.Module([]).code_for_node(expr)
        free |= _free_names(code, params, local_names)
        tr = _Placeholders(params, local_names)
        new = expr.visit(tr)
        fcode = cst.Module([]).code_for_node(new)
        fields = _FIELD.findall(fcode)
        out.append(
            TemplateStmt(
                target=tname,
                accumulate=accumulate,
                fmt=_to_fmt(fcode),
                reads_values=frozenset(n for k, n in fields if k == "V"),
                shape_only=frozenset(n for k, n in fields if k == "V" and _shape_only(fcode, n)),
                reads_adjoints=frozenset(n for k, n in fields if k == "A"),
                reads_locals=frozenset(n for k, n in fields if k == "L"),
            )
        )
    missing = {n for n in free if n not in namespace and n not in __builtins__}
    if missing:
        raise ValueError(f"{origin}: template uses undefined names {sorted(missing)}")
    return Template(tuple(params), dict(defaults), tuple(out), frozenset(free), namespace, origin)


def template_from_function(fn):
    """Parse a template written as a Python function (the ``@adjoint`` decorator form)."""
    src = textwrap.dedent(inspect.getsource(fn))
    module = cst.parse_module(src)
    fdef = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    sig = inspect.signature(fn)
    params = list(sig.parameters)
    defaults = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    body = cst.Module(list(fdef.body.body)).code
    origin = f"{fn.__module__}:{fn.__code__.co_firstlineno}"
    return parse_template(body, params, defaults, fn.__globals__, origin)


@dataclass
class Instance:
    """One template statement, instantiated: target adjoint or temporary, and expression text."""

    target: str  # the adjoint variable (accumulate) or fresh temporary (assign)
    accumulate: bool
    expr: str
    reads_adjoint: tuple  # adjoint variable names it reads
    source_param: str = ""  # the template parameter it accumulates into


def instantiate(template, values, adjoints, fresh):
    """Fill ``template`` for one call.

    ``values``: parameter -> rendered atom text; ``adjoints``: parameter -> adjoint variable name,
    or None when that parameter is inactive (its statements are dropped); ``fresh()``: a new
    temporary name."""
    live = [s for s in template.stmts if not s.accumulate or adjoints.get(s.target)]
    needed = set()
    for s in live:
        needed |= s.reads_locals
    kept = []
    for s in reversed(live):  # drop temporaries nobody reads
        if s.accumulate or s.target in needed:
            kept.append(s)
            needed |= s.reads_locals
    kept.reverse()
    local_map = {}
    out = []
    for s in kept:
        fields = {f"V_{p}": values[p] for p in s.reads_values}
        fields.update({f"A_{p}": adjoints[p] for p in s.reads_adjoints})
        fields.update({f"L_{n}": local_map[n] for n in s.reads_locals})
        expr = _fold(s.fmt.format(**fields))
        if s.accumulate:
            out.append(Instance(adjoints[s.target], True, expr, tuple(adjoints[p] for p in s.reads_adjoints), s.target))
        else:
            local_map[s.target] = fresh(s.target)
            out.append(Instance(local_map[s.target], False, expr, tuple(adjoints[p] for p in s.reads_adjoints)))
    return out


_ARITH = re.compile(r"\((-?\d+(?:\.\d+)?) ([-+*]) (\d+(?:\.\d+)?)\)")
_POW1 = re.compile(r" \*\* 1(?![\d.eE])")


def _fold(expr):
    """Fold what a constant operand leaves behind: ``x ** (2 - 1)`` -> ``x``."""
    if "(" not in expr:
        return expr
    expr = _ARITH.sub(lambda m: _num(m.group(1), m.group(2), m.group(3)), expr)
    return _POW1.sub("", expr)


def _num(a, op, b):
    x, y = (float(a), float(b)) if "." in a + b else (int(a), int(b))
    v = x - y if op == "-" else x + y if op == "+" else x * y
    return f"({v})" if v < 0 else str(v)


def reads_of(template, adjoints_active):
    """Which template parameters' *values* the statements for the active parameters read."""
    out = set()
    for s in template.stmts:
        if not s.accumulate or s.target in adjoints_active:
            out |= s.reads_values
    return out


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
    body = [f"g = {alias}.backward(ctx, d[y])"] + [f"d[{x}] += grad_of(g, {i}, {x})" for i, x in enumerate(xs)]
    ns = {alias: cls, "grad_of": rt.grad_of}
    return parse_template("\n".join(body), ["y", "ctx"] + xs, {}, ns, f"{cls.__qualname__}.backward"), alias
