"""Linear algebra: products, contractions, and the dense ``np.linalg`` functions.

Functions numpy added later (the array-API names in 2.0, ``matvec`` in 2.2) are registered where
the installed numpy has them."""

import operator

import numpy as np

from . import facts, rule

LA = np.linalg

# ---- products -----------------------------------------------------------------------------------
rule(
    np.dot,
    "z, a, b",
    "d[a] += dot_adjoint_a(d[z], a, b)\nd[b] += dot_adjoint_b(d[z], a, b)",
    ranks={
        (2, 2): "d[a] += d[z].dot(b.T)\nd[b] += a.T.dot(d[z])",
        (2, 1): "d[a] += np.multiply.outer(d[z], b)\nd[b] += a.T.dot(d[z])",
        (1, 2): "d[a] += b.dot(d[z])\nd[b] += np.multiply.outer(a, d[z])",
    },
    shape="product",
    fresh=True,
)
rule(
    [np.matmul, operator.matmul, getattr(LA, "matmul", None)],
    "z, x1, x2",
    "d[x1] += matmul_adjoint_a(d[z], x1, x2)\nd[x2] += matmul_adjoint_b(d[z], x1, x2)",
    ranks={
        (2, 2): "d[x1] += d[z] @ x2.T\nd[x2] += x1.T @ d[z]",
        (2, 1): "d[x1] += np.multiply.outer(d[z], x2)\nd[x2] += x1.T @ d[z]",
        (1, 2): "d[x1] += x2 @ d[z]\nd[x2] += np.multiply.outer(x1, d[z])",
    },
)
facts([np.matmul, operator.matmul], shape="product", fresh=True)
rule(
    np.inner,
    "z, a, b",
    "d[a] += inner_adjoint(d[z], a, b, 0)\nd[b] += inner_adjoint(d[z], a, b, 1)",
    fresh=True,
)
rule(
    [np.outer, getattr(LA, "outer", None)],
    "z, a, b",
    "d[a] += np.reshape(d[z].dot(np.ravel(b)), np.shape(a))\nd[b] += np.reshape(np.ravel(a).dot(d[z]), np.shape(b))",
)
facts(np.outer, fresh=True)
rule(
    np.vdot,
    "z, a, b",
    "d[a] += np.reshape(d[z] * np.ravel(b), np.shape(a))\nd[b] += np.reshape(d[z] * np.ravel(a), np.shape(b))",
)
rule(
    [getattr(np, "vecdot", None), getattr(LA, "vecdot", None)],
    "z, x1, x2, axis=-1",
    "d[x1] += vecdot_adjoint(d[z], x1, x2, axis)\nd[x2] += vecdot_adjoint(d[z], x2, x1, axis)",
)
rule(
    getattr(np, "matvec", None),
    "z, x1, x2",
    """
d[x1] += unbroadcast(np.einsum("...m,...n->...mn", d[z], x2), x1)
d[x2] += unbroadcast(np.einsum("...mn,...m->...n", x1, d[z]), x2)
""",
)
rule(
    getattr(np, "vecmat", None),
    "z, x1, x2",
    """
d[x1] += unbroadcast(np.einsum("...nm,...m->...n", x2, d[z]), x1)
d[x2] += unbroadcast(np.einsum("...n,...m->...nm", x1, d[z]), x2)
""",
)
rule(
    [np.tensordot, getattr(LA, "tensordot", None)],
    "z, a, b, axes=2",
    "d[a] += tensordot_adjoint(d[z], a, b, axes, 0)\nd[b] += tensordot_adjoint(d[z], a, b, axes, 1)",
)
facts(np.tensordot, fresh=True)
_EINSUM = "abcefhpq"  # up to eight operands (``d`` would read as the adjoint)
rule(
    np.einsum,
    "z, subscripts, "
    + ", ".join(_EINSUM[:1])
    + "".join(f", {o}=None" for o in _EINSUM[1:])
    + ", optimize=False",
    "\n".join(
        f"d[{o}] += einsum_adjoint(d[z], subscripts, operands_of({', '.join(_EINSUM)}), {i}, optimize)"
        for i, o in enumerate(_EINSUM)
    ),
    nondiff={
        "subscripts": None,  # the interleaved form (operands and index lists) is refused
        "optimize": "a contraction order (the value does not depend on it)",
    },
)
rule(
    np.kron,
    "z, a, b",
    "d[a] += kron_adjoint(d[z], a, b, 0)\nd[b] += kron_adjoint(d[z], a, b, 1)",
    fresh=True,
)
rule(
    np.cross,
    "z, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None",
    "d[a] += cross_adjoint(d[z], a, b, axisa, axisb, axisc, axis, 0)\n"
    "d[b] += cross_adjoint(d[z], a, b, axisa, axisb, axisc, axis, 1)",
    nondiff={"axisa": "an axis", "axisb": "an axis", "axisc": "an axis"},
    fresh=True,
)
rule(
    getattr(LA, "cross", None),
    "z, a, b, axis=-1",
    "d[a] += unbroadcast(np.cross(b, d[z], axis=axis), a)\nd[b] += unbroadcast(np.cross(d[z], a, axis=axis), b)",
)

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

# ---- convolution: one-dimensional, bilinear ---------------------------------------------------------
rule(
    np.convolve,
    "y, a, v, mode='full'",
    "d[a] += convolve_adjoint(d[y], a, v, mode, 0)\nd[v] += convolve_adjoint(d[y], a, v, mode, 1)",
)
rule(
    np.correlate,
    "y, a, v, mode='valid'",
    "d[a] += correlate_adjoint(d[y], a, v, mode, 0)\nd[v] += correlate_adjoint(d[y], a, v, mode, 1)",
)
