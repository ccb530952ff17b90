"""Products and contractions: ``dot``, ``matmul``, ``inner``, ``outer``, ``vdot``, ``vecdot``,
``matvec``, ``tensordot``, ``einsum``, ``kron``, ``cross``, and the one-dimensional convolutions.

A product's adjoint is written once: the template calls the runtime helper that handles every
rank (``runtime/adjoints/products.py``), and its ``ranks`` variants spell out the common ranks
inline where shape inference knows them. Functions numpy added later (the array-API names in 2.0,
``matvec`` in 2.2) are registered where the installed numpy has them."""

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
