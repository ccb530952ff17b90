"""The tutorial's profiler example: which statements of the generated code take the time.

``torch.autograd.profiler.profile`` times each operator; ``sg.profile`` times each statement of
the code sourcegrad generated, forward and backward, and names the line of your function it
came from. Nothing is instrumented when no profile is running.

Run it from the repository root::

    python examples/profiler.py
"""

import numpy as np

import sourcegrad as sg


def out(x):
    y = np.multiply(x, 4) + 2
    z = 8 * (y ** 2)
    return z.mean()


def profile(n=200, repeats=20):
    dout = sg.grad(out)
    x = np.ones((n, n))
    dout(x)  # compile outside the profile
    with sg.profile() as prof:
        for _ in range(repeats):
            dout(x)
    return prof


if __name__ == "__main__":
    print(sg.grad(out)(np.ones((3, 3)))[0, 0], "(the tutorial's 42.667 on a 3x3 input)")
    print(profile())
