"""The autograd tutorial's first gradients, computed by sourcegrad on plain numpy arrays.

The tutorial builds ``y = x + 2``, ``z = y * y * 3``, ``out = z.mean()`` from ``x = ones(2, 2)``
and calls ``out.backward()`` to find ``d(out)/dx = 4.5`` everywhere. With sourcegrad the same
computation is a function, and ``sg.grad`` of it is a new function that returns the gradient.
The tutorial then varies the expression; each variant is here with the number it prints.

Run it from the repository root::

    python examples/autograd_basics.py
"""

import numpy as np

import sourcegrad as sg


def out_basic(x):
    y = x + 2
    z = y * y * 3
    return z.mean()  # out = 27; d(out)/dx = (1/4) * 6 * y = 4.5


def out_square(x):
    y = x + 2
    z = 2 * (y ** 2)
    return z.mean()  # d(out)/dx = (1/4) * 4 * y = 3


def out_cube(x):
    y = x + 2
    z = 2 * (y ** 3)
    return z.mean()  # d(out)/dx = (1/4) * 6 * y**2 = 13.5


def out_affine(x):
    y = 4 * x + 2
    z = 8 * (y ** 2)
    return z.mean()  # d(out)/dx = (1/9) * 16 * y * 4 = 42.667 (x is 3x3)


# (function, input, the gradient the tutorial prints)
EXAMPLES = [
    (out_basic, np.ones((2, 2)), 4.5),
    (out_square, np.ones((2, 2)), 3.0),
    (out_cube, np.ones((2, 2)), 13.5),
    (out_affine, np.ones((3, 3)), 128.0 / 3.0),
]


def gradients():
    """``(name, value, gradient)`` for each example, checked against the tutorial's numbers."""
    results = []
    for f, x, expected in EXAMPLES:
        value, grad = sg.value_and_grad(f)(x)
        assert np.allclose(grad, expected), (f.__name__, grad, expected)
        results.append((f.__name__, value, grad))
    return results


def main():
    for (f, x, _), (name, value, grad) in zip(EXAMPLES, gradients()):
        print(f"{name}: out = {value:g}, d(out)/dx =")
        print(grad)
        print()

    print("The gradient sourcegrad generated for the first example:\n")
    print(sg.source(sg.grad(out_basic)))


if __name__ == "__main__":
    main()
