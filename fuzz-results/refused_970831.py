# seed 970831: refused: UnsupportedSyntaxError: unsupported in-place write: 'v8' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'v8' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_ucll60ku/sgfuzz_42ede31b0bc4b53c.py", line 16, column 5
#     v9 *= np.tanh(helper0(y, x))
#     ^
# hint: take a copy where 'v8' is made: v8 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    if y[1] > 0.32:
        v7 = -0.34
    v8 = s * 1.0
    v9 = np.tanh((helper0(x, x) * (y[4] * v8)))
    v9 += 0.5 * (np.sin(np.tanh((np.sqrt(1.0 + np.square(0.8)) + helper0(x, x)))) - v9)
    if np.sum(x) < -0.84:
        b10 = x.copy()
    else:
        v8, v9 = v9, v8
        b11 = np.zeros(5)
    b12 = np.zeros(5)
    v9 *= np.tanh(helper0(y, x))
    return -0.08 * v8


def helper0(a0, c0):
    v1 = np.tanh(np.sum((a0[-4] - c0)))
    if np.sum(a0) > -0.59:
        j2 = 0
        while j2 < 3:
            j2 += 1
            b3 = np.zeros(5)
            b3[3] = np.tanh(-1.89)
            if np.sum(a0) > -0.71:
                break
        l4 = []
        l4.append(np.mean(c0))
        for i5 in range(1):
            l4.append(((i5 * 0.25) - ((i5 * 0.25) * -0.6)))
        v6 = np.tanh(0.1 * sum(l4))
    v1 /= 1.0 + np.square(np.cos((1.05 / (2.0 + np.sin(np.sum(c0))))))
    return 0.72 * v1 + 0.44 * np.sum(c0) + -0.15 * np.sum(c0)
