# seed 902489: refused: UnsupportedSyntaxError: unsupported in-place write: 'v6' is updated in place inside a loop over it: the loop would read the changed array, unsee
# unsupported in-place write: 'v6' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_bc9c809ab9b57a43.py", line 15, column 13
#     v6 -= 0.5 * (v6 - np.tanh(((y * v6) / (2.0 + np.sin(y)))))
#     ^
# hint: loop over a copy (for ... in np.copy(v6)), or write v6 = v6 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    l3 = []
    l3.append(x * 1.0)
    for i4 in range(1):
        v5 = (np.sin(s) / (2.0 + np.sin((np.sum(y) / (2.0 + np.sin(s))))))
        l3.append(y * 1.0)
    v6 = np.tanh(0.1 * np.sum(np.stack(l3), axis=0))
    for i7 in reversed(range(1)):
        for i8 in range(3):
            b9 = y.copy()
        for i10 in v6:
            v6 -= 0.5 * (v6 - np.tanh(((y * v6) / (2.0 + np.sin(y)))))
            if np.arctan(i10) < 0.97:
                break
        if helper0(v6, s) > 0.88:
            continue
    v11 = (s / (2.0 + np.sin((-1.2 / (2.0 + np.sin(np.sum(v6)))))))
    if y[1] > -0.46:
        b12 = v6.copy()
    v13 = np.exp(np.tanh(np.sum(x)))
    if y[0] < 0.16:
        return -0.75 * s
    return 0.75 * v13 + -0.67 * v13


def helper0(a0, c0):
    v1 = c0 * 1.0
    v1 += 0.5 * (np.sin(np.tanh(((v1 + c0) + (0.72 + a0[-2])))) - v1)
    b2 = a0.copy()
    return 0.36 * v1 + 0.28 * v1
