# seed 902062: refused: UnsupportedSyntaxError: unsupported in-place write: 'i17' may share memory with 'b16' (a view, another name for it, or a list or tuple holding i
# unsupported in-place write: 'i17' may share memory with 'b16' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_76e5fecf02840edc.py", line 29, column 13
#     b16[1] = np.tanh(helper0((i17 - y[-1]), x, np.mean(x)))
#     ^
# hint: take a copy where 'i17' is made: i17 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    l4 = []
    l4.append((x - x))
    for i5 in range(4):
        l4.append(y * 1.0)
    v6 = np.tanh(0.1 * np.sum(np.stack(l4), axis=0))
    if v6[3] < 0.6:
        v7 = np.sqrt(1.0 + np.square(x))
        for i8, e9 in enumerate(x):
            b10 = np.zeros(4)
            b10[1:2] += 0.5 * (np.tanh(y[1:2]) - b10[1:2])
            v11 = helper0(d0=np.mean(b10), c0=x, a0=np.cos((i8 * 0.25)))
            if np.mean(x) < -0.52:
                break
        v12 = y * 1.0
    else:
        v13 = y * 1.0
        v14 = ((-v13) * y)
        v15 = (s * (0.12 / (2.0 + np.sin(s))))
    b16 = np.zeros(4)
    for i17 in b16:
        j18 = 0
        while j18 < 1:
            j18 += 1
            v6 /= 1.0 + np.square((y * np.where(y > 0, y, 0.5 * y)))
            b16[1] = np.tanh(helper0((i17 - y[-1]), x, np.mean(x)))
            v6 *= np.tanh(((b16 / (2.0 + np.sin(y))) - x))
        v19 = helper0(d0=(y[2] - i17), c0=(v6 / (2.0 + np.sin(b16))), a0=np.mean(y))
        if y[1] < -0.51:
            continue
    v6 -= 0.5 * (v6 - np.tanh(np.tanh((np.sum(x) + s))))
    for i20 in range(2):
        v6 -= 0.5 * (v6 - np.tanh(0.78))
        v6 = v6 * np.cos(np.where(v6 > 0, v6, 0.5 * v6))
        if (i20 * 0.25) > 0.21:
            break
    b16[1:2] += 0.5 * (np.tanh(y[1:2]) - b16[1:2])
    return -0.56 * np.sum(b16) + -0.46 * np.sum(b16) + -0.96 * np.sum(x)


def helper0(a0, c0, d0=-0.46):
    j1 = 0
    while j1 < 0 and (c0[1] > -0.85):
        j1 += 1
        if c0[3] > 0.06 and (0.51 * a0) > -0.88:
            break
        v2 = c0 * 1.0
    v3 = np.tanh((c0 * c0))
    return -0.19 * np.sum(c0) + -0.05 * a0
