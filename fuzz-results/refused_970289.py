# seed 970289: refused: UnsupportedSyntaxError: unsupported in-place write: 'e19' may share memory with 'b15' (a view, another name for it, or a list or tuple holding i
# unsupported in-place write: 'e19' may share memory with 'b15' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_ucll60ku/sgfuzz_ff88d0675a6af7d9.py", line 21, column 13
#     b15[0] += 0.5 * (np.tanh(v20) - b15[0])
#     ^
# hint: take a copy where 'e19' is made: e19 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    j13 = 0
    while j13 < 0:
        j13 += 1
        v14 = helper0(y, x)
        if np.sum(x) > 0.93:
            continue
    b15 = np.zeros(5)
    for i16 in y:
        if np.tanh(np.sum(x)) < 0.47:
            continue
        v17 = (b15 / (2.0 + np.sin(x)))
    for i18, e19 in enumerate(b15):
        v20 = (-1.95 * b15[i18 % 5])
        for i21 in y:
            if np.sum(b15) > -0.8 or e19 > 0.05:
                continue
            b15[0] += 0.5 * (np.tanh(v20) - b15[0])
            b15[2] *= np.cos((np.mean(b15) + np.log(1.0 + np.square(1.21))))
        b15[2] += 0.5 * (np.tanh(np.sum(y)) - b15[2])
        if b15[1] > -0.09 or np.tanh((np.sum(x) - (i18 * 0.25))) > 0.07:
            break
    v22 = np.tanh(np.sum((x - x)))
    v22 *= np.tanh((--0.41))
    return -0.25 * np.sum(y)


def helper1(a1, c1):
    l9 = []
    l9.append(np.cos(1.69))
    for i10 in range(2):
        v11 = (i10 * 0.25)
        l9.append((-0.02 * np.sin(v11)))
    v12 = np.tanh(0.1 * sum(l9))
    return 0.15 * v12 + 0.21 * c1 + -0.33 * a1


def helper0(a0, c0, d0=-0.88):
    v1 = (np.mean(c0) / (2.0 + np.sin(a0)))
    j2 = 0
    while j2 < 2 and (np.sum(a0) < -0.38 or np.mean(v1) > 0.28):
        j2 += 1
        v3 = d0 * 1.0
        b4 = v1.copy()
    l5 = []
    l5.append(np.tanh((np.sum(c0) * d0)))
    for i6 in range(1):
        v7 = np.cos((np.sum(a0) * (i6 * 0.25)))
        l5.append(np.tanh(np.sum(a0)))
    v8 = np.tanh(0.1 * sum(l5))
    return 0.18 * v8 + 0.37 * c0
