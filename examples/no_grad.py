"""``with sg.no_grad():`` and ``sg.stop_gradient`` inside a differentiated function.

In the tutorial, ``h = z * 2`` computed under ``torch.no_grad()`` does not require a gradient.
Here the same block sits inside a function given to ``sg.grad``: whatever it computes is a
constant to the gradient, so ``out = sum(z * h)`` differentiates as if ``h`` were a number.

Run it from the repository root::

    python examples/no_grad.py
"""

import numpy as np

import sourcegrad as sg


def out(x):
    y = x + 2
    z = y * y * 3
    with sg.no_grad():
        h = z * 2  # a constant to the gradient
    return np.sum(z * h)


def out_stopped(x):
    y = x + 2
    z = y * y * 3
    h = sg.stop_gradient(z * 2)  # the same, as an expression
    return np.sum(z * h)


def gradients(x):
    """d/dx sum(z * h) with h held constant: h * dz/dx = h * 6 * (x + 2)."""
    return sg.grad(out)(x), sg.grad(out_stopped)(x)


if __name__ == "__main__":
    x = np.ones((3, 3))
    g, g_stopped = gradients(x)
    z = 3 * (x + 2) ** 2
    print("gradient with no_grad():", g[0, 0], " expected h * 6 * (x + 2) =", (2 * z * 6 * (x + 2))[0, 0])
    print("gradient with stop_gradient:", g_stopped[0, 0])
    print(sg.source(sg.grad(out)))
