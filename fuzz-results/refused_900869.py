# seed 900869: refused: UnsupportedSyntaxError: unsupported in-place write: 'v9' is updated in place inside a loop over it: the loop would read the changed array, unsee
# unsupported in-place write: 'v9' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_c940fa92e504710c.py", line 29, column 13
#     v9 -= 0.5 * (v9 - np.tanh(v9))
#     ^
# hint: loop over a copy (for ... in np.copy(v9)), or write v9 = v9 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    for i6 in range(0, 3):
        b7 = x.copy()
        v8 = ((-1.73 - np.mean(b7)) * np.mean(y))
    v9 = np.sin(helper0(d0=s, c0=s, a0=y))
    v9 += 0.5 * (np.sin((s + y[-1])) - v9)
    j10 = 0
    while j10 < 1:
        j10 += 1
        if np.sum(v9) > -0.02:
            continue
        v9 *= np.tanh(np.sum(x))
        l11 = []
        l11.append((x[j10 % 2] * x[1]))
        for i12 in range(1):
            l11.append(np.mean(y))
        v13 = np.tanh(0.1 * np.sum(np.stack(l11), axis=0))
        j14 = 0
        while j14 < 4 and (v13 > 0.37):
            j14 += 1
            b15 = np.zeros(2)
            if np.sum(v9) < -0.24:
                break
    for i16 in v9:
        if np.sum(v9) > 0.25:
            v9 -= 0.5 * (v9 - np.tanh(v9))
        else:
            v17 = np.sqrt(1.0 + np.square(helper0(y, s)))
        if y[1] > 0.96:
            continue
    v9 = 0.5 * v9 + 0.5 * np.tanh(np.sum(y))
    for i18 in x:
        if np.sum(v9) > -0.35:
            b19 = x.copy()
            v20 = (s - (x[0] - v9[0]))
            v21 = ((np.mean(v9) / (2.0 + np.sin(s))) / (2.0 + np.sin(np.mean(y))))
        else:
            b22 = np.zeros(2)
            v23 = i18 * 1.0
            v9 -= 0.5 * (v9 - np.tanh(v23))
    return -0.95 * np.sum(y) + 0.71 * np.sum(y)


def helper0(a0, c0, d0=-0.66):
    j1 = 0
    while j1 < 2:
        j1 += 1
        if np.sum(a0) < -0.46:
            continue
        b2 = np.zeros(2)
    l3 = []
    l3.append((a0 + a0))
    for i4 in range(0):
        l3.append(a0 * 1.0)
    v5 = np.tanh(0.1 * sum(l3))
    v5 *= np.tanh(np.mean(np.tanh((a0 * a0))))
    return -0.53 * c0 + -0.49 * v5
