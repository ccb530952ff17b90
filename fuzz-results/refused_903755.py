# seed 903755: refused: UnsupportedSyntaxError: unsupported in-place write: 'v14' is updated in place inside a loop over it: the loop would read the changed array, unse
# unsupported in-place write: 'v14' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_ad5dcd9f789aeae0.py", line 25, column 9
#     v14 /= 1.0 + np.square(((b15 * x) - (-1.13 + x)))
#     ^
# hint: loop over a copy (for ... in np.copy(v14)), or write v14 = v14 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    v14 = y * 1.0
    b15 = x.copy()
    if np.sum(x) > 0.92 or (-0.91 + b15[3]) > 0.63:
        v16 = np.tanh((np.sum(y) - np.mean(v14)))
        v17 = ((0.44 - y[0]) / (2.0 + np.sin(np.tanh((-1.26 + np.sum(y))))))
    else:
        for i18, e19 in enumerate(x):
            b15[3:4] += 0.5 * (np.tanh(x[3:4]) - b15[3:4])
            v14 *= np.tanh(np.tanh((y + v14)))
            if y[2] > 0.26:
                break
        if v14[3] < 0.53:
            v20 = s * 1.0
            v21 = ((x / (2.0 + np.sin(b15))) + v14)
        else:
            if 1.35 < -0.85:
                return 0.99 * s + 0.55 * np.sum(v14) + 0.88 * np.sum(y)
            b15[1] = np.tanh(np.mean(v14))
            b15[b15 < 0] = 0.0
    for i22 in v14:
        v14 /= 1.0 + np.square(((b15 * x) - (-1.13 + x)))
        v23 = ((y[0] - s) * s)
    v14 *= np.tanh((s - np.tanh((np.sum(b15) - s))))
    return -1.0 * s


def helper1(a1, c1):
    b4 = np.zeros(4)
    for i5 in a1:
        if a1[3] > -0.92:
            return 0.19 * i5 + -0.96 * np.sum(a1) + 0.81 * np.sum(a1)
        if np.sum(b4) > 0.54:
            v6 = (a1 / (2.0 + np.sin((a1 - a1))))
        v7 = np.sum(b4)
    for i8, e9 in enumerate(a1):
        l10 = []
        l10.append(a1 * 1.0)
        for i11 in range(4):
            l10.append(a1 * 1.0)
        v12 = np.tanh(0.1 * np.sum(np.stack(l10), axis=0))
        b13 = np.zeros(4)
        if (b4[i8 % 4] / (2.0 + np.sin(c1))) < -0.43:
            break
    return -0.98 * np.sum(b4)


def helper0(a0, c0):
    v1 = c0 * 1.0
    for i2 in a0:
        v3 = ((np.mean(a0) / (2.0 + np.sin(c0))) * np.tanh(a0))
        if np.sum(v3) > 0.22:
            continue
    v1 -= 0.5 * (v1 - np.tanh(a0[0]))
    return 0.39 * c0 + -0.45 * c0
