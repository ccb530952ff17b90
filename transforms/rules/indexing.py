"""Selection and indexing: the adjoint scatters the gradient back to where values came from."""

import operator

import numpy as np

from sourcegrad.runtime import add_at, index_join, maximum_at, minimum_at, multiply_at, subtract_at

from . import (
    ATTRIBUTES,
    add_variant,
    CONSTANT_OBJECTS,
    GENERATOR_METHODS,
    METHODS,
    UFUNC_AT,
    facts,
    nondiff,
    nondiff_params,
    rule,
)
from .shape import MEMORY_ORDERS

# ---- indexing -----------------------------------------------------------------------------------
rule(operator.getitem, "y, x, index", "d[x] += unindex(d[y], x, index)")
rule(np.take, "y, a, indices, axis=None", "d[a] += untake(d[y], a, indices, axis)", fresh=True)
rule(
    np.take_along_axis,
    "y, arr, indices, axis",
    "d[arr] += untake_along_axis(d[y], arr, indices, axis)",
)

# ---- selection ----------------------------------------------------------------------------------
rule(
    np.where,
    "z, condition, x, y",
    """
d[x] += unbroadcast(np.where(condition, d[z], 0.0), x)
d[y] += unbroadcast(np.where(condition, 0.0, d[z]), y)
""",
    shape="where",
    fresh=True,
)
# numpy 2.1+ also spells the bounds min= and max=
rule(
    np.clip,
    "y, a, a_min=None, a_max=None, min=None, max=None",
    """
lo = either(a_min, min)
hi = either(a_max, max)
d[a] += unbroadcast(d[y] * clip_mask(a, lo, hi), a)
d[a_min] += unbroadcast(d[y] * clip_lo_mask(a, lo, hi), a_min)
d[a_max] += unbroadcast(d[y] * clip_hi_mask(a, lo, hi), a_max)
d[min] += unbroadcast(d[y] * clip_lo_mask(a, lo, hi), min)
d[max] += unbroadcast(d[y] * clip_hi_mask(a, lo, hi), max)
""",
    fresh=True,
)
rule(np.sort, "y, a, axis=-1", "d[a] += unsort(d[y], a, axis)", fresh=True)
# only None is handled
rule(
    np.interp,
    "y, x, xp, fp, left=None, right=None, period=None",
    """
d[x] += interp_adjoint(d[y], x, xp, fp, 0, left, right)
d[fp] += interp_adjoint(d[y], x, xp, fp, 1, left, right)
d[xp] += interp_xp_adjoint(d[y], x, xp, fp, left, right)
d[left] += interp_end_adjoint(d[y], x, xp, left, 0)
d[right] += interp_end_adjoint(d[y], x, xp, right, 1)
""",
    only={"period": (None,)},
    nondiff={"period": None},
)


# ---- ndarray methods that are no numpy function -------------------------------------------------
def _astype(x, dtype):  # stands for the method ``x.astype(dtype)``
    return x.astype(dtype)


rule(_astype, "y, x, dtype", "d[x] += cast_like(d[y], x, y)", fresh=True)


def _as_dtype(x, dtype=None):  # stands for ``np.array(x, dtype=...)`` and ``np.asarray``'s
    return np.asarray(x, dtype=dtype)


# np.array(x, dtype=float): a conversion, whose adjoint is the cast back (zero for an int dtype)
rule(_as_dtype, "y, x, dtype=None", "d[x] += cast_like(d[y], x, y)")
add_variant([np.array, np.asarray, np.asanyarray], ("dtype",), _as_dtype)


# stands for the methods ``x.conj()`` and ``x.conjugate()``: unlike the ufunc np.conjugate, they
# return ``x`` itself where it is real (no new memory: a write through the result writes ``x``)
def _conj_method(x):
    return x.conj()


rule(_conj_method, "y, x", "d[x] += conj_adjoint(d[y], x)")


# stands for the method ``x.flatten()``: a copy, where np.ravel may give a view
def _flatten(x, order="C"):
    return x.flatten(order)


rule(
    _flatten,
    "y, x, order='C'",
    "d[x] += np.reshape(d[y], np.shape(x), order=order)",
    only=MEMORY_ORDERS,
    literal=("order",),
    fresh=True,
)


def _item(x):  # stands for the method ``x.item()``
    return x.item()


rule(_item, "y, x", "d[x] += np.reshape(as_array_like(d[y], x), np.shape(x))")

# ---- ufunc.at on a local buffer: np.add.at(buf, idx, v) is buf = add_at(buf, idx, v) --------------
UFUNC_AT.update(
    {
        np.add: add_at,
        np.subtract: subtract_at,
        np.multiply: multiply_at,
        np.maximum: maximum_at,
        np.minimum: minimum_at,
    }
)
# buf = add_at(buf, idx, v): buf keeps its shape
rule(
    add_at,
    "y, a, indices, b",
    "d[a] += d[y]\nd[b] += gathered(d[y], indices, b)",
    shape="scatter",
)
rule(
    subtract_at,
    "y, a, indices, b",
    "d[a] += d[y]\nd[b] += -gathered(d[y], indices, b)",
    shape="scatter",
)
rule(
    multiply_at,
    "y, a, indices, b",
    """
d[a] += multiply_at_adjoint(d[y], a, y, indices, b, 0)
d[b] += multiply_at_adjoint(d[y], a, y, indices, b, 1)
""",
    shape="scatter",
)
# ties share evenly, as np.maximum's
rule(
    [maximum_at, minimum_at],
    "y, a, indices, b",
    """
d[a] += extremum_at_adjoint(d[y], a, y, indices, b, 0)
d[b] += extremum_at_adjoint(d[y], a, y, indices, b, 1)
""",
    shape="scatter",
)

# ---- made from values: the values carry a gradient, shapes and counts do not --------------------
rule(
    np.full,
    "y, shape, fill_value, dtype=None, order='C'",
    "d[fill_value] += fill_adjoint(d[y], fill_value)",
    shape="create",
    fresh=True,
)
rule(
    np.full_like,
    "y, a, fill_value, dtype=None, order='K', subok=True, shape=None",
    "d[fill_value] += fill_adjoint(d[y], fill_value)",
    nondiff={"a": "only its shape and dtype are read", "subok": "a boolean flag"},
    shape="like",
    fresh=True,
)
rule(
    np.linspace,
    "y, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0",
    """
d[start] += linspace_adjoint(d[y], start, stop, num, endpoint, axis, 0)
d[stop] += linspace_adjoint(d[y], start, stop, num, endpoint, axis, 1)
""",
    only={"retstep": (False,)},
    nondiff={"num": "an integer count", "endpoint": "a boolean flag", "retstep": "a boolean flag"},
    fresh=True,
)
rule(
    np.arange,
    "y, start, stop=None, step=None, dtype=None",
    """
d[start] += arange_adjoint(d[y], start, stop, step, 0)
d[step] += arange_adjoint(d[y], start, stop, step, 2)
""",
    nondiff={"stop": "piecewise constant (it sets only the length)"},
    fresh=True,
)
rule(
    np.meshgrid,
    "ys, x1, x2=None, x3=None, indexing='xy', sparse=False, copy=True",
    """
d[x1] += meshgrid_adjoint(d[ys], operands_of(x1, x2, x3), 0, indexing)
d[x2] += meshgrid_adjoint(d[ys], operands_of(x1, x2, x3), 1, indexing)
d[x3] += meshgrid_adjoint(d[ys], operands_of(x1, x2, x3), 2, indexing)
""",
    nondiff={"indexing": "a mode name", "sparse": "a boolean flag"},
)
rule(
    np.bincount,
    "y, x, weights=None, minlength=0",
    "d[weights] += bincount_adjoint(d[y], x, weights)",
    nondiff={"x": "integer indices", "minlength": "an integer count"},
)
rule(
    np.unique,
    "y, ar, return_index=False, return_inverse=False, return_counts=False, axis=None",
    "d[ar] += unique_adjoint(d[y], ar)",
    only={
        "return_index": (False,),
        "return_inverse": (False,),
        "return_counts": (False,),
        "axis": (None,),
    },
    nondiff={
        "return_index": "a boolean flag",
        "return_inverse": "a boolean flag",
        "return_counts": "a boolean flag",
    },
)

rule(
    index_join,
    "y, joiner, x1, x2=None, x3=None, x4=None, x5=None, x6=None",
    """
d[x1] += join_adjoint(d[y], joiner, operands_of(x1, x2, x3, x4, x5, x6), 0)
d[x2] += join_adjoint(d[y], joiner, operands_of(x1, x2, x3, x4, x5, x6), 1)
d[x3] += join_adjoint(d[y], joiner, operands_of(x1, x2, x3, x4, x5, x6), 2)
d[x4] += join_adjoint(d[y], joiner, operands_of(x1, x2, x3, x4, x5, x6), 3)
d[x5] += join_adjoint(d[y], joiner, operands_of(x1, x2, x3, x4, x5, x6), 4)
d[x6] += join_adjoint(d[y], joiner, operands_of(x1, x2, x3, x4, x5, x6), 5)
""",
    nondiff={"joiner": "np.r_ or np.c_ itself"},
)

# ---- no gradient --------------------------------------------------------------------------------
nondiff(
    np.argmax,
    np.argmin,
    np.argsort,
    np.argpartition,
    np.argwhere,
    np.nonzero,
    np.flatnonzero,
    np.count_nonzero,
    np.any,
    np.all,
    np.searchsorted,
    np.digitize,
    reason="piecewise constant",
)
_SHAPES_ONLY = "depends only on shapes and dtypes"
nondiff(np.zeros_like, np.ones_like, np.empty_like, reason=_SHAPES_ONLY, shape="like", fresh=True)
nondiff(np.zeros, np.ones, np.empty, reason=_SHAPES_ONLY, shape="create", fresh=True)
nondiff(np.eye, np.identity, np.random.randn, np.random.rand, reason=_SHAPES_ONLY, fresh=True)
nondiff(np.tri, np.indices, np.result_type, np.finfo, np.iinfo, reason=_SHAPES_ONLY)
# a random draw carries no gradient through its shape; its distribution's parameters would (the
# draw moves with them), and so would the values it picks from or shuffles: an active value
# passed to any of those is refused
for _draw in (
    np.random.normal,
    np.random.uniform,
    np.random.standard_normal,
    np.random.random,
    np.random.choice,
    np.random.permutation,
):
    nondiff_params(_draw, {"size": "a shape", "replace": "a boolean flag"})
facts([np.random.normal, np.random.uniform], fresh=True)
nondiff_params(
    np.random.randint, {"size": "a shape", "low": "integer bounds", "high": "integer bounds"}
)
nondiff_params(np.random.default_rng, {"seed": "a seed"})
CONSTANT_OBJECTS.update({np.finfo, np.iinfo})
# a local ``rng = np.random.default_rng(0)``: its draws as np.random's (a method's ``self`` is the
# generator, never an array)
_GENERATOR = np.random.Generator
GENERATOR_METHODS.update(
    {
        n: getattr(_GENERATOR, n)
        for n in (
            "normal",
            "standard_normal",
            "uniform",
            "random",
            "integers",
            "exponential",
            "choice",
            "permutation",
        )
    }
)
for _draw in (
    _GENERATOR.normal,
    _GENERATOR.uniform,
    _GENERATOR.exponential,
    _GENERATOR.choice,
    _GENERATOR.permutation,
):
    nondiff_params(
        _draw,
        {
            "self": "the generator",
            "size": "a shape",
            "replace": "a boolean flag",
            "axis": "an axis",
            "shuffle": "a boolean flag",
        },
    )
for _draw in (_GENERATOR.standard_normal, _GENERATOR.random):
    nondiff_params(_draw, {"self": "the generator", "size": "a shape", "dtype": "a dtype"})
nondiff_params(
    _GENERATOR.integers,
    {
        "self": "the generator",
        "size": "a shape",
        "low": "integer bounds",
        "high": "integer bounds",
        "dtype": "a dtype",
        "endpoint": "a boolean flag",
    },
)

# ---- ndarray methods and attributes, by name, and the primitive each one stands for -----------
METHODS.update(
    {
        "dot": np.dot,
        "sum": np.sum,
        "mean": np.mean,
        "prod": np.prod,
        "max": np.max,
        "min": np.min,
        "var": np.var,
        "std": np.std,
        "cumsum": np.cumsum,
        "transpose": np.transpose,
        "reshape": np.reshape,
        "ravel": np.ravel,
        "flatten": _flatten,
        "squeeze": np.squeeze,
        "clip": np.clip,
        "swapaxes": np.swapaxes,
        "repeat": np.repeat,
        "take": np.take,
        "diagonal": np.diagonal,
        "trace": np.trace,
        "copy": np.copy,
        "astype": _astype,
        "item": _item,
        "round": np.round,
        "argmax": np.argmax,
        "argmin": np.argmin,
        "argsort": np.argsort,
        "argpartition": np.argpartition,
        "any": np.any,
        "all": np.all,
        "nonzero": np.nonzero,
        "cumprod": np.cumprod,
        "conj": _conj_method,
        "conjugate": _conj_method,
    }
)
ATTRIBUTES.update(
    {
        "T": np.transpose,
        "shape": None,
        "ndim": None,
        "size": None,
        "dtype": None,
        "real": np.real,
        "imag": np.imag,
    }
)
if hasattr(np, "matrix_transpose"):
    ATTRIBUTES["mT"] = np.matrix_transpose
