"""``scipy.stats``' distributions, as statistical code calls them: ``norm.logpdf(x, loc, scale)``,
``t.logpdf(x, df, loc, scale)``, ``multivariate_normal.logpdf(x, mean, cov)``. Registered when
scipy imports, nothing otherwise.

The key of a rule is the distribution's bound method (``scipy.stats.norm.logpdf``: every read of
it is an equal method, so a call resolves to it however it is spelled); a frozen distribution
``norm(loc, scale).logpdf(x)`` is that call with the frozen arguments after ``x``
(``normalize/calls.py``).

A location-scale family's function is ``f(z)``, ``z = (x - loc) / scale``: its rule says ``f``'s
slope in ``z`` (``gz``, times the output adjoint) and, for a density, its slope in ``scale`` at
fixed ``z`` (``gs``: ``-1 / scale`` for a log density), and ``location_scale_adjoint`` gives
``x``, ``loc`` and ``scale`` theirs. Shape parameters (``df``, ``a``, ``b``) have their own
slopes. Outside the support (a negative ``scale``, ``x`` below ``loc`` for ``expon``) the
functions are ``nan`` or ``-inf`` and so are their slopes.
"""

try:
    from scipy import stats as st
except ImportError:  # an optional dependency: no rules
    st = None

from . import rule


# fn -> (gz, gs, shapes, slopes) of each location-scale rule, for its tangent (``tangents.py``)
LOCATION_SCALE = {}


def location_scale(fn, gz, gs=None, shapes=(), slopes=()):
    """The rule of ``fn(x, *shapes, loc=0, scale=1)``: ``gz`` and ``gs`` are the slopes of its
    value in ``z`` and (at fixed ``z``) in ``scale``; ``slopes`` those in the shape parameters,
    in order, each an expression of ``z``, the shapes and the result ``y``."""
    LOCATION_SCALE[fn] = (gz, gs, shapes, slopes)
    params = "".join(f"{p}, " for p in shapes)
    lines = [
        "z = standardized(x, loc, scale)",
        f"gz = d[y] * ({gz})",
        f"gs = d[y] * ({gs})" if gs is not None else "gs = 0.0",
        "d[x] += location_scale_adjoint(gz, gs, z, scale, x, 0)",
        "d[loc] += location_scale_adjoint(gz, gs, z, scale, loc, 1)",
        "d[scale] += location_scale_adjoint(gz, gs, z, scale, scale, 2)",
    ]
    lines += [f"d[{p}] += like_operand(d[y] * ({s}), {p})" for p, s in zip(shapes, slopes)]
    rule(fn, f"y, x, {params}loc=0, scale=1", "\n".join(lines))


if st is not None:
    # ---- the normal distribution: log phi(z) = -z^2 / 2 - log sqrt(2 pi); the log tails' slopes
    # are pdf / tail, from the log of the tail (finite far out, where the tail underflows)
    location_scale(st.norm.logpdf, "-z", "-1.0 / scale")
    location_scale(st.norm.pdf, "-z * y", "-y / scale")
    location_scale(st.norm.cdf, "normal_density(z)")
    location_scale(st.norm.logcdf, "normal_hazard(z, y)")
    location_scale(st.norm.sf, "-normal_density(z)")
    location_scale(st.norm.logsf, "-normal_hazard(-z, y)")
    # ---- Student's t: log Gamma((df + 1) / 2) - log Gamma(df / 2) - log(df pi) / 2 - log(scale)
    # - (df + 1) / 2 log(1 + z^2 / df)
    location_scale(
        st.t.logpdf,
        "-(df + 1.0) * z / (df + z * z)",
        "-1.0 / scale",
        shapes=("df",),
        slopes=("t_df_slope(z, df)",),
    )
    # ---- gamma(a): (a - 1) log z - z - log Gamma(a) - log(scale)
    location_scale(
        st.gamma.logpdf,
        "(a - 1.0) / z - 1.0",
        "-1.0 / scale",
        shapes=("a",),
        slopes=("np.log(z) - digamma_of(a)",),
    )
    # ---- beta(a, b): (a - 1) log z + (b - 1) log(1 - z) - log B(a, b) - log(scale)
    location_scale(
        st.beta.logpdf,
        "(a - 1.0) / z - (b - 1.0) / (1.0 - z)",
        "-1.0 / scale",
        shapes=("a", "b"),
        slopes=(
            "np.log(z) - digamma_of(a) + digamma_of(a + b)",
            "np.log1p(-z) - digamma_of(b) + digamma_of(a + b)",
        ),
    )
    # ---- exponential: -z - log(scale) for z >= 0; Laplace: -|z| - log(2 scale)
    location_scale(st.expon.logpdf, "-1.0", "-1.0 / scale")
    location_scale(st.laplace.logpdf, "-np.sign(z)", "-1.0 / scale")
    # ---- Poisson: k log(mu) - mu - log(k!) in the rate mu (k counts: no gradient)
    rule(st.poisson.logpmf, "y, k, mu", "d[mu] += like_operand(d[y] * (k / mu - 1.0), mu)")
    # ---- the multivariate normal: -(log det(2 pi C) + r^T C^-1 r) / 2, r = x - mean; scipy reads
    # C's lower triangle (its eigh), where C's adjoint lands. allow_singular=True would use a
    # pseudo-inverse and determinant, whose slopes differ off the range: only False
    rule(
        st.multivariate_normal.logpdf,
        "y, x, mean=None, cov=1, allow_singular=False",
        """
d[x] += mvn_logpdf_adjoint(d[y], x, mean, cov, 0)
d[mean] += mvn_logpdf_adjoint(d[y], x, mean, cov, 1)
d[cov] += mvn_logpdf_adjoint(d[y], x, mean, cov, 2)
""",
        only={"allow_singular": (False,)},
        nondiff={"allow_singular": "a boolean flag (only False)"},
    )
