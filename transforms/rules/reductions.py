"""Reductions with ``axis``/``keepdims``: the adjoint is broadcast back over the reduced axes."""

import builtins

import numpy as np

from . import rule

rule(np.sum, "y, a, axis=None, dtype=None, keepdims=False", "d[a] += unreduce(d[y], a, axis, keepdims)")
rule(np.mean, "y, a, axis=None, dtype=None, keepdims=False",
     "d[a] += unreduce(d[y], a, axis, keepdims) * (np.size(y) / np.size(a))")
rule(np.prod, "y, a, axis=None, dtype=None, keepdims=False",
     "d[a] += unreduce(d[y] * y, a, axis, keepdims) / a")
rule([np.max, np.amax, np.min, np.amin], "y, a, axis=None, keepdims=False",
     "d[a] += unreduce(d[y], a, axis, keepdims) * reduce_max_mask(a, y, axis, keepdims)")
rule([np.nanmax, np.nanmin], "y, a, axis=None, keepdims=False",
     "d[a] += unreduce(d[y], a, axis, keepdims) * reduce_max_mask(a, y, axis, keepdims)")
rule(np.var, "y, a, axis=None, dtype=None, ddof=0, keepdims=False", """
n = np.size(a) / np.size(y) - ddof
d[a] += unreduce(d[y], a, axis, keepdims) * (2.0 / n) * centered(a, axis)
""")
rule(np.std, "y, a, axis=None, dtype=None, ddof=0, keepdims=False", """
n = np.size(a) / np.size(y) - ddof
d[a] += unreduce(d[y] / y, a, axis, keepdims) * centered(a, axis) / n
""")
rule(np.cumsum, "y, a, axis=None, dtype=None", "d[a] += reverse_cumsum(d[y], a, axis)")
rule(np.linalg.norm, "y, x, ord=None, axis=None, keepdims=False", "d[x] += norm_adjoint(d[y], x, y, ord, axis, keepdims)")
rule(np.nansum, "y, a, axis=None, dtype=None, keepdims=False",
     "d[a] += unreduce(d[y], a, axis, keepdims) * ~np.isnan(a)")
rule(np.average, "y, a, axis=None, weights=None, keepdims=False", """
d[a] += average_adjoint(d[y], a, axis, weights, keepdims)
d[weights] += average_weights_adjoint(d[y], a, y, axis, weights, keepdims)
""")
rule(builtins.sum, "y, iterable, start=0", "d[iterable] += fanout(d[y], iterable)\nd[start] += d[y]")
