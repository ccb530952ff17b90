"""Linear algebra: diagonals and triangles, and the dense ``np.linalg`` functions (products and
contractions are in ``products.py``).

Functions numpy added later (the array-API names in 2.0) are registered where the installed numpy
has them."""

import numpy as np

from sourcegrad.runtime import filled_diagonal

from . import IN_PLACE, rule

LA = np.linalg

# ---- diagonals and triangles --------------------------------------------------------------------
rule(
    np.trace,
    "y, a, offset=0, axis1=0, axis2=1",
    "d[a] += untrace(d[y], a, offset, axis1, axis2)",
    fresh=True,
)
rule(
    getattr(LA, "trace", None),
    "y, x, offset=0, dtype=None",
    "d[x] += untrace(d[y], x, offset, -2, -1)",
)
rule(np.diag, "y, v, k=0", "d[v] += undiag(d[y], v, k)")
rule(np.diagflat, "y, v, k=0", "d[v] += np.reshape(np.diagonal(d[y], k), np.shape(v))")
rule(
    np.diagonal,
    "y, a, offset=0, axis1=0, axis2=1",
    "d[a] += undiagonal(d[y], a, offset, axis1, axis2)",
)
rule(getattr(LA, "diagonal", None), "y, x, offset=0", "d[x] += undiagonal(d[y], x, offset, -2, -1)")
# np.fill_diagonal(a, v) on a buffer the function allocated is a = filled_diagonal(a, v, wrap)
IN_PLACE[np.fill_diagonal] = filled_diagonal
rule(
    filled_diagonal,
    "y, a, val, wrap=False",
    """
d[a] += unfill_diagonal(d[y], wrap)
d[val] += fill_diagonal_values_adjoint(d[y], val, wrap)
""",
    nondiff={"wrap": "a boolean flag"},
    shape="scatter",
    fresh=True,
)
# a 1-d m is the rows of a square
rule(np.tril, "y, m, k=0", "d[m] += unbroadcast(np.tril(d[y], k), m)", fresh=True)
rule(np.triu, "y, m, k=0", "d[m] += unbroadcast(np.triu(d[y], k), m)", fresh=True)

# ---- dense np.linalg --------------------------------------------------------------------------
rule(LA.inv, "y, a", "d[a] += -np.swapaxes(y, -1, -2) @ d[y] @ np.swapaxes(y, -1, -2)", fresh=True)
rule(LA.det, "y, a", "d[a] += det_adjoint(d[y], a, y)")  # singular a: cofactors from the SVD
rule(LA.slogdet, "y, a", "d[a] += slogdet_adjoint(d[y], a)")
rule(
    LA.solve,
    "x, a, b",
    """
gb = solve_adjoint_b(d[x], a, x)
d[a] += solve_adjoint_a(gb, a, x)
d[b] += unbroadcast(gb, b)
""",
    fresh=True,
)
rule(LA.matrix_power, "y, a, n", "d[a] += matrix_power_adjoint(d[y], a, n)")

# ---- factorizations: numpy reads one triangle of a symmetric argument, and the adjoint lands there
# (an off-diagonal entry stands for its mirror too); tuple results' unused parts have ZERO adjoints
rule(
    LA.cholesky,
    "y, a, upper=False",
    "d[a] += cholesky_adjoint(d[y], a, y, upper)",
    nondiff={"upper": "a boolean flag"},
)
# repeated eigenvalues: see eigh_adjoint
rule(
    LA.eigh,
    "y, a, UPLO='L'",
    "d[a] += eigh_adjoint(d[y], a, y, UPLO)",
    nondiff={"UPLO": "a triangle name"},
)
rule(
    LA.eigvalsh,
    "y, a, UPLO='L'",
    "d[a] += eigvalsh_adjoint(d[y], a, y, UPLO)",
    nondiff={"UPLO": "a triangle name"},
)
rule(
    LA.svd,
    "y, a, full_matrices=True, compute_uv=True, hermitian=False",
    "d[a] += svd_adjoint(d[y], a, y, full_matrices, compute_uv)",
    only={"hermitian": (False,)},
    nondiff={
        "full_matrices": "a boolean flag",
        "compute_uv": "a boolean flag",
        "hermitian": "a boolean flag",
    },
)
rule(getattr(LA, "svdvals", None), "y, x", "d[x] += svd_adjoint(d[y], x, y, False, False)")
rule(
    LA.qr,
    "y, a, mode='reduced'",
    "d[a] += qr_adjoint(d[y], a, y, mode)",
    only={"mode": ("reduced", "r")},
)
# full rank (the rank is constant nearby); the cutoffs select the rank, so the result is
# piecewise constant in them
CUTOFF = "a cutoff: the result is piecewise constant in it"
rule(
    LA.pinv,
    "y, a, rcond=None, hermitian=False, rtol=None",
    "d[a] += pinv_adjoint(d[y], a, y)",
    nondiff={"rcond": CUTOFF, "rtol": CUTOFF, "hermitian": "a boolean flag"},
)
rule(
    LA.lstsq,
    "y, a, b, rcond=None",
    "d[a] += lstsq_adjoint_a(d[y], a, b, y)\nd[b] += lstsq_adjoint_b(d[y], a, b, y)",
    nondiff={"rcond": CUTOFF},
)
