# seed 970624: refused: UnsupportedSyntaxError: unsupported in-place write: 'e7' may share memory with 'b5' (a view, another name for it, or a list or tuple holding it)
# unsupported in-place write: 'e7' may share memory with 'b5' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_ucll60ku/sgfuzz_027d8441f64519d3.py", line 14, column 13
#     b5[b5 < 0] = 0.0
#     ^
# hint: take a copy where 'e7' is made: e7 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    if np.sum(x) > -0.85:
        if np.sum(y) < -0.47:
            v3 = (s - np.sin(0.55))
    v4 = x * 1.0
    b5 = y.copy()
    for i6, e7 in enumerate(b5):
        if (np.mean(v4) * s) > 0.48:
            break
        if x[1] > 0.13:
            b5[b5 < 0] = 0.0
            v8 = np.sin(y[i6 % 3])
        v9 = ((np.mean(v4) / (2.0 + np.sin(e7))) / (2.0 + np.sin((-1.29))))
        b5[0] *= np.cos(v9)
    return 0.64 * np.sum(y)


def helper0(a0, c0):
    b1 = c0.copy()
    v2 = a0 * 1.0
    return -0.28 * v2 + 0.46 * v2 + 0.5 * b1
