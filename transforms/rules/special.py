"""``scipy.special``: registered when scipy imports, nothing otherwise.

Edge points: ``logit`` at 0 and 1 and ``gammaln``/``digamma`` at the poles (0, -1, ...) have
infinite slopes, as the functions do. ``xlogy(x, y)`` is 0 wherever ``x == 0``, so there its slope
in ``y`` is 0 (even at ``y == 0``); its slope in ``x`` is ``log(y)``, ``-inf`` at ``y == 0``.
``xlog1py`` likewise with ``log1p(y)``. ``entr``, ``rel_entr`` and ``kl_div`` have a slope of
``-inf`` in ``x`` at 0, as ``x log x`` does. ``logsumexp`` of all ``-inf`` has a NaN gradient."""

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
    # the normal distribution: its CDF, the log of it, and the CDF's inverse (1 / sqrt(2 pi) and
    # sqrt(2 pi)); log_ndtr's slope pdf / cdf is written exp(-x^2 / 2 - log_ndtr(x)), finite far
    # in the left tail where the CDF underflows
    unary(sc.ndtr, "d[y] * 0.3989422804014327 * np.exp(-0.5 * x * x)")
    unary(sc.log_ndtr, "d[y] * 0.3989422804014327 * np.exp(-0.5 * x * x - y)")
    unary(sc.ndtri, "d[y] * 2.5066282746310002 * np.exp(0.5 * y * y)")
    unary(sc.gamma, "d[y] * y * polygamma_of(0, x)")
    binary(
        sc.beta,
        "d[z] * z * (polygamma_of(0, x) - polygamma_of(0, x + y))",
        "d[z] * z * (polygamma_of(0, y) - polygamma_of(0, x + y))",
    )
    binary(
        sc.betaln,
        "d[z] * (polygamma_of(0, x) - polygamma_of(0, x + y))",
        "d[z] * (polygamma_of(0, y) - polygamma_of(0, x + y))",
    )
    # entropies: -x log x, x log(x / y), x log(x / y) - x + y (their slope in x is -inf at 0)
    unary(sc.entr, "d[y] * -(np.log(x) + 1.0)")
    binary(sc.rel_entr, "d[z] * (np.log(x / y) + 1.0)", "d[z] * -(x / y)")
    binary(sc.kl_div, "d[z] * np.log(x / y)", "d[z] * (1.0 - x / y)")
    # robust losses of a residual y with threshold x: the Huber loss's slope in y is y clipped to
    # [-x, x]; the pseudo-Huber loss x^2 (sqrt(1 + (y / x)^2) - 1) is smooth
    binary(
        sc.huber,
        "d[z] * np.where(np.abs(y) <= x, 0.0, np.abs(y) - x)",
        "d[z] * np.clip(y, -x, x)",
    )
    binary(
        sc.pseudo_huber,
        "d[z] * (2.0 * x * (np.sqrt(1.0 + (y / x) ** 2) - 1.0)"
        " - y * y / (x * np.sqrt(1.0 + (y / x) ** 2)))",
        "d[z] * y / np.sqrt(1.0 + (y / x) ** 2)",
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
