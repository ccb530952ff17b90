# seed 972517: refused: UnsupportedSyntaxError: unsupported in-place write: 'v12' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it
# unsupported in-place write: 'v12' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_ucll60ku/sgfuzz_dac6d859231f33a9.py", line 41, column 5
#     v9 -= 0.5 * (v9 - np.tanh(x))
#     ^
# hint: take a copy where 'v12' is made: v12 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    for i4 in range(k):
        if np.sum(y) > -0.45:
            return 0.0 * s
        v5 = ((x * x) / (2.0 + np.sin(x)))
        if np.sum(v5) < 0.93 and np.exp(s) > -0.6:
            v6 = x * 1.0
    v7 = (np.cos(0.19) / (2.0 + np.sin(np.tanh(np.sum(y)))))
    b8 = np.zeros(5)
    v9 = (b8 / (2.0 + np.sin(b8)))
    l10 = []
    l10.append(y * 1.0)
    for i11 in range(3):
        l10.append((y + x))
    v12 = np.tanh(0.1 * np.sum(np.stack(l10), axis=0))
    if np.log(1.0 + np.square(s)) > 0.84:
        l13 = []
        l13.append((b8 * y))
        for i14 in range(1):
            l13.append(np.tanh(((b8 + v12) * (np.sum(v9) / (2.0 + np.sin(v9))))))
        v15 = np.tanh(0.1 * np.sum(np.stack(l13), axis=0))
        l16 = []
        l16.append((-0.94 + v12))
        for i17 in range(0):
            l16.append(v15 * 1.0)
        v18 = np.tanh(0.1 * np.sum(np.stack(l16), axis=0))
    else:
        v9, v12 = v12, v9
        for i19 in y:
            v20 = np.exp(np.tanh((i19 + i19)))
            v21 = np.arctan(s)
        if 1.04 < 0.72:
            v9, v12 = v12, v9
            b8[3] = np.tanh((helper0(b8, v7) / (2.0 + np.sin((-np.sum(v12))))))
        else:
            v22 = v12 * 1.0
            v22 = 0.5 * v22 + 0.5 * np.tanh((x + (v7 / (2.0 + np.sin(v22)))))
    v9 -= 0.5 * (v9 - np.tanh(x))
    v9, v12 = v12, v9
    return -0.01 * np.sum(v9)


def helper0(a0, c0, d0=-0.99):
    l1 = []
    l1.append(a0 * 1.0)
    for i2 in range(0):
        l1.append((np.tanh((np.sum(a0) + a0[-1])) / (2.0 + np.sin((a0 / (2.0 + np.sin(a0)))))))
    v3 = np.tanh(0.1 * sum(l1))
    v3 = v3 * np.cos(v3)
    return -0.16 * np.sum(a0)
