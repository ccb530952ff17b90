# seed 901957: refused: UnsupportedSyntaxError: unsupported in-place write: 'e28' may share memory with 'b17' (a view, another name for it, or a list or tuple holding i
# unsupported in-place write: 'e28' may share memory with 'b17' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_u4t6qusx/sgfuzz_3784e14945acb344.py", line 32, column 13
#     b17[0] = np.tanh(np.tanh((np.sum(y) + (v18 + v29))))
#     ^
# hint: take a copy where 'e28' is made: e28 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    for i15 in x:
        v16 = ((-0.26 + s) + np.sin(s))
        v16 -= 0.5 * (v16 - np.tanh((np.cos(i15) + v16)))
    b17 = y.copy()
    v18 = helper1(d1=np.sqrt(1.0 + np.square(np.mean(y))), c1=helper1(x, y[-2]), a1=y)
    if (v18 + s) < -0.22:
        v19 = np.tanh(b17)
    else:
        for i20 in range(k):
            b21 = np.zeros(3)
    if np.log(1.0 + np.square(0.53)) < -0.07:
        b17[0] = np.tanh(np.sum(np.log(1.0 + np.square(x))))
        b17[2] = np.tanh((s * np.sum(x)))
        b22 = np.zeros(3)
    else:
        v23 = (s / (2.0 + np.sin(np.sum(b17))))
        if np.mean(y) > 0.8:
            b24 = np.zeros(3)
            v23 = np.tanh(((b17[-1] * s) * (b17[-3] / (2.0 + np.sin(v23)))))
            b17[1] = np.tanh(np.tanh(np.sum(b17)))
        v25 = np.log(1.0 + np.square((s / (2.0 + np.sin(b17)))))
    v26 = helper1(d1=(v18 * x[0]), c1=(-0.4 * y[-3]), a1=(y * b17))
    for i27, e28 in enumerate(b17):
        if x[0] > 0.04:
            break
        if np.sum(y) > -0.41:
            v29 = (np.sin(-0.36) / (2.0 + np.sin(((i27 * 0.25) - v18))))
            b17[0] = np.tanh(np.tanh((np.sum(y) + (v18 + v29))))
            v30 = ((x[-3] / (2.0 + np.sin(e28))) - (s / (2.0 + np.sin(s))))
        b17[1:3] += 0.5 * (np.tanh(y[1:3]) - b17[1:3])
        for i31 in range(k):
            v32 = np.mean(x)
            v32 = np.tanh((np.mean(b17) * np.mean(x)))
    v33 = ((s - v26) / (2.0 + np.sin((b17[0] + -0.49))))
    return 0.69 * v18


def helper1(a1, c1, d1=-0.1):
    v11 = a1 * 1.0
    if np.sum(v11) < -0.09:
        for i12 in range(2, 5):
            if d1 > -0.98:
                continue
            v13 = v11 * 1.0
    else:
        b14 = np.zeros(3)
    return 0.31 * c1 + -0.53 * d1


def helper0(a0, c0, d0=-0.53):
    if a0[0] > -0.79:
        j1 = 0
        while j1 < 4:
            j1 += 1
            v2 = ((d0 / (2.0 + np.sin(c0))) * np.tanh(np.sum(a0)))
    if np.sum(a0) > -0.14 or c0 > 0.29:
        b3 = a0.copy()
    if -1.05 > 0.97:
        l4 = []
        l4.append(c0 * 1.0)
        for i5 in range(1):
            l4.append(d0 * 1.0)
        v6 = np.tanh(0.1 * sum(l4))
        b7 = np.zeros(3)
        for i8, e9 in enumerate(a0):
            if e9 > 0.9:
                continue
            b10 = b7.copy()
    return 0.6 * d0 + -0.66 * np.sum(a0)
