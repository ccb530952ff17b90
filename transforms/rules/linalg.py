"""Linear algebra: products, contractions, and the dense ``np.linalg`` functions."""

import operator

import numpy as np

from . import rule

rule(np.dot, "z, a, b", "d[a] += dot_adjoint_a(d[z], a, b)\nd[b] += dot_adjoint_b(d[z], a, b)")
rule([np.matmul, operator.matmul], "z, x1, x2",
     "d[x1] += matmul_adjoint_a(d[z], x1, x2)\nd[x2] += matmul_adjoint_b(d[z], x1, x2)")
rule(np.inner, "z, a, b", "d[a] += inner_adjoint(d[z], a, b, 0)\nd[b] += inner_adjoint(d[z], a, b, 1)")
rule(np.outer, "z, a, b", "d[a] += np.reshape(d[z].dot(np.ravel(b)), np.shape(a))\nd[b] += np.reshape(np.ravel(a).dot(d[z]), np.shape(b))")
rule(np.tensordot, "z, a, b, axes=2",
     "d[a] += tensordot_adjoint(d[z], a, b, axes, 0)\nd[b] += tensordot_adjoint(d[z], a, b, axes, 1)")
rule(np.einsum, "z, subscripts, a, b=None, c=None", """
d[a] += einsum_adjoint(d[z], subscripts, operands_of(a, b, c), 0)
d[b] += einsum_adjoint(d[z], subscripts, operands_of(a, b, c), 1)
d[c] += einsum_adjoint(d[z], subscripts, operands_of(a, b, c), 2)
""")
rule(np.trace, "y, a, offset=0, axis1=0, axis2=1", "d[a] += untrace(d[y], a, offset, axis1, axis2)")
rule(np.diag, "y, v, k=0", "d[v] += undiag(d[y], v, k)")
rule(np.diagonal, "y, a, offset=0, axis1=0, axis2=1", "d[a] += undiagonal(d[y], a, offset, axis1, axis2)")
rule(np.tril, "y, m, k=0", "d[m] += np.tril(d[y], k)")
rule(np.triu, "y, m, k=0", "d[m] += np.triu(d[y], k)")
rule(np.linalg.inv, "y, a", "d[a] += -np.swapaxes(y, -1, -2) @ d[y] @ np.swapaxes(y, -1, -2)")
rule(np.linalg.det, "y, a", "d[a] += np.expand_dims(d[y] * y, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)")
rule(np.linalg.slogdet, "y, a", "d[a] += slogdet_adjoint(d[y], a)")
rule(np.linalg.solve, "x, a, b", """
gb = solve_adjoint_b(d[x], a, x)
d[a] += solve_adjoint_a(gb, a, x)
d[b] += unbroadcast(gb, b)
""")
rule(np.kron, "z, a, b", "d[a] += kron_adjoint(d[z], a, b, 0)\nd[b] += kron_adjoint(d[z], a, b, 1)")
rule(np.cross, "z, a, b", "d[a] += unbroadcast(np.cross(b, d[z]), a)\nd[b] += unbroadcast(np.cross(d[z], a), b)")
