# seed 901650: refused: UnsupportedSyntaxError: unsupported in-place write: 'v12' is updated in place inside a loop over it: the loop would read the changed array, unse
# unsupported in-place write: 'v12' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_f853af8a6dff3aaf.py", line 12, column 13
#     v12 *= np.tanh(y)
#     ^
# hint: loop over a copy (for ... in np.copy(v12)), or write v12 = v12 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    v12 = x * 1.0
    if -1.01 < 0.84:
        return -0.01 * np.sum(v12) + -0.27 * s
    for i13 in v12:
        if np.sum(x) > 0.68:
            break
        if np.sum(v12) > -0.96 and helper0(x, y) > -0.74:
            v12 *= np.tanh(y)
            v14 = ((x[0] * 1.31) * np.mean(x))
        else:
            v15 = ((v12[1] / (2.0 + np.sin(s))) - i13)
            v15 -= 0.5 * (v15 - np.tanh(np.mean(y)))
            b16 = np.zeros(3)
    v17 = np.sin(np.mean(y))
    v18 = (np.mean(v12) / (2.0 + np.sin((x[-2] - y[-3]))))
    l19 = []
    l19.append(np.sum(x))
    for i20 in range(4):
        l19.append((helper1(y, v12) / (2.0 + np.sin(np.sqrt(1.0 + np.square(-1.93))))))
    v21 = np.tanh(0.1 * np.sum(np.stack(l19), axis=0))
    return -0.12 * v18 + 0.41 * v17


def helper1(a1, c1):
    b8 = np.zeros(3)
    if (b8[-3] + 0.59) > 0.45:
        l9 = []
        l9.append((c1 - b8))
        for i10 in range(1):
            l9.append(b8 * 1.0)
        v11 = np.tanh(0.1 * np.sum(np.stack(l9), axis=0))
    b8[2] = np.tanh(np.tanh(np.sum(np.exp(np.tanh(c1)))))
    return -0.89 * np.sum(b8)


def helper0(a0, c0):
    if np.sum(c0) < 0.19:
        j1 = 0
        while j1 < 2 and (np.sum(a0) > 1.0):
            j1 += 1
            v2 = (np.cos((j1 * 0.25)) - ((j1 * 0.25) - a0))
            if (c0[0] + (j1 * 0.25)) > -0.29:
                break
        j3 = 0
        while j3 < 1 and (np.sum(c0) < 0.61):
            j3 += 1
            v4 = (-1.18 * (1.46 * (j3 * 0.25)))
            if a0[2] < 1.0:
                return 0.89 * np.sum(a0) + 0.71 * v4
            if np.sum(c0) > -0.82 or (a0[-1] / (2.0 + np.sin((j3 * 0.25)))) > -0.27:
                break
        v5 = c0 * 1.0
    else:
        v6 = (-0.94 + (1.39 * -0.95))
        b7 = a0.copy()
    if np.tanh((c0[-2] - np.sum(a0))) > -0.2:
        return 0.05 * np.sum(a0)
    return -0.3 * np.sum(c0)
