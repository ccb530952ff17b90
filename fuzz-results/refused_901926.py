# seed 901926: refused: UnsupportedSyntaxError: unsupported in-place write: 'v10' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it
# unsupported in-place write: 'v10' may share memory with 'v9' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_13c7af509dd56bab.py", line 32, column 13
#     v9 *= np.tanh((j14 * 0.25))
#     ^
# hint: take a copy where 'v10' is made: v10 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    l6 = []
    l6.append(helper0(d0=y[-1], c0=np.mean(y), a0=y))
    for i7 in range(1):
        v8 = np.tanh((np.arctan(x[i7 % 3]) - np.sum(x)))
        l6.append(y * 1.0)
    v9 = np.tanh(0.1 * np.sum(np.stack(l6), axis=0))
    v10 = np.cos((0.29 * y))
    v10 /= 1.0 + np.square(np.mean(y))
    b11 = x.copy()
    v12 = (-s)
    if np.sum(v10) > 0.36:
        v9, v10 = v10, v9
    else:
        v12 /= 1.0 + np.square(s)
        v13 = (v12 * 0.93)
    j14 = 0
    while j14 < 4:
        j14 += 1
        if np.sum(b11) < 0.22 or v12 > -0.85:
            v15 = ((np.sum(x) / (2.0 + np.sin(s))) + (v12 / (2.0 + np.sin(s))))
        else:
            v16 = np.sum(v10)
            b11[1] *= np.cos(-0.87)
        if ((j14 * 0.25) * v12) < -0.14:
            v17 = ((-b11[j14 % 3]) - v12)
        else:
            v18 = helper1(v10, 1.84)
            v9 *= np.tanh((j14 * 0.25))
    b11[1] = np.tanh(((v12 / (2.0 + np.sin(v12))) / (2.0 + np.sin(np.mean(x)))))
    return -0.57 * np.sum(v9) + 0.16 * np.sum(b11) + 0.38 * np.sum(x)


def helper1(a1, c1, d1=0.93):
    if np.sum(a1) > -0.23:
        return -0.71 * d1 + -0.58 * d1 + 0.5 * a1
    return -0.45 * a1


def helper0(a0, c0, d0=0.63):
    for i1 in a0:
        if (-1.83 / (2.0 + np.sin(c0))) < 0.61:
            v2 = np.mean((a0 + a0))
        else:
            b3 = np.zeros(3)
        b4 = np.zeros(3)
        if a0[0] > -0.57:
            break
    v5 = np.exp(np.tanh(np.sum(a0)))
    return -0.13 * v5 + -0.52 * c0 + -0.61 * a0
