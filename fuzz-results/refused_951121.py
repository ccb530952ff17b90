# seed 951121: refused: UnsupportedSyntaxError: unsupported in-place write: 'v2' is updated in place inside a loop over it: the loop would read the changed array, unsee
# unsupported in-place write: 'v2' is updated in place inside a loop over it: the loop would read the changed array, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_f8gpwqt6/sgfuzz_b1cae32c1c6eb110.py", line 19, column 13
#     v2 += 0.5 * (np.sin(helper0((x / (2.0 + np.sin(y))), x)) - v2)
#     ^
# hint: loop over a copy (for ... in np.copy(v2)), or write v2 = v2 + ... to make a new array

import numpy as np


def f(x, y, s, k):
    v2 = y * 1.0
    l3 = []
    l3.append((0.31 - np.mean(v2)))
    for i4 in range(3):
        v2 += 0.5 * (np.sin(((-s) - (s * (i4 * 0.25)))) - v2)
        l3.append(-0.89)
    v5 = np.tanh(0.1 * sum(l3))
    v5 = 0.5 * v5 + 0.5 * np.tanh(s)
    for i6 in v2:
        v7 = ((np.mean(x) + v2) + v2)
        if i6 > 0.93 or np.sum(v2) > -0.23:
            v8 = helper0((v5 + v2), v2)
        else:
            v9 = np.mean(v2)
            v2 += 0.5 * (np.sin(helper0((x / (2.0 + np.sin(y))), x)) - v2)
            v10 = (y[-2] - np.tanh((v7 + v7)))
        if np.sum(v2) > -0.18:
            break
    v2 /= 1.0 + np.square((np.mean(x) + 1.64))
    if np.sum(v2) > 0.49:
        v2 -= 0.5 * (v2 - np.tanh(x))
        v5 = np.tanh(np.tanh((-x[-1])))
        j11 = 0
        while j11 < 1 and (np.sum(v2) < -0.59):
            j11 += 1
            b12 = np.zeros(4)
            v5 *= np.tanh((helper0(d0=v2[j11 % 4], c0=b12, a0=v2) / (2.0 + np.sin(np.sum(v2)))))
            v5 = np.tanh(((v5 / (2.0 + np.sin(np.sum(b12)))) * np.mean(b12)))
            if s > 0.55:
                continue
    return -0.23 * s + 0.54 * v5 + 0.51 * np.sum(y)


def helper0(a0, c0, d0=0.02):
    b1 = np.zeros(4)
    return -0.26 * d0 + -0.96 * d0 + -0.59 * np.sum(b1)
