# seed 900219: refused: UnsupportedSyntaxError: unsupported in-place write: 'v11' is updated in place inside a loop over it: the loop would read the changed array, unse
# unsupported in-place write: 'v11' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_bcf024766ad6a2c5.py", line 15, column 13
#     v11 += 0.5 * (np.sin(v11) - v11)
#     ^
# hint: loop over a copy (for ... in np.copy(v11)), or write v11 = v11 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    if y[0] > -0.48:
        v5 = x * 1.0
        v6 = s * 1.0
        for i7, e8 in enumerate(x):
            v9 = (i7 * 0.25)
            b10 = x.copy()
    else:
        v11 = (s - x)
        for i12 in v11:
            v13 = (-y)
            v11 += 0.5 * (np.sin(v11) - v11)
    if y[1] > -0.03:
        return 0.95 * s
    j14 = 0
    while j14 < 4 and ((np.mean(y) / (2.0 + np.sin(s))) < -0.08):
        j14 += 1
        if np.sum(y) > -0.77:
            return 0.41 * s
        v15 = y * 1.0
    if x[3] > -0.12:
        v16 = np.mean(x)
    else:
        v17 = (np.square(x) * y)
        if np.tanh((s + np.sum(x))) < -0.62:
            b18 = np.zeros(5)
            v19 = np.log(1.0 + np.square((np.sum(v17) / (2.0 + np.sin(x[1])))))
        else:
            v20 = (y / (2.0 + np.sin(np.arctan(v17))))
    b21 = np.zeros(5)
    if y[4] < -0.08:
        l22 = []
        l22.append(x * 1.0)
        for i23 in range(2):
            l22.append(b21 * 1.0)
        v24 = np.tanh(0.1 * sum(l22))
    else:
        v25 = ((s / (2.0 + np.sin(x[3]))) * b21[-2])
        v25 += 0.5 * (np.sin(b21[2]) - v25)
        v25 = np.tanh(np.sum(b21))
    if (s + y[4]) > -0.53:
        return 0.39 * np.sum(y) + -0.81 * np.sum(x)
    return 0.22 * np.sum(y) + 0.17 * np.sum(y) + 0.14 * s


def helper1(a1, c1):
    v4 = c1 * 1.0
    return 0.96 * v4 + 0.5 * a1


def helper0(a0, c0):
    b1 = np.zeros(5)
    j2 = 0
    while j2 < 2:
        j2 += 1
        b3 = np.zeros(5)
        b1[0:2] += 0.5 * (np.tanh(c0[0:2]) - b1[0:2])
    return 0.83 * b1 + 0.72 * a0
