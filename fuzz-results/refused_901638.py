# seed 901638: refused: UnsupportedSyntaxError: unsupported in-place write: 'v5' may share memory with 'v4' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'v5' may share memory with 'v4' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_ae66633c29143db7.py", line 13, column 5
#     v4 *= np.tanh(((s + 1.91) + helper0(c0=np.mean(y), a0=x)))
#     ^
# hint: take a copy where 'v5' is made: v5 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    v4 = s * 1.0
    v5 = (0.41 / (2.0 + np.sin((s * np.sum(y)))))
    if x[0] < 0.37:
        v4, v5 = v5, v4
        v6 = ((y / (2.0 + np.sin(x))) * x)
    else:
        v7 = y[-2] * 1.0
        v8 = np.tanh((np.arctan(np.mean(y)) - (np.sum(y) + y)))
    v4 *= np.tanh(((s + 1.91) + helper0(c0=np.mean(y), a0=x)))
    for i9 in y:
        v10 = ((x - y) - (y * x))
        v5 += 0.5 * (np.sin(np.where(s > 0, s, 0.5 * s)) - v5)
    v11 = (np.sum(x) - y)
    b12 = np.zeros(3)
    return -0.66 * v4 + 0.3 * v5


def helper1(a1, c1):
    b2 = np.zeros(3)
    v3 = a1[-2] * 1.0
    v3 = v3 * np.cos(helper0((-b2), np.tanh(1.14)))
    return -0.37 * a1 + -0.83 * a1


def helper0(a0, c0):
    v1 = np.tanh(((c0 - a0[1]) + np.mean(a0)))
    return -0.51 * c0
