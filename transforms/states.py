"""Static zero tracking, shared by reverse mode (adjoints) and forward mode (tangents).

Expects: a state, a dict from a generated name (an adjoint or a tangent) to what is known of it
at one point of the code being built. Guarantees: each name is *zero* (never written, or reset by
a definition: no statement is needed for it), *dense* (holds an array) or *maybe* (either; holds
the ``ZERO`` sentinel at run time, so only a *maybe* name costs a run-time test); a name missing
from a state is zero. ``join`` merges the states of two paths (after a branch, around a loop).
"""

from __future__ import annotations

ZERO, DENSE, MAYBE = "zero", "dense", "maybe"


def join(a, b):
    """Merge two states; also which names each side must set to ``ZERO``."""
    merged, fix_a, fix_b = {}, [], []
    for n in sorted(set(a) | set(b)):
        x, y = a.get(n, ZERO), b.get(n, ZERO)
        if x == y:
            merged[n] = x
            continue
        merged[n] = MAYBE
        if x == ZERO:
            fix_a.append(n)
        if y == ZERO:
            fix_b.append(n)
    return merged, fix_a, fix_b
