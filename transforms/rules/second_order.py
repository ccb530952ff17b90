"""Adjoints of the runtime helpers that forward-mode code calls, so reverse mode runs over it.

``hvp``, ``grad(grad(f))`` and a gradient called inside a differentiated function take the
gradient of the forward-mode (jvp) code ``transforms/forward.py`` writes (``sourcegrad/higher.py``).
That code calls helpers of ``runtime/tangents.py`` and the slopes of ``runtime/adjoints/``; each
is registered here as an adjoint rule, in the tangent rules' namespace (so templates may call
``runtime/curvatures.py``). Guarantees: a helper listed here differentiates as any primitive
does; a helper not listed is refused there, as any function without a rule is. Imported by
``rules/tangents.py``, after its tables exist.
"""

from __future__ import annotations

import sourcegrad.runtime as _runtime
from sourcegrad.runtime import tangents as _rt

from ..templates import Deferred, parse_template
from . import _declare, _parse_params, _register, facts
from .tangents import TANGENT_NAMESPACE, _keys


def _helper_rule(fns, params, body, nondiff=None, *, shape=None, fresh=False):
    for fn in _keys(*(fns if isinstance(fns, (list, tuple)) else [fns])):
        origin = f"second-order rule for {fn.__name__}"
        template = Deferred(
            lambda origin=origin: _declare(
                parse_template(body, *_parse_params(params), TANGENT_NAMESPACE, origin),
                nondiff,
                origin,
            )
        )
        _register(fn, template)
    facts(fns, shape=shape, fresh=fresh)


_SHAPE = "only its shape and dtype are read"
_helper_rule(_rt.expand, "r, t, like", "d[t] += unbroadcast(d[r], t)", {"like": _SHAPE})
# (each makes the tangent's own array)
_helper_rule(_rt.tangent_zeros, "r, like", "", {"like": _SHAPE}, shape="operand", fresh=True)
_helper_rule([_rt.materialize, _rt.owned_tangent], "r, t, like", "d[t] += d[r]", {"like": _SHAPE})
# (a product where the slope is not zero: differentiated as one, but for the entries left out)
_helper_rule(
    _rt.selected,
    "r, t, slope",
    "d[t] += unbroadcast(selected(d[r], slope), t)\nd[slope] += unbroadcast(d[r] * t, slope)",
)
facts(_rt.owned_tangent, fresh=True)
_helper_rule(
    _rt.extremum_tangent,
    "r, x_wins, tie, tx, ty",
    """
d[tx] += unbroadcast(np.where(tie, 0.5 * d[r], np.where(x_wins, d[r], 0.0)), tx)
d[ty] += unbroadcast(np.where(tie, 0.5 * d[r], np.where(x_wins, 0.0, d[r])), ty)
""",
    {"x_wins": "a boolean mask", "tie": "a boolean mask"},
)
_helper_rule(
    _rt.reduce_extremum_tangent,
    "r, t, a, y, axis=None, keepdims=False",
    "d[t] += unreduce(d[r], t, axis, keepdims) * reduce_max_mask(a, y, axis, keepdims)",
    {
        "a": "only where its extrema are is read (piecewise constant)",
        "y": "only where its extrema are is read (piecewise constant)",
    },
)
_helper_rule(
    _rt.sort_tangent,
    "r, t, a, axis=-1",
    "d[t] += unsort(d[r], a, axis)",
    {"a": "only its order is read (piecewise constant)"},
)
# a differentiated exponent is refused
_helper_rule(
    _runtime.power_slope,
    "s, x, y",
    "d[x] += unbroadcast(d[s] * power_curvature(x, y), x)",
    {"y": None},
)
_helper_rule(_runtime.nonzero_or_one, "r, z", "d[z] += d[r] * (z != 0)")
_helper_rule(
    [_runtime.clip_mask, _runtime.clip_lo_mask, _runtime.clip_hi_mask],
    "r, x, lo, hi",
    "",
    {"x": "piecewise constant", "lo": "piecewise constant", "hi": "piecewise constant"},
)
_helper_rule(
    _runtime.reduce_max_mask,
    "r, x, y, axis=None, keepdims=False",
    "",
    {"x": "piecewise constant", "y": "piecewise constant"},
)
_helper_rule(_runtime.either, "r, a, b", "d[a] += d[r]\nd[b] += d[r]")
# for real x only its sign is read (zero slope); for complex x, Re(conj(x) t) / |x| (tangents.py)
_helper_rule(
    _rt.abs_tangent,
    "r, t, x, y",
    """d[t] += abs_adjoint(d[r], x)
d[x] += abs_tangent_point(d[r], t, x, y)
d[y] += abs_tangent_scale(d[r], t, x, y)""",
)
# the slopes of reductions (std, var, prod, norms) that the tangent rules above multiply by; a slope
# of a piecewise-linear function (ptp, quantiles, interp in x) is piecewise constant. Their ``g`` is
# the constant unit cotangent those rules pass.
_UNIT = {"g": None}
# linear in a: centering is its own adjoint
_helper_rule(
    _runtime.var_slope,
    "s, a, axis=None, ddof=0",
    "d[a] += var_slope(d[s], axis, ddof)",
    {"ddof": None},
)
_helper_rule(
    _runtime.std_slope,
    "s, a, y, axis=None, ddof=0, keepdims=False",
    """
d[a] += std_curvature(d[s], a, y, axis, ddof, keepdims)
d[y] += std_curvature_of_y(d[s], s, a, y, axis, keepdims)
""",
    {"ddof": None},
)
_helper_rule(_runtime.prod_of_others, "p, a, axis=None", "d[a] += prod_curvature(d[p], a, axis)")
_helper_rule(
    _runtime.norm_adjoint,
    "r, g, x, y, ord=None, axis=None, keepdims=False",
    """
d[x] += norm_curvature(d[r], g, x, y, ord, axis, keepdims)
d[y] += norm_curvature_of_y(d[r], r, x, y, ord, axis, keepdims)
""",
    _UNIT,
)
_helper_rule(
    _runtime.vector_norm_adjoint,
    "r, g, x, y, ord=2, axis=None, keepdims=False",
    """
d[x] += vector_norm_curvature(d[r], g, x, y, ord, axis, keepdims)
d[y] += vector_norm_curvature_of_y(d[r], r, x, y, ord, axis, keepdims)
""",
    _UNIT,
)
_helper_rule(
    _runtime.ptp_adjoint,
    "r, g, a, axis=None, keepdims=False",
    "",
    {**_UNIT, "a": "piecewise constant"},
)
_helper_rule(
    _runtime.quantile_adjoint,
    "r, g, a, q, axis=None, keepdims=False, scale=1.0",
    "",
    {**_UNIT, "a": "piecewise constant", "q": None, "scale": "a constant"},
)
# fp differentiated too: its mixed term is refused
_helper_rule(
    _runtime.interp_adjoint,
    "r, g, x, xp, fp, which, left=None, right=None",
    "",
    {
        **_UNIT,
        "x": "piecewise constant",
        "xp": None,
        "fp": None,
        "which": "a constant",
        "left": None,
        "right": None,
    },
)
_helper_rule(_rt.zero_unless_none, "r, v", "", {"v": "only whether it is None is read"})
_helper_rule(
    _rt.cast_tangent,
    "r, t, y",
    "d[t] += cast_tangent(cast_tangent(d[r], y), t)",
    {"y": "only its dtype is read"},
)
_helper_rule(_rt.seq_zeros, "r, seq", "", {"seq": _SHAPE}, fresh=True)
_helper_rule(_rt.seq_tangent, "r, t, seq", "d[t] += d[r]", {"seq": _SHAPE}, fresh=True)
_helper_rule(
    _runtime.logaddexp_share,
    "s, x, y, z, base=None",
    """
d[x] += unbroadcast(d[s] * s * log_of_base(base), x)
d[z] += unbroadcast(-(d[s] * s * log_of_base(base)), z)
""",
    {"y": "only where it ties x at an infinity is read", "base": "a constant"},
)
_helper_rule(_runtime.polygamma_of, "p, n, x", "d[x] += d[p] * polygamma_of(n + 1, x)")

_helper_rule(
    _runtime.softmax_adjoint,
    "r, g, y, axis=None",
    """
d[g] += softmax_adjoint(d[r], y, axis)
d[y] += softmax_curvature_of_y(d[r], g, y, axis)
""",
)
_helper_rule(
    _rt.log_softmax_tangent,
    "r, t, y, axis=None",
    """
d[t] += log_softmax_adjoint(d[r], y, axis)
d[y] += log_softmax_curvature_of_y(d[r], t, y, axis)
""",
)
_helper_rule(
    _rt.logsumexp_tangent,
    "r, t, a, y, axis=None, b=None, keepdims=False, which=0",
    """
d[t] += logsumexp_tangent_adjoint(d[r], t, a, y, axis, b, keepdims, which, "t")
d[a] += logsumexp_tangent_adjoint(d[r], t, a, y, axis, b, keepdims, which, "a")
d[y] += logsumexp_tangent_adjoint(d[r], t, a, y, axis, b, keepdims, which, "y")
d[b] += logsumexp_tangent_adjoint(d[r], t, a, y, axis, b, keepdims, which, "b")
""",
    {"which": "a constant"},
)

# scipy.stats' location-scale tangents (``tangents.py``): z = (x - loc) / scale, the standard normal
# density phi (phi' = -z phi), the hazard phi(z) / tail from the log of the tail, and digamma
_helper_rule(
    _runtime.standardized,
    "z, x, loc, scale",
    """
d[x] += unbroadcast(d[z] / scale, x)
d[loc] += unbroadcast(-d[z] / scale, loc)
d[scale] += unbroadcast(-d[z] * z / scale, scale)
""",
)
_helper_rule(_runtime.normal_density, "p, z", "d[z] += d[p] * -z * p")
_helper_rule(
    _runtime.normal_hazard,
    "r, z, log_tail",
    """
d[z] += unbroadcast(d[r] * -z * r, z)
d[log_tail] += unbroadcast(-d[r] * r, log_tail)
""",
)
_helper_rule(_runtime.digamma_of, "p, x", "d[x] += d[p] * polygamma_of(1, x)")
