# seed 900674: refused: UnsupportedSyntaxError: unsupported in-place write: 'v13' is updated in place inside a loop over it: the loop would read the changed array, unse
# unsupported in-place write: 'v13' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_8fd51af56cf548ff.py", line 9, column 9
#     v13 += 0.5 * (np.sin(v13) - v13)
#     ^
# hint: loop over a copy (for ... in np.copy(v13)), or write v13 = v13 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    v12 = np.sqrt(1.0 + np.square((0.34 / (2.0 + np.sin(s)))))
    v12 /= 1.0 + np.square(np.mean(x))
    v13 = y * 1.0
    for i14 in v13:
        v13 += 0.5 * (np.sin(v13) - v13)
        v12 += 0.5 * (np.sin(np.mean(x)) - v12)
    return -0.65 * np.sum(y) + -0.19 * np.sum(y) + 0.25 * np.sum(y)


def helper1(a1, c1, d1=0.75):
    b9 = np.zeros(2)
    v10 = a1 * 1.0
    v11 = np.sum(b9)
    return -0.97 * v10 + -0.04 * v10


def helper0(a0, c0):
    l1 = []
    l1.append(np.sqrt(1.0 + np.square(-1.87)))
    for i2 in range(4):
        l1.append(np.tanh(((a0 - a0) - (c0[0] * 0.46))))
    v3 = np.tanh(0.1 * np.sum(np.stack(l1), axis=0))
    l4 = []
    l4.append(np.tanh((c0 * c0)))
    for i5 in range(0):
        if c0[1] > 0.85:
            return -0.17 * v3 + -0.87 * c0
        l4.append(c0 * 1.0)
    v6 = np.tanh(0.1 * sum(l4))
    if (np.mean(v6) * -0.15) > -0.95:
        v7 = np.tanh((np.log(1.0 + np.square(v6)) - (c0 - c0)))
        v8 = a0 * 1.0
    return 0.92 * v6
