"""``scipy.linalg``: triangular solves, Cholesky factors and solves, the matrix exponential.
Registered when scipy imports, nothing otherwise.

LAPACK reads one triangle of its argument, and the adjoint lands there: ``cholesky(a)`` reads the
upper one (``lower=False``, scipy's default, gives ``U`` with ``a = U^T U``), ``solve_triangular``
the one ``lower`` names (without the diagonal for ``unit_diagonal``). ``cho_factor`` returns
``(c, lower)``: ``c`` holds the factor in that triangle and ``a``'s own entries in the other;
``cho_solve((c, lower), b)`` reads only the factor. The flags (``lower``, ``trans``, ...) carry
no gradient; ``overwrite_*`` and ``check_finite`` change no value.
"""

try:
    from scipy import linalg as sl
except ImportError:  # an optional dependency: no rules
    sl = None

from . import rule

FLAGS = {
    "lower": "a boolean flag",
    "unit_diagonal": "a boolean flag",
    "trans": "a transpose mode",
    "overwrite_a": "a boolean flag",
    "overwrite_b": "a boolean flag",
    "check_finite": "a boolean flag",
}

if sl is not None:
    rule(
        sl.solve_triangular,
        "x, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True",
        """
gb = solve_triangular_adjoint_b(d[x], a, b, trans, lower, unit_diagonal)
d[b] += unbroadcast(gb, b)
d[a] += solve_triangular_adjoint_a(gb, a, b, x, trans, lower, unit_diagonal)
""",
        only={"trans": (0, 1, 2, "N", "T", "C")},
        nondiff=FLAGS,
        fresh=True,
    )
    rule(
        sl.cholesky,
        "y, a, lower=False, overwrite_a=False, check_finite=True",
        "d[a] += scipy_cholesky_adjoint(d[y], a, y, lower)",
        nondiff=FLAGS,
        fresh=True,
    )
    rule(
        sl.cho_factor,
        "y, a, lower=False, overwrite_a=False, check_finite=True",
        "d[a] += cho_factor_adjoint(d[y], a, y, lower)",
        nondiff=FLAGS,
        fresh=True,
    )
    rule(
        sl.cho_solve,
        "x, c_and_lower, b, overwrite_b=False, check_finite=True",
        """
d[b] += cho_solve_adjoint_b(d[x], c_and_lower, b)
d[c_and_lower] += cho_solve_adjoint_c(d[x], c_and_lower, b, x)
""",
        nondiff=FLAGS,
        fresh=True,
    )
    # the adjoint of expm is the Frechet derivative at a^T: expm_frechet(a.T, g)
    rule(sl.expm, "y, A", "d[A] += expm_adjoint(d[y], A)", fresh=True)
