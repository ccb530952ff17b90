# seed 970220: refused: UnsupportedSyntaxError: unsupported in-place write: 'v2' is updated in place inside a loop over it: the loop would read the changed array, unsee
# unsupported in-place write: 'v2' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_ucll60ku/sgfuzz_85be47d50c3d1380.py", line 38, column 9
#     v2 += 0.5 * (np.sin(s) - v2)
#     ^
# hint: loop over a copy (for ... in np.copy(v2)), or write v2 = v2 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    v1 = y * 1.0
    v1 *= np.tanh(((y + v1) - v1))
    v2 = y * 1.0
    if np.sum(y) > 0.08 and np.cos(-0.48) > 0.92:
        b3 = v2.copy()
        if v1[0] < -0.14:
            b4 = np.zeros(2)
    else:
        if v2[-1] > 0.98:
            v5 = ((x[0] + s) + 0.77)
            v6 = np.sum(y)
        else:
            v1 += 0.5 * (np.sin(np.mean(v1)) - v1)
            v7 = np.sum((v2 / (2.0 + np.sin(y))))
        v2 = v2 * np.cos(np.tanh(0.77))
        b8 = np.zeros(2)
    v9 = (np.sqrt(1.0 + np.square(s)) - 1.64)
    j10 = 0
    while j10 < 4 and (v2[-2] > 0.11):
        j10 += 1
        if y[-1] < -0.64:
            b11 = y.copy()
            v1 += 0.5 * (np.sin(s) - v1)
        else:
            v12 = v9 * 1.0
            if np.sum(x) > 0.93:
                return 0.73 * np.sum(v2) + -0.84 * np.sum(y) + 0.49 * v12
            b13 = np.zeros(2)
        if np.sum(y) > 0.72:
            return -0.74 * np.sum(v2) + -0.47 * np.sum(v1)
    for i14 in v2:
        if np.sum(y) > -0.2:
            continue
        v2 += 0.5 * (np.sin(s) - v2)
        b15 = np.zeros(2)
        l16 = []
        l16.append((y - v1))
        for i17 in range(0):
            l16.append(y * 1.0)
        v18 = np.tanh(0.1 * sum(l16))
    return -0.24 * s + -0.56 * np.sum(v2) + -0.25 * np.sum(v2)
