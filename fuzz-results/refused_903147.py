# seed 903147: refused: UnsupportedSyntaxError: unsupported in-place write: 'v6' may share memory with 'v7' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'v6' may share memory with 'v7' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_05852d8cd8897e47.py", line 23, column 5
#     v7 /= 1.0 + np.square(v6)
#     ^
# hint: take a copy where 'v6' is made: v6 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    v6 = np.tanh(helper0(y, np.cos(-1.48)))
    v7 = np.cos((v6 / (2.0 + np.sin(s))))
    if helper0(c0=0.81, a0=y) < 0.99:
        if y[3] > -0.74:
            b8 = y.copy()
        else:
            b9 = np.zeros(5)
    else:
        v6, v7 = v7, v6
        for i10 in reversed(range(2)):
            v11 = np.tanh(np.sum((x * x)))
        if y[2] < -0.17:
            b12 = np.zeros(5)
            v13 = (y / (2.0 + np.sin(y)))
            b14 = np.zeros(5)
    b15 = np.zeros(5)
    v16 = (np.mean(x) / (2.0 + np.sin(np.mean(y))))
    b15[3] = np.tanh(np.mean(y))
    v7 /= 1.0 + np.square(v6)
    return -0.16 * v6 + -0.27 * np.sum(b15)


def helper0(a0, c0):
    if (c0 + c0) < -0.19:
        l1 = []
        l1.append(np.mean(a0))
        for i2 in range(3):
            l1.append((np.tanh(np.sum(a0)) - np.mean(a0)))
        v3 = np.tanh(0.1 * sum(l1))
        b4 = np.zeros(5)
    v5 = (np.log(1.0 + np.square(a0[-1])) - np.mean(a0))
    v5 /= 1.0 + np.square(1.22)
    return -0.92 * v5 + 0.3 * np.sum(a0) + -1.0 * v5
