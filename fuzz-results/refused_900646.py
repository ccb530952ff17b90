# seed 900646: refused: UnsupportedSyntaxError: unsupported in-place write: 'v6' may share memory with 'v3' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'v6' may share memory with 'v3' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_ca586efd5909992d.py", line 42, column 9
#     v3 *= np.tanh(v6)
#     ^
# hint: take a copy where 'v6' is made: v6 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    j1 = 0
    while j1 < 4:
        j1 += 1
        v2 = y[j1 % 5] * 1.0
        if x[2] > -0.46:
            continue
    if np.sum(y) > 0.73:
        return 0.26 * np.sum(x) + -0.69 * s
    v3 = np.tanh((np.sum(x) + x))
    l4 = []
    l4.append((s / (2.0 + np.sin(v3))))
    for i5 in range(0):
        l4.append(x * 1.0)
    v6 = np.tanh(0.1 * np.sum(np.stack(l4), axis=0))
    if y[1] < 0.66:
        b7 = np.zeros(5)
        v8 = np.tanh(np.sum((x * v6)))
    else:
        j9 = 0
        while j9 < 4:
            j9 += 1
            if v6[2] < 0.34 and np.log(1.0 + np.square((j9 * 0.25))) > -0.46:
                break
            v10 = np.arctan(s)
            v10 = v10 * np.cos(-1.03)
            v11 = x * 1.0
        v3 /= 1.0 + np.square(v3)
        v3, v6 = v6, v3
    if v3[2] < 0.58:
        v3 = v3 * np.cos((-(0.18 / (2.0 + np.sin(0.15)))))
        if np.sum(v3) > 0.78:
            v3, v6 = v6, v3
            v12 = ((s + s) / (2.0 + np.sin((0.86 + x[-1]))))
        else:
            v3, v6 = v6, v3
        v6 /= 1.0 + np.square(1.35)
    else:
        v3 *= np.tanh(v6)
        b13 = np.zeros(5)
        v3 = np.tanh(b13)
    if y[0] > -0.11:
        j14 = 0
        while j14 < 1 and (x[2] < -0.13):
            j14 += 1
            if np.sum(v3) < 0.22:
                continue
            v15 = np.cos(np.sqrt(1.0 + np.square(y)))
            b16 = np.zeros(5)
            b16[1] *= np.cos((np.cos(v15[-1]) * np.tanh(s)))
    else:
        v3, v6 = v6, v3
    v6 *= np.tanh(y)
    return -0.72 * s + 0.01 * np.sum(y) + -0.05 * np.sum(v3)
