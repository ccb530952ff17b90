# seed 952582: refused: UnsupportedSyntaxError: unsupported in-place write: 'v6' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'v6' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_f8gpwqt6/sgfuzz_ecd9eb5f9bff62d1.py", line 27, column 9
#     v9 *= np.tanh((helper0(d0=np.sum(b14), c0=y, a0=np.mean(y)) + (x[-2] + np.mean(x))))
#     ^
# hint: take a copy where 'v6' is made: v6 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    v6 = (s * (s * s))
    l7 = []
    l7.append(np.tanh(s))
    for i8 in range(4):
        l7.append(v6 * 1.0)
    v9 = np.tanh(0.1 * np.sum(np.stack(l7), axis=0))
    if y[0] > 0.64:
        for i10 in range(k):
            b11 = x.copy()
        if (np.mean(y) + np.mean(y)) > -0.66 or helper0(-0.84, x, y[0]) > 0.62:
            v6 -= 0.5 * (v6 - np.tanh(np.tanh((helper0(d0=x[-1], c0=y, a0=0.16) - np.sum(y)))))
            v12 = x * 1.0
            v13 = ((np.sum(y) * v6) / (2.0 + np.sin((y / (2.0 + np.sin(v12))))))
    else:
        v6, v9 = v9, v6
    v6, v9 = v9, v6
    b14 = np.zeros(3)
    if v6 > -0.35:
        if x[0] > 0.35:
            v6 *= np.tanh(np.where(np.sum(b14) > 0, np.sum(b14), 0.5 * np.sum(b14)))
            v6 -= 0.5 * (v6 - np.tanh(((s + s) - np.where(x[2] > 0, x[2], 0.5 * x[2]))))
    else:
        v9 *= np.tanh((helper0(d0=np.sum(b14), c0=y, a0=np.mean(y)) + (x[-2] + np.mean(x))))
    if y[0] > 0.49:
        if np.mean(x) < 0.25:
            v15 = np.mean(y)
            v15 += 0.5 * (np.sin(((np.sum(b14) * v6) / (2.0 + np.sin(helper0(v6, y, np.mean(y)))))) - v15)
    b16 = np.zeros(3)
    return -0.66 * v6


def helper0(a0, c0, d0=-0.02):
    v1 = c0 * 1.0
    v2 = v1 * 1.0
    l3 = []
    l3.append((c0[-1] / (2.0 + np.sin(a0))))
    for i4 in range(4):
        l3.append((d0 + d0))
    v5 = np.tanh(0.1 * sum(l3))
    return 0.65 * v5 + 0.87 * v5 + -0.22 * v5
