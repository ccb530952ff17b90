"""Tangent (forward-mode) rules, from one classification of the primitives.

Most tangents are not written by hand; a primitive's kind says how its tangent is made:

- **slope** — an elementwise function (a ufunc, a ``math`` function, an arithmetic operator)
  whose adjoint template is ``d[x] += d[y] * SLOPE`` (or ``unbroadcast(d[z] * SLOPE, x)`` for
  each operand of a binary one): the tangent is the same product with the operand's tangent in
  place of the result's adjoint, ``y_dot = x_dot * SLOPE`` (summed over the operands). The form
  is read from the parsed adjoint template (``slope_form``), never assumed: an adjoint of any
  other form (``d[y]`` twice, inside a call) gives no slope tangent.
- **linear** — the tangent is the same function of the tangents (``np.sum(x_dot, axis=0)``,
  ``x_dot[i]``, ``np.concatenate([a_dot, b_dot])``), every other argument as it was; an operand
  the rule differentiates but that has no tangent is passed as zeros.
- **multilinear** — products (``dot``, ``matmul``, ``einsum``, ``tensordot``, ``outer``, ...):
  one term per operand with a tangent, that operand replaced by its tangent (the product rule).
- **template** — the rest, as templates in the adjoint notation where ``d[p]`` is the *tangent*
  of ``p``, and each ``d[y] += E`` adds one term reading one operand's tangent (a term whose
  operand has no tangent is dropped): reductions with ties, ``sort``, ``clip``, ``where``,
  ``inv``, ``det``, ``solve``.

A primitive of none of these kinds has no tangent rule: forward mode refuses it when an operand
with a tangent reaches it (``transforms/forward.py``), never guesses.
"""

from __future__ import annotations

import ast
import builtins
import operator
from dataclasses import dataclass

import numpy as np

from sourcegrad.runtime import sequences as _seq
from sourcegrad.runtime import curvatures as _curvatures
from sourcegrad.runtime import filled_diagonal as _rt_filled_diagonal
from sourcegrad.runtime import outer_operand as _outer_operand
from sourcegrad.runtime import tangents as _rt

from ..templates import Deferred, Templates, parse_template
from . import NAMESPACE, RULES, _parse_params

LA = np.linalg


@dataclass(frozen=True)
class Tangent:
    kind: str  # slope | linear | multilinear | template
    template: object = None  # the tangent template (kind "template")


LINEAR = set()
MULTILINEAR = set()
TEMPLATES = Templates()  # primitive -> Template (``d[p]`` is p's tangent), parsed on first use
_SLOPE_CACHE = {}

TANGENT_NAMESPACE = dict(NAMESPACE)
TANGENT_NAMESPACE.update({n: getattr(_rt, n) for n in _rt.__all__})
TANGENT_NAMESPACE.update({n: getattr(_curvatures, n) for n in _curvatures.__all__})


def _keys(*fns):
    return [f for f in fns if f is not None]


def linear(*fns):
    LINEAR.update(_keys(*fns))


def multilinear(*fns):
    MULTILINEAR.update(_keys(*fns))


def tangent_rule(fns, params, body):
    """A tangent template: ``params`` as the adjoint rule's (result first), ``body`` lines
    ``d[y] += E`` each reading one operand's tangent ``d[p]``, and ``name = E`` locals."""
    for fn in _keys(*(fns if isinstance(fns, (list, tuple)) else [fns])):
        TEMPLATES[fn] = Deferred(
            lambda origin=f"tangent rule for {fn.__name__}": parse_template(
                body, *_parse_params(params), TANGENT_NAMESPACE, origin
            )
        )


# ---- the classification of elementwise functions -----------------------------------------------
_ELEMENTWISE_OPERATORS = {
    operator.neg,
    operator.pos,
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.pow,
    operator.mod,
    builtins.pow,
    builtins.abs,
    float,
}
_IDENTITIES = {np.asarray, np.asanyarray, np.array, np.float64, np.float32, float}


def is_elementwise(key):
    """A function applied entry by entry (so a slope times a tangent is its tangent)."""
    if isinstance(key, np.ufunc):
        return key.nout == 1
    try:
        if key in _ELEMENTWISE_OPERATORS or key in _IDENTITIES:
            return True
    except TypeError:
        return False
    return (
        getattr(key, "__module__", None) == "math"
        or (getattr(key, "__module__", "") or "").startswith("scipy.special")
        and callable(key)
    )


def _text(parts):
    return "".join(p if type(p) is str else f"__{p[0]}_{p[1]}__" for p in parts)


def slope_form(parts, adjoint):
    """Is the template expression ``parts`` a chain of ``*`` and ``/`` whose leftmost factor is
    ``d[result]`` (or ``-d[result]``), read once? Then it is ``d[result] * SLOPE``."""
    name = f"__A_{adjoint}__"
    try:
        tree = ast.parse(_text(parts).strip(), mode="eval").body
    except SyntaxError:
        return False
    if sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree)) != 1:
        return False
    node = tree
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        node = node.left
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Name) and node.id == name


def slope_derivable(key, template):
    """Can the tangent of ``key`` be read off its adjoint template (kind "slope")?"""
    cached = _SLOPE_CACHE.get(id(template))
    if cached is not None and cached[0] is template:
        return cached[1]
    ok = is_elementwise(key) and _slope_template(template)
    _SLOPE_CACHE[id(template)] = (template, ok)
    return ok


def _slope_template(template):
    result, operands = template.params[0], template.params[1:]
    if len(operands) not in (1, 2):
        return False
    acc = [s for s in template.stmts if s.accumulate]
    if any(s.reads_adjoints - {result} for s in template.stmts) or any(
        s.reads_adjoints for s in template.stmts if not s.accumulate
    ):
        return False
    if len(operands) == 1:
        return (
            len(acc) == 1
            and acc[0].target == operands[0]
            and len(template.stmts) == 1
            and slope_form(acc[0].parts, result)
        )
    return bool(acc) and all(s.inner is not None and slope_form(s.inner, result) for s in acc)


def lookup(key, template):
    """The tangent rule of primitive ``key`` (its adjoint ``template`` given), or None."""
    try:
        if key in TEMPLATES:
            return Tangent("template", TEMPLATES[key])
        if key in LINEAR:
            return Tangent("linear")
        if key in MULTILINEAR:
            return Tangent("multilinear")
    except TypeError:  # an unhashable callee
        return None
    if template is not None and slope_derivable(key, template):
        return Tangent("slope")
    derived = reduction_tangent(template) if template is not None else None
    return Tangent("template", derived) if derived is not None else None


_REDUCTION_CACHE = {}
_PLACEHOLDER = __import__("re").compile(r"__(V|A|L|F)_([A-Za-z0-9_]+?)__")


def reduction_tangent(template):
    """The tangent template of a reduction whose adjoint is ``d[a] += unreduce(d[y], a, axis,
    keepdims) * SLOPE`` (``SLOPE``: the partial derivative of each entry's reduced value with
    respect to the entry, an array shaped like ``a``): ``d[y] += np.sum(d[a] * SLOPE, axis=axis,
    keepdims=keepdims)``. Covers ``a`` only (another differentiated parameter with a tangent,
    ``ddof`` say, is refused). None for an adjoint of any other form."""
    cached = _REDUCTION_CACHE.get(id(template))
    if cached is not None and cached[0] is template:
        return cached[1]
    try:
        derived = _reduction_tangent(template)
    except (SyntaxError, ValueError):
        derived = None
    _REDUCTION_CACHE[id(template)] = (template, derived)
    return derived


def _reduction_tangent(template):
    result = template.params[0]
    acc = [s for s in template.stmts if s.accumulate]
    if (
        not acc
        or any(not s.accumulate for s in template.stmts)
        or acc[0].reads_adjoints != {result}
    ):
        return None
    target = acc[0].target
    tree = ast.parse(_text(acc[0].parts).strip(), mode="eval").body
    if sum(isinstance(n, ast.Name) and n.id == f"__A_{result}__" for n in ast.walk(tree)) != 1:
        return None
    factors = []
    node = tree
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        factors.append(node.right)
        node = node.left
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "__F_unreduce__"
        and len(node.args) >= 2
        and not node.keywords
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == f"__A_{result}__"
        and isinstance(node.args[1], ast.Name)
        and node.args[1].id == f"__V_{target}__"
    ):
        return None
    axis = ast.unparse(node.args[2]) if len(node.args) > 2 else "None"
    keepdims = ast.unparse(node.args[3]) if len(node.args) > 3 else "False"
    slope = " * ".join(
        ast.unparse(f) if len(factors) == 1 else f"({ast.unparse(f)})" for f in reversed(factors)
    )
    # an entry whose slope is zero (a NaN nansum skips, an entry a mask leaves out) adds nothing,
    # even where its tangent is NaN or infinite: selected, not multiplied by zero
    term = f"selected(d[{target}], {slope})" if factors else f"d[{target}]"
    text = f"d[{result}] += np.sum({term}, axis={axis}, keepdims={keepdims})"
    for other in acc[
        1:
    ]:  # d[p] += unbroadcast(d[y] * SLOPE, p): an elementwise term, p_dot * SLOPE
        if other.inner is None or not slope_form(other.inner, result):
            return None
        term = _text(other.inner).strip().replace(f"__A_{result}__", f"__A_{other.target}__")
        text += f"\nd[{result}] += expand({term}, {result})"
    text = _PLACEHOLDER.sub(lambda m: f"d[{m.group(2)}]" if m.group(1) == "A" else m.group(2), text)
    namespace = dict(template.namespace)
    namespace.update(np=np, expand=_rt.expand, selected=_rt.selected)
    return parse_template(
        text, list(template.params), template.defaults, namespace, f"tangent of {template.origin}"
    )


def has_tangent(key):
    return lookup(key, RULES.get(key)) is not None


# ---- linear: the same function of the tangents ----------------------------------------------------
linear(
    operator.getitem,
    np.sum,
    np.mean,
    np.add.reduce,
    np.cumsum,
    np.reshape,
    np.ravel,
    np.squeeze,
    np.expand_dims,
    np.broadcast_to,
    _outer_operand,
    np.copy,
    np.atleast_1d,
    np.atleast_2d,
    np.atleast_3d,
    np.ascontiguousarray,
    np.transpose,
    np.swapaxes,
    np.moveaxis,
    getattr(np, "matrix_transpose", None),
    getattr(LA, "matrix_transpose", None),
    np.flip,
    np.fliplr,
    np.flipud,
    np.roll,
    np.rot90,
    np.tile,
    np.repeat,
    np.concatenate,
    np.stack,
    np.hstack,
    np.vstack,
    getattr(np, "row_stack", None),
    np.dstack,
    np.column_stack,
    np.append,
    np.trace,
    getattr(LA, "trace", None),
    np.diag,
    np.diagflat,
    np.diagonal,
    getattr(LA, "diagonal", None),
    np.tril,
    np.triu,
    np.take,
    np.take_along_axis,
    np.diff,
    np.real,
    np.imag,
    np.conjugate,
    np.fft.fft,
    np.fft.ifft,
    np.fft.fft2,
    np.fft.ifft2,
    np.fft.fftn,
    np.fft.ifftn,
    np.fft.rfft,
    np.fft.rfft2,
    np.fft.rfftn,
    np.fft.fftshift,
    np.fft.ifftshift,
    _seq.concat_sequences,
    _seq.stack_entries,
    _seq.dict_from,
    list,
    tuple,
    builtins.sum,
    *_IDENTITIES,
)
from sourcegrad.runtime import parameters as _params, structures as _structures  # noqa: E402
from . import indexing as _indexing, reductions as _reductions  # noqa: E402

linear(_indexing._conj_method)

# (irfft: real-linear, so its tangent is the same transform of the tangent)
linear(
    np.pad,
    np.split,
    np.array_split,
    np.hsplit,
    np.vsplit,
    np.dsplit,
    getattr(np, "unstack", None),
    np.rollaxis,
    np.lib.stride_tricks.sliding_window_view,
    np.fft.irfft,
    np.fft.irfft2,
    np.fft.irfftn,
    np.delete,
    np.insert,
    _rt_filled_diagonal,
    np.block,
    np.full,
    np.full_like,
    np.meshgrid,
    getattr(np, "cumulative_sum", None),
    _reductions.sum_where,
    _params.index_join,
    _structures.field,
)

# ---- multilinear: the product rule ---------------------------------------------------------------
multilinear(
    np.dot,
    np.matmul,
    operator.matmul,
    getattr(LA, "matmul", None),
    np.inner,
    np.outer,
    getattr(LA, "outer", None),
    np.vdot,
    np.tensordot,
    getattr(LA, "tensordot", None),
    np.einsum,
    np.kron,
    np.cross,
    getattr(LA, "cross", None),
    getattr(np, "vecdot", None),
    getattr(LA, "vecdot", None),
    getattr(np, "matvec", None),
    getattr(np, "vecmat", None),
    # ``seq * n`` or, where the values make it numpy's, ``a * b``: either is bilinear
    _seq.repeat_sequence,
)

multilinear(np.convolve, np.correlate)

# ---- the rest, written out ------------------------------------------------------------------------
# reductions to groups of entries: each entry feeds one value, so the adjoint of a unit cotangent
# holds each entry's partial derivative, and the tangent is the sum of the tangent times it
tangent_rule(
    np.linalg.norm,
    "y, x, ord=None, axis=None, keepdims=False",
    "d[y] += np.sum(d[x] * norm_adjoint(np.ones_like(y), x, y, ord, axis, keepdims), axis=axis, keepdims=keepdims)",
)
tangent_rule(
    getattr(LA, "vector_norm", None),
    "y, x, axis=None, keepdims=False, ord=2",
    "d[y] += np.sum(d[x] * vector_norm_adjoint(np.ones_like(y), x, y, ord, axis, keepdims), axis=axis, "
    "keepdims=keepdims)",
)
tangent_rule(
    getattr(LA, "matrix_norm", None),
    "y, x, keepdims=False, ord='fro'",
    "d[y] += np.sum(d[x] * norm_adjoint(np.ones_like(y), x, y, ord, (-2, -1), keepdims), axis=(-2, -1), "
    "keepdims=keepdims)",
)
tangent_rule(
    np.ptp,
    "y, a, axis=None, keepdims=False",
    "d[y] += np.sum(d[a] * ptp_adjoint(np.ones_like(y), a, axis, keepdims), axis=axis, keepdims=keepdims)",
)
tangent_rule(
    np.median,
    "y, a, axis=None, out=None, overwrite_input=False, keepdims=False",
    "d[y] += np.sum(d[a] * quantile_adjoint(np.ones_like(y), a, 0.5, axis, keepdims), axis=axis, "
    "keepdims=keepdims)",
)
tangent_rule(
    np.interp,
    "y, x, xp, fp, left=None, right=None, period=None",
    """
d[y] += d[x] * interp_adjoint(np.ones_like(y), x, xp, fp, 0, left, right)
d[y] += np.interp(x, xp, d[fp], zero_unless_none(left), zero_unless_none(right))
d[y] += expand(d[left] * (x < xp[0]), y)
d[y] += expand(d[right] * (x > xp[-1]), y)
""",
)
tangent_rule(LA.cholesky, "y, a, upper=False", "d[y] += cholesky_tangent(d[a], y, upper)")
tangent_rule(LA.eigh, "y, a, UPLO='L'", "d[y] += eigh_tangent(d[a], y, UPLO)")
tangent_rule(
    LA.eigvalsh, "y, a, UPLO='L'", "d[y] += eigh_tangent(d[a], np.linalg.eigh(a, UPLO), UPLO)[0]"
)
tangent_rule(
    LA.slogdet,
    "y, a",
    "d[y] += (tangent_zeros(y[0]), np.trace(np.linalg.solve(a, d[a]), axis1=-2, axis2=-1))",
)
tangent_rule(
    [np.maximum, np.fmax, builtins.max],
    "z, x, y",
    """
d[z] += expand(extremum_tangent(x > y, x == y, d[x], tangent_zeros(y)), z)
d[z] += expand(extremum_tangent(x > y, x == y, tangent_zeros(x), d[y]), z)
""",
)
tangent_rule(
    [np.minimum, np.fmin, builtins.min],
    "z, x, y",
    """
d[z] += expand(extremum_tangent(x < y, x == y, d[x], tangent_zeros(y)), z)
d[z] += expand(extremum_tangent(x < y, x == y, tangent_zeros(x), d[y]), z)
""",
)
tangent_rule(
    [np.max, np.amax, np.min, np.amin, np.nanmax, np.nanmin],
    "y, a, axis=None, keepdims=False",
    "d[y] += reduce_extremum_tangent(d[a], a, y, axis, keepdims)",
)
tangent_rule(
    [np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce],
    "y, array, axis=0, dtype=None, out=None, keepdims=False",
    "d[y] += reduce_extremum_tangent(d[array], array, y, axis, keepdims)",
)
tangent_rule(np.sort, "y, a, axis=-1", "d[y] += sort_tangent(d[a], a, axis)")
tangent_rule(
    np.clip,
    "y, a, a_min=None, a_max=None, min=None, max=None",
    """
lo = either(a_min, min)
hi = either(a_max, max)
d[y] += expand(d[a] * clip_mask(a, lo, hi), y)
d[y] += expand(d[a_min] * clip_lo_mask(a, lo, hi), y)
d[y] += expand(d[a_max] * clip_hi_mask(a, lo, hi), y)
d[y] += expand(d[min] * clip_lo_mask(a, lo, hi), y)
d[y] += expand(d[max] * clip_hi_mask(a, lo, hi), y)
""",
)
tangent_rule(
    np.where,
    "z, condition, x, y",
    """
d[z] += expand(np.where(condition, d[x], 0.0), z)
d[z] += expand(np.where(condition, 0.0, d[y]), z)
""",
)
tangent_rule(LA.inv, "y, a", "d[y] += -(y @ d[a] @ y)")
tangent_rule(LA.det, "y, a", "d[y] += y * np.trace(np.linalg.solve(a, d[a]), axis1=-2, axis2=-1)")
tangent_rule(
    LA.solve,
    "x, a, b",
    """
d[x] += np.linalg.solve(a, d[b])
d[x] += -np.linalg.solve(a, d[a] @ x)
""",
)
tangent_rule(
    np.prod,
    "y, a, axis=None, dtype=None, keepdims=False",
    "d[y] += np.sum(d[a] * prod_of_others(a, axis), axis=axis, keepdims=keepdims)",
)
tangent_rule([np.absolute, builtins.abs], "y, x", "d[y] += abs_tangent(d[x], x, y)")  # abs'(0) = 0
tangent_rule(_indexing._astype, "y, x, dtype", "d[y] += cast_tangent(d[x], y)")
tangent_rule(_indexing._as_dtype, "y, x, dtype=None", "d[y] += cast_tangent(d[x], y)")
tangent_rule(_indexing._item, "y, x", "d[y] += np.asarray(d[x]).item()")
tangent_rule(_indexing._flatten, "y, x, order='C'", "d[y] += np.ravel(d[x], order=order).copy()")


# ---- scipy.special's reductions over an axis (when scipy is installed) -----------------------------
try:
    from scipy import special as _sc
except ImportError:  # an optional dependency: no rules
    _sc = None
if _sc is not None:
    # a symmetric Jacobian
    tangent_rule(_sc.softmax, "y, x, axis=None", "d[y] += softmax_adjoint(d[x], y, axis)")
    tangent_rule(_sc.log_softmax, "y, x, axis=None", "d[y] += log_softmax_tangent(d[x], y, axis)")
    tangent_rule(
        _sc.logsumexp,
        "y, a, axis=None, b=None, keepdims=False, return_sign=False",
        """
d[y] += logsumexp_tangent(d[a], a, y, axis, b, keepdims, 0)
d[y] += logsumexp_tangent(d[b], a, y, axis, b, keepdims, 1)
""",
    )

# ---- scipy.stats' location-scale families: the slopes of their adjoint rules (``stats.py``), each
# times one operand's tangent (dz = (dx - dloc - z dscale) / scale)
from . import stats as _stats  # noqa: E402


def _location_scale_tangent(fn, gz, gs, shapes, slopes):
    params = "".join(f"{p}, " for p in shapes)
    lines = [
        "z = standardized(x, loc, scale)",
        f"sz = {gz}",
        "d[y] += sz * d[x] / scale",
        "d[y] += -sz * d[loc] / scale",
        f"d[y] += ({gs if gs is not None else '0.0'} - sz * z / scale) * d[scale]",
    ]
    lines += [f"d[y] += ({slope}) * d[{p}]" for p, slope in zip(shapes, slopes)]
    tangent_rule(fn, f"y, x, {params}loc=0, scale=1", "\n".join(lines))


for _fn, _slopes in _stats.LOCATION_SCALE.items():
    _location_scale_tangent(_fn, *_slopes)
if _stats.st is not None:
    tangent_rule(_stats.st.poisson.logpmf, "y, k, mu", "d[y] += (k / mu - 1.0) * d[mu]")

from . import second_order  # noqa: E402,F401  (registers the helpers' adjoints)
