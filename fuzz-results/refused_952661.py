# seed 952661: refused: UnsupportedSyntaxError: unsupported in-place write: 'v12' is updated in place inside a loop over it: the loop would read the changed array, unse
# unsupported in-place write: 'v12' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_f8gpwqt6/sgfuzz_a56ce8046834e426.py", line 21, column 13
#     v12 *= np.tanh(x)
#     ^
# hint: loop over a copy (for ... in np.copy(v12)), or write v12 = v12 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    j6 = 0
    while j6 < 3 and (np.arctan(s) > -0.77):
        j6 += 1
        if np.sum(x) < -0.51:
            b7 = np.zeros(5)
            v8 = b7 * 1.0
            v9 = np.sqrt(1.0 + np.square(np.sum(v8)))
        else:
            b10 = np.zeros(5)
            v11 = s * 1.0
    v12 = np.arctan(x)
    if (y[2] * s) < -0.17:
        v12 *= np.tanh(x)
        for i13 in v12:
            if np.cos(s) < 0.44:
                break
            v12 *= np.tanh(x)
        l14 = []
        l14.append(v12 * 1.0)
        for i15 in range(4):
            l14.append(y * 1.0)
        v16 = np.tanh(0.1 * sum(l14))
    v12 = 0.5 * v12 + 0.5 * np.tanh((x * x))
    if (-s) > -0.75:
        return -0.9 * np.sum(v12) + 0.23 * np.sum(x) + -0.17 * np.sum(v12)
    if x[2] > 0.28 and np.mean(y) > -0.24:
        return -0.59 * np.sum(v12) + 0.8 * np.sum(v12)
    v17 = v12[2] * 1.0
    return 0.99 * np.sum(y) + -0.9 * s


def helper1(a1, c1):
    b2 = np.zeros(5)
    j3 = 0
    while j3 < 4:
        j3 += 1
        v4 = (np.sum(b2) / (2.0 + np.sin(1.17)))
        if np.tanh((v4 + (j3 * 0.25))) > -0.73:
            break
    b5 = np.zeros(5)
    return 0.14 * np.sum(c1) + -0.64 * a1 + 0.73 * np.sum(b5)


def helper0(a0, c0):
    v1 = a0 * 1.0
    return 0.78 * np.sum(a0)
