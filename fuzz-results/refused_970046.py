# seed 970046: refused: UnsupportedSyntaxError: unsupported in-place write: 'l6' may share memory with 'b1' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'l6' may share memory with 'b1' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_ucll60ku/sgfuzz_fc90761ca53425a9.py", line 19, column 9
#     b1[b1 < 0] = 0.0
#     ^
# hint: take a copy where 'l6' is made: l6 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    b1 = np.zeros(2)
    b1[1] *= np.cos(-0.62)
    v2 = (x / (2.0 + np.sin((x * b1))))
    if np.sum(x) > -0.73:
        b1[1] *= np.cos(np.sum(x))
        l3 = []
        l3.append(-0.88)
        for i4 in range(3):
            l3.append(s * 1.0)
        v5 = np.tanh(0.1 * sum(l3))
    b1[1:2] += 0.5 * (np.tanh(x[1:2]) - b1[1:2])
    l6 = []
    l6.append((--1.74))
    for i7 in range(3):
        b1[b1 < 0] = 0.0
        l6.append(b1[1])
    v8 = np.tanh(0.1 * sum(l6))
    return -0.88 * np.sum(y) + 0.25 * s + -0.48 * v8
