"""Reductions with ``axis``/``keepdims``: the adjoint is broadcast back over the reduced axes."""

import builtins

import inspect

import numpy as np

from . import add_variant, facts, rule

# ---- sums, means, products ----------------------------------------------------------------------
rule(
    np.sum,
    "y, a, axis=None, dtype=None, keepdims=False",
    "d[a] += unreduce(d[y], a, axis, keepdims)",
    shape="reduction",
    fresh=True,
)
rule(
    np.nansum,
    "y, a, axis=None, dtype=None, keepdims=False",
    "d[a] += unreduce(d[y], a, axis, keepdims) * ~np.isnan(a)",
    shape="reduction",
)
# (counts from a's shape: no np.size of a lazy y)
rule(
    np.mean,
    "y, a, axis=None, dtype=None, keepdims=False",
    "d[a] += unreduce(d[y], a, axis, keepdims, mean=True)",
    shape="reduction",
    fresh=True,
)
rule(
    np.nanmean,
    "y, a, axis=None, dtype=None, keepdims=False",
    "d[a] += unreduce(d[y], a, axis, keepdims) * share(~np.isnan(a), axis, a)",
    shape="reduction",
)
rule(
    np.average,
    "y, a, axis=None, weights=None, keepdims=False",
    """
d[a] += average_adjoint(d[y], a, axis, weights, keepdims)
d[weights] += average_weights_adjoint(d[y], a, y, axis, weights, keepdims)
""",
)
rule(
    np.prod,
    "y, a, axis=None, dtype=None, keepdims=False",
    "d[a] += unreduce(d[y], a, axis, keepdims) * prod_of_others(a, axis)",
    shape="reduction",
    fresh=True,
)
rule(
    builtins.sum,
    "y, iterable, start=0",
    "d[iterable] += fanout(d[y], iterable)\nd[start] += unbroadcast(d[y], start)",
)

# ---- extrema: ties share the gradient evenly ----------------------------------------------------
rule(
    [np.max, np.amax, np.min, np.amin, np.nanmax, np.nanmin],
    "y, a, axis=None, keepdims=False",
    "d[a] += unreduce(d[y], a, axis, keepdims) * reduce_max_mask(a, y, axis, keepdims)",
    shape="reduction",
)
facts([np.max, np.min], fresh=True)


# ---- where= and initial=: masked reductions, each a variant of the plain one (its rule stays lean)
def sum_where(a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True):
    """``np.sum`` given ``where=`` or ``initial=``."""
    return np.sum(a, axis, dtype, out, keepdims, initial, where)


def mean_where(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """``np.mean`` given ``where=``."""
    return np.mean(a, axis, dtype, out, keepdims, where=where)


def max_where(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """``np.max`` (``np.min``) given ``initial=`` or ``where=``."""
    return np.max(a, axis, out, keepdims, initial, where)


_MASK = {"where": "a boolean mask"}
add_variant(np.sum, ("where", "initial"), sum_where)
rule(
    sum_where,
    "y, a, axis=None, dtype=None, keepdims=False, initial=0, where=True",
    """
d[a] += masked_unreduce(d[y], a, axis, keepdims, where)
d[initial] += unbroadcast(d[y], initial)
""",
    nondiff=_MASK,
)
add_variant(np.mean, ("where",), mean_where)
rule(
    mean_where,
    "y, a, axis=None, dtype=None, keepdims=False, where=True",
    "d[a] += unreduce(d[y], a, axis, keepdims) * masked_mean_slope(a, axis, where)",
    nondiff=_MASK,
)
add_variant([np.max, np.amax, np.min, np.amin], ("where", "initial"), max_where)
# ties (initial among them) share evenly
rule(
    max_where,
    "y, a, axis=None, keepdims=False, initial=None, where=True",
    """
d[a] += unreduce(d[y], a, axis, keepdims) * masked_extremum_share(a, y, axis, keepdims, initial, where)
d[initial] += unbroadcast(d[y] * masked_extremum_share(a, y, axis, keepdims, initial, where, 1), initial)
""",
    nondiff=_MASK,
)

# ---- ufunc.reduce: the reductions numpy spells as methods of a ufunc (axis 0 by default)
_UFUNC_REDUCE = "y, array, axis=0, dtype=None, out=None, keepdims=False"
_OUT = {"out": "an output buffer (only None)"}
rule(
    np.add.reduce,
    _UFUNC_REDUCE,
    "d[array] += unreduce(d[y], array, axis, keepdims)",
    only={"out": (None,)},
    nondiff=_OUT,
)
rule(
    np.multiply.reduce,
    _UFUNC_REDUCE,
    "d[array] += unreduce(d[y], array, axis, keepdims) * prod_of_others(array, axis)",
    only={"out": (None,)},
    nondiff=_OUT,
)
rule(
    [np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce],
    _UFUNC_REDUCE,
    "d[array] += unreduce(d[y], array, axis, keepdims) * reduce_max_mask(array, y, axis, keepdims)",
    only={"out": (None,)},
    nondiff=_OUT,
)
rule(
    np.logaddexp.reduce,
    _UFUNC_REDUCE,
    "d[array] += unreduce(d[y], array, axis, keepdims) * logaddexp_reduce_share(array, y, axis, keepdims)",
    only={"out": (None,)},
    nondiff=_OUT,
)

rule(np.ptp, "y, a, axis=None, keepdims=False", "d[a] += ptp_adjoint(d[y], a, axis, keepdims)")

# ---- spread -----------------------------------------------------------------------------------
# the divisor is n - ddof, so d var / d ddof = var / (n - ddof) and d std / d ddof = std / 2 (n - ddof)
rule(
    np.var,
    "y, a, axis=None, dtype=None, ddof=0, keepdims=False",
    """
d[a] += unreduce(d[y], a, axis, keepdims) * var_slope(a, axis, ddof)
d[ddof] += unbroadcast(d[y] * y / (np.size(a) / np.size(y) - ddof), ddof)
""",
    shape="reduction",
    fresh=True,
)
# d[a]: 0 at zero variance
rule(
    np.std,
    "y, a, axis=None, dtype=None, ddof=0, keepdims=False",
    """
d[a] += unreduce(d[y], a, axis, keepdims) * std_slope(a, y, axis, ddof, keepdims)
d[ddof] += unbroadcast(d[y] * y / (2.0 * (np.size(a) / np.size(y) - ddof)), ddof)
""",
    shape="reduction",
    fresh=True,
)

# ---- norms --------------------------------------------------------------------------------------
rule(
    np.linalg.norm,
    "y, x, ord=None, axis=None, keepdims=False",
    """
d[x] += norm_adjoint(d[y], x, y, ord, axis, keepdims)
d[ord] += norm_order_adjoint(d[y], x, y, ord, axis, keepdims)
""",
    shape="reduction",
)
rule(
    getattr(np.linalg, "vector_norm", None),
    "y, x, axis=None, keepdims=False, ord=2",
    """
d[x] += vector_norm_adjoint(d[y], x, y, ord, axis, keepdims)
d[ord] += norm_order_adjoint(d[y], x, y, ord, axis, keepdims)
""",
)
rule(
    getattr(np.linalg, "matrix_norm", None),
    "y, x, keepdims=False, ord='fro'",
    "d[x] += norm_adjoint(d[y], x, y, ord, (-2, -1), keepdims)",
    nondiff={"ord": "one of numpy's fixed matrix orders (it refuses any other number)"},
)

# ---- running sums and products, differences, integrals ------------------------------------------
rule(np.cumsum, "y, a, axis=None, dtype=None", "d[a] += reverse_cumsum(d[y], a, axis)", fresh=True)
rule(
    np.nancumsum,
    "y, a, axis=None, dtype=None",
    "d[a] += reverse_cumsum(d[y], a, axis) * ~np.isnan(a)",
)
rule(
    getattr(np, "cumulative_sum", None),
    "y, x, axis=None, dtype=None, include_initial=False",
    "d[x] += reverse_cumsum(d[y], x, axis, include_initial)",
)
# exact at zeros
rule(np.cumprod, "y, a, axis=None, dtype=None", "d[a] += cumprod_adjoint(d[y], a, y, axis)")
# prepend/append: 0-d fills a slab one entry thick (numpy's broadcast); its adjoint sums it
rule(
    np.diff,
    "y, a, n=1, axis=-1, prepend=None, append=None",
    """
d[a] += diff_adjoint(d[y], a, n, axis, prepend, append, 0)
d[prepend] += diff_adjoint(d[y], a, n, axis, prepend, append, 1)
d[append] += diff_adjoint(d[y], a, n, axis, prepend, append, 2)
""",
    fresh=True,
)
# np.gradient(f, *varargs, axis, edge_order) along one axis, with one step or coordinate array
rule(
    np.gradient,
    "y, f, spacing=1.0, axis=None, edge_order=1",
    """
d[f] += gradient_adjoint(d[y], f, spacing, axis, edge_order)
d[spacing] += gradient_spacing_adjoint(d[y], y, spacing)
""",
    signature=inspect.signature(lambda f, spacing=1.0, *, axis=None, edge_order=1: None),
    nondiff={"edge_order": "an integer order"},
)
rule(
    getattr(np, "trapezoid", None) or np.trapz,
    "z, y, x=None, dx=1.0, axis=-1",
    """
d[y] += trapezoid_adjoint(d[z], y, x, dx, axis)
d[x] += trapezoid_x_adjoint(d[z], y, x, axis)
d[dx] += trapezoid_dx_adjoint(d[z], y, x, dx, axis)
""",
)

# ---- order statistics: method 'linear'; entries equal to the one a quantile reads share its weight
_QUANTILE = "y, a, q, axis=None, out=None, overwrite_input=False, method='linear', keepdims=False"
_ONLY = {"method": ("linear",), "out": (None,), "overwrite_input": (False,)}
_BUFFERS = {
    "out": "an output buffer (only None)",
    "overwrite_input": "a boolean flag (only False)",
    "method": "a method name",
}
rule(
    np.quantile,
    _QUANTILE,
    """
d[a] += quantile_adjoint(d[y], a, q, axis, keepdims)
d[q] += unbroadcast(quantile_q_adjoint(d[y], a, q, axis, keepdims), q)
""",
    only=_ONLY,
    nondiff=_BUFFERS,
)
rule(
    np.percentile,
    _QUANTILE,
    """
d[a] += quantile_adjoint(d[y], a, q, axis, keepdims, 100.0)
d[q] += unbroadcast(quantile_q_adjoint(d[y], a, q, axis, keepdims, 100.0), q)
""",
    only=_ONLY,
    nondiff=_BUFFERS,
)
rule(
    np.median,
    "y, a, axis=None, out=None, overwrite_input=False, keepdims=False",
    "d[a] += quantile_adjoint(d[y], a, 0.5, axis, keepdims)",
    only=_ONLY,
    nondiff=_BUFFERS,
)

# ---- covariance: rows are variables (columns with rowvar=False); ddof must be an integer in numpy
# fweights are integer counts; aweights, any positive numbers, have an adjoint
rule(
    np.cov,
    "c, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None",
    """
d[m] += cov_adjoint(d[c], m, y, rowvar, bias, ddof, 0, fweights, aweights)
d[y] += cov_adjoint(d[c], m, y, rowvar, bias, ddof, 1, fweights, aweights)
d[aweights] += cov_aweights_adjoint(d[c], m, c, y, rowvar, bias, ddof, fweights, aweights)
""",
    nondiff={
        "rowvar": "a boolean flag",
        "bias": "a boolean flag",
        "ddof": "an integer count (numpy refuses others)",
        "fweights": "integer counts (numpy refuses others)",
    },
)
rule(
    np.corrcoef,
    "r, x, y=None, rowvar=True",
    """
d[x] += corrcoef_adjoint(d[r], x, r, y, rowvar, 0)
d[y] += corrcoef_adjoint(d[r], x, r, y, rowvar, 1)
""",
    nondiff={"rowvar": "a boolean flag"},
)

# ---- polynomials: a sum over the coefficients --------------------------------------------------
rule(
    np.polyval,
    "y, p, x",
    "d[p] += polyval_adjoint_p(d[y], p, x)\nd[x] += polyval_adjoint_x(d[y], p, x)",
)
