"""Selection and indexing: the adjoint scatters the gradient back to where values came from."""

import operator

import numpy as np

from . import ATTRIBUTES, METHODS, nondiff, rule

# ---- indexing -----------------------------------------------------------------------------------
rule(operator.getitem, "y, x, index", "d[x] += unindex(d[y], x, index)")
rule(np.take, "y, a, indices, axis=None", "d[a] += untake(d[y], a, indices, axis)")
rule(np.take_along_axis, "y, arr, indices, axis", "d[arr] += untake_along_axis(d[y], arr, indices, axis)")

# ---- selection ----------------------------------------------------------------------------------
rule(np.where, "z, condition, x, y", """
d[x] += unbroadcast(np.where(condition, d[z], 0.0), x)
d[y] += unbroadcast(np.where(condition, 0.0, d[z]), y)
""")
rule(np.clip, "y, a, a_min=None, a_max=None", """
d[a] += unbroadcast(d[y] * clip_mask(a, a_min, a_max), a)
d[a_min] += unbroadcast(d[y] * clip_lo_mask(a, a_min, a_max), a_min)
d[a_max] += unbroadcast(d[y] * clip_hi_mask(a, a_min, a_max), a_max)
""")
rule(np.sort, "y, a, axis=-1", "d[a] += unsort(d[y], a, axis)")
rule(np.interp, "y, x, xp, fp, left=None, right=None", """
d[x] += interp_adjoint(d[y], x, xp, fp, 0, left, right)
d[fp] += interp_adjoint(d[y], x, xp, fp, 1, left, right)
""")


# ---- ndarray methods that are no numpy function -------------------------------------------------
def _astype(x, dtype):  # stands for the method ``x.astype(dtype)``
    return x.astype(dtype)


rule(_astype, "y, x, dtype", "d[x] += cast_like(d[y], x, y)")


def _item(x):  # stands for the method ``x.item()``
    return x.item()


rule(_item, "y, x", "d[x] += np.reshape(as_array_like(d[y], x), np.shape(x))")

# ---- no gradient --------------------------------------------------------------------------------
nondiff(
    np.argmax, np.argmin, np.argsort, np.argwhere, np.nonzero, np.flatnonzero, np.count_nonzero,
    np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.zeros, np.ones, np.empty, np.full,
    np.arange, np.linspace, np.eye, np.identity, np.any, np.all, np.searchsorted, np.digitize,
    np.unique, np.bincount, np.random.randn, np.random.rand, np.random.normal, np.random.uniform,
    np.tri, np.indices, np.meshgrid, np.result_type, np.finfo, np.iinfo,
)

# ---- ndarray methods and attributes, by name, and the primitive each one stands for -----------
METHODS.update({
    "dot": np.dot, "sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
    "var": np.var, "std": np.std, "cumsum": np.cumsum, "transpose": np.transpose,
    "reshape": np.reshape, "ravel": np.ravel, "flatten": np.ravel, "squeeze": np.squeeze,
    "clip": np.clip, "swapaxes": np.swapaxes, "repeat": np.repeat, "take": np.take,
    "diagonal": np.diagonal, "trace": np.trace, "copy": np.copy, "astype": _astype, "item": _item,
    "round": np.round, "argmax": np.argmax, "argmin": np.argmin, "argsort": np.argsort,
    "any": np.any, "all": np.all, "nonzero": np.nonzero, "cumprod": np.cumprod, "conj": np.conjugate,
    "conjugate": np.conjugate,
})
ATTRIBUTES.update({"T": np.transpose, "shape": None, "ndim": None, "size": None, "dtype": None, "real": np.real})
if hasattr(np, "matrix_transpose"):
    ATTRIBUTES["mT"] = np.matrix_transpose
