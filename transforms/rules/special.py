"""``scipy.special``: registered when scipy imports, nothing otherwise.

Edge points: ``logit`` at 0 and 1 and ``gammaln``/``digamma`` at the poles (0, -1, ...) have
infinite slopes, as the functions do. ``xlogy(x, y)`` is 0 wherever ``x == 0``, so there its slope
in ``y`` is 0 (even at ``y == 0``); its slope in ``x`` is ``log(y)``, ``-inf`` at ``y == 0``.
``xlog1py`` likewise with ``log1p(y)``. ``logsumexp`` of all ``-inf`` has a NaN gradient."""

try:
    from scipy import special as sc
except ImportError:  # an optional dependency: no rules
    sc = None

from . import binary, rule, unary

if sc is not None:
    # ---- elementwise: the slope from the result where that is cheaper ---------------------------
    unary(sc.expit, "d[y] * y * (1.0 - y)")
    unary(sc.logit, "d[y] / (x * (1.0 - x))")
    unary(sc.erf, "d[y] * 1.1283791670955126 * np.exp(-x * x)")  # 2 / sqrt(pi)
    unary(sc.erfc, "d[y] * -1.1283791670955126 * np.exp(-x * x)")
    unary(sc.gammaln, "d[y] * polygamma_of(0, x)")
    unary(sc.digamma, "d[y] * polygamma_of(1, x)")
    binary(
        sc.xlogy, "d[z] * np.log(y)", "d[z] * np.where(x == 0, 0.0, x / np.where(x == 0, 1.0, y))"
    )
    binary(
        sc.xlog1py,
        "d[z] * np.log1p(y)",
        "d[z] * np.where(x == 0, 0.0, x / np.where(x == 0, 1.0, 1.0 + y))",
    )

    # ---- reductions over ``axis`` ---------------------------------------------------------------
    rule(
        sc.logsumexp,
        "y, a, axis=None, b=None, keepdims=False, return_sign=False",
        """
d[a] += logsumexp_adjoint(d[y], a, y, axis, b, keepdims, 0)
d[b] += logsumexp_adjoint(d[y], a, y, axis, b, keepdims, 1)
""",
        only={"return_sign": (False,)},
        nondiff={"return_sign": "a boolean flag (only False)"},
    )
    rule(sc.softmax, "y, x, axis=None", "d[x] += softmax_adjoint(d[y], y, axis)")
    rule(sc.log_softmax, "y, x, axis=None", "d[x] += log_softmax_adjoint(d[y], y, axis)")
