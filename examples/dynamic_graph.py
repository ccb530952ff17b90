"""A data-dependent ``while`` loop, differentiated with a non-scalar backward seed.

The autograd tutorial doubles ``y = x * 2`` until its norm reaches 100: how many times depends on
the random ``x``, so the graph is built anew on every run. sourcegrad compiles the loop itself:
the generated code counts the iterations in the forward sweep and runs the adjoint body that
many times in the backward sweep.

``y`` is a vector, so instead of a gradient we ask for a vector-Jacobian product: ``sg.vjp``
returns the value and a pullback; ``pullback(v)`` is the tutorial's ``y.backward(v)``. The
result is ``y = x * 2**k`` for some ``k``, so ``pullback(v) = v * 2**k``: the tutorial's
``[0.1, 1.0, 0.0001]`` comes back as ``[6.4, 64, 0.0064]`` when ``k = 6``.

Run it from the repository root::

    python examples/dynamic_graph.py
"""

import numpy as np

import sourcegrad as sg


def double_until_large(x):
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    return y


double_until_large_vjp = sg.vjp(double_until_large)


def run(x, cotangent=(0.1, 1.0, 0.0001)):
    """``(y, gradient, k)``: the value, ``pullback(cotangent)``, and ``k`` with ``y = x * 2**k``."""
    y, pullback = double_until_large_vjp(x)
    gradient = pullback(cotangent)  # a list (or tuple) of numbers will do, as in the tutorial
    k = round(np.log2(np.abs(y).max() / np.abs(x).max()))  # doubling is exact in floating point
    assert np.array_equal(y, x * 2.0 ** k)
    assert np.allclose(gradient, np.array(cotangent) * 2.0 ** k)
    return y, gradient, k


def main():
    np.random.seed(0)
    for trial in range(3):
        x = np.random.randn(3) * 10.0 ** -trial  # smaller x: more doublings
        y, gradient, k = run(x)
        print(f"x = {x}")
        print(f"  y = x * 2**{k} = {y}  (the loop ran {k - 1} times)")
        print(f"  pullback([0.1, 1.0, 0.0001]) = {gradient}  (= cotangent * 2**{k})")
    print("\nThe generated forward and pullback:\n")
    print(sg.source(double_until_large_vjp))


if __name__ == "__main__":
    main()
