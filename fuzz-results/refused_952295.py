# seed 952295: refused: UnsupportedSyntaxError: unsupported in-place write: 'v12' is updated in place inside a loop over it: the loop would read the changed array, unse
# unsupported in-place write: 'v12' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_f8gpwqt6/sgfuzz_cc9ddf60761adf9d.py", line 21, column 13
#     v12 += 0.5 * (np.sin(np.tanh(helper0(c0=np.tanh(v14), a0=y))) - v12)
#     ^
# hint: loop over a copy (for ... in np.copy(v12)), or write v12 = v12 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    j7 = 0
    while j7 < 3 and (y[3] < 0.24):
        j7 += 1
        v8 = (s + (s / (2.0 + np.sin(np.mean(y)))))
        v9 = np.sin(np.cos(np.mean(y)))
        v10 = (np.mean(x) + x[3])
    v11 = np.mean(x)
    v11 = 0.5 * v11 + 0.5 * np.tanh(np.tanh(((np.sum(y) / (2.0 + np.sin(s))) + (s * np.sum(x)))))
    v11 *= np.tanh(np.tanh(np.sum((np.mean(y) + x))))
    if np.sum(y) > -0.55:
        if (s * s) < 0.61:
            return 0.89 * s
        v12 = (x[-3] - x)
        for i13 in v12:
            v14 = helper0(np.tanh(y), np.tanh(helper0(y, v12)))
            v11 /= 1.0 + np.square(np.mean(x))
            v12 += 0.5 * (np.sin(np.tanh(helper0(c0=np.tanh(v14), a0=y))) - v12)
            if np.sum(x) < 0.26 and np.mean(x) > -0.7:
                continue
    else:
        if np.sum(y) > -0.27 and np.mean(y) > -0.02:
            v11 = 0.5 * v11 + 0.5 * np.tanh(s)
            b15 = x.copy()
            b15[2] *= np.cos(((1.43 + -0.87) / (2.0 + np.sin((y[-3] + np.mean(x))))))
    v11 = np.tanh(x[3])
    b16 = np.zeros(4)
    v11 = np.tanh(np.tanh(np.sum(helper0(c0=b16, a0=x))))
    return -0.26 * v11 + -0.9 * v11 + -0.88 * v11


def helper0(a0, c0):
    v1 = a0[-3] * 1.0
    v2 = ((-v1) / (2.0 + np.sin((-0.8 * a0[-3]))))
    l3 = []
    l3.append(v1 * 1.0)
    for i4 in range(4):
        v5 = (np.tanh(np.sum(a0)) * c0)
        l3.append((np.tanh((np.mean(c0) * np.sum(v5))) + (i4 * 0.25)))
    v6 = np.tanh(0.1 * sum(l3))
    return -0.91 * v2 + 0.5 * c0
