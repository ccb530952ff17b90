# seed 951249: refused: UnsupportedSyntaxError: unsupported in-place write: 'v7' may share memory with 'v4' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'v7' may share memory with 'v4' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_f8gpwqt6/sgfuzz_498c83a28158af31.py", line 28, column 13
#     v4 -= 0.5 * (v4 - np.tanh((helper0(c0=v4[-1], a0=x) / (2.0 + np.sin(np.arctan(b12))))))
#     ^
# hint: take a copy where 'v7' is made: v7 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    v3 = (s + np.sqrt(1.0 + np.square(-1.05)))
    v4 = np.sin(x)
    l5 = []
    l5.append(helper1(x, x))
    for i6 in range(4):
        l5.append(v4 * 1.0)
    v7 = np.tanh(0.1 * sum(l5))
    if x[0] < -0.09:
        if np.mean(v4) < -0.01:
            return 0.72 * np.sum(v7)
    else:
        if np.sum(v7) < -0.07:
            v8 = v7 * 1.0
            b9 = np.zeros(4)
            v8 -= 0.5 * (v8 - np.tanh(helper0(v4, (v3 * s))))
        else:
            v4, v7 = v7, v4
        if np.sum(y) > 0.55:
            b10 = y.copy()
            b11 = np.zeros(4)
            v7 = 0.5 * v7 + 0.5 * np.tanh((1.95 / (2.0 + np.sin((y[-1] / (2.0 + np.sin(b11[-1])))))))
        else:
            b12 = np.zeros(4)
            v4 -= 0.5 * (v4 - np.tanh((helper0(c0=v4[-1], a0=x) / (2.0 + np.sin(np.arctan(b12))))))
            b12[3] = np.tanh(((s - v3) + (1.98 / (2.0 + np.sin(s)))))
        l13 = []
        l13.append(1.77)
        for i14 in range(4):
            l13.append(v7[i14 % 4])
        v15 = np.tanh(0.1 * sum(l13))
    b16 = np.zeros(4)
    return -0.62 * np.sum(v7) + 0.81 * np.sum(v4) + 0.86 * np.sum(b16)


def helper1(a1, c1):
    j2 = 0
    while j2 < 0 and (c1[1] < -0.84):
        j2 += 1
        if np.sin((j2 * 0.25)) < -0.58:
            break
        if np.mean(a1) > 0.7:
            return 0.81 * a1
    return -0.28 * a1 + -0.15 * a1 + 0.52 * a1


def helper0(a0, c0):
    b1 = np.zeros(4)
    return 0.38 * c0
