# seed 952231: refused: UnsupportedSyntaxError: unsupported in-place write: 'v28' may share memory with 'v24' (a view, another name for it, or a list or tuple holding i
# unsupported in-place write: 'v28' may share memory with 'v24' (a view, another name for it, or a list or tuple holding it) and is read after this write, so it would change too, unseen by the gradient (in f)
#   File "/tmp/sourcegrad_fuzz_f8gpwqt6/sgfuzz_0f1573533f22a242.py", line 47, column 9
#     v24 *= np.tanh(v24)
#     ^
# hint: take a copy where 'v28' is made: v28 = np.copy(...)

import numpy as np


def f(x, y, s, k):
    if 1.63 > -0.86:
        v10 = (x + y)
    l11 = []
    l11.append((y[1] / (2.0 + np.sin(np.mean(x)))))
    for i12 in range(0):
        v13 = np.sum(y)
        l11.append(np.tanh(helper1(x, (i12 * 0.25))))
    v14 = np.tanh(0.1 * sum(l11))
    b15 = np.zeros(3)
    for i16 in reversed(range(2)):
        l17 = []
        l17.append(b15 * 1.0)
        for i18 in range(1):
            l17.append(np.sqrt(1.0 + np.square((x / (2.0 + np.sin(x))))))
        v19 = np.tanh(0.1 * np.sum(np.stack(l17), axis=0))
        v20 = np.tanh(helper1(c1=np.tanh(helper1(b15, (i16 * 0.25))), a1=(v19 + b15)))
        j21 = 0
        while j21 < 2 and ((np.sum(x) - s) > 0.91):
            j21 += 1
            b15[1] *= np.cos(np.sin((v14 * (j21 * 0.25))))
            v22 = ((i16 * 0.25) + x)
            v23 = np.mean(x)
            if np.tanh(-1.54) < -0.85:
                continue
    v24 = b15 * 1.0
    l25 = []
    l25.append(b15 * 1.0)
    for i26 in range(0):
        v27 = np.tanh(helper1((-y), s))
        l25.append(y * 1.0)
    v28 = np.tanh(0.1 * np.sum(np.stack(l25), axis=0))
    if np.sum(v28) > 0.54:
        v29 = np.arctan(v24)
        if (0.22 * x[-3]) > 0.85:
            if np.sum(v29) > 0.68:
                return 0.1 * v14
            v24, v28 = v28, v24
            b30 = np.zeros(3)
        else:
            v29 += 0.5 * (np.sin(s) - v29)
            b15[0] = np.tanh(1.18)
            b15[0] = np.tanh(np.arctan(-1.29))
        v24 *= np.tanh(v24)
    else:
        l31 = []
        l31.append((-1.02 + x))
        for i32 in range(4):
            l31.append(v24 * 1.0)
        v33 = np.tanh(0.1 * np.sum(np.stack(l31), axis=0))
    j34 = 0
    while j34 < 2:
        j34 += 1
        b15[2:3] += 0.5 * (np.tanh(x[2:3]) - b15[2:3])
        if np.sum(v28) < -0.31:
            v35 = ((v28[j34 % 3] / (2.0 + np.sin(v14))) + np.where(-1.05 > 0, -1.05, 0.5 * -1.05))
            b15[0] += 0.5 * (np.tanh(np.mean(x)) - b15[0])
            v36 = ((-0.17 / (2.0 + np.sin(np.sum(v24)))) - np.arctan((j34 * 0.25)))
        j37 = 0
        while j37 < 3:
            j37 += 1
            v38 = -1.12
        if helper0(d0=v14, c0=v14, a0=x) < 0.62:
            continue
    return -0.86 * np.sum(v24)


def helper1(a1, c1):
    v9 = a1 * 1.0
    v9 -= 0.5 * (v9 - np.tanh(helper0(a1, np.tanh(helper0(d0=c1, c0=0.22, a0=a1)))))
    return -0.9 * c1 + -0.89 * np.sum(a1)


def helper0(a0, c0, d0=0.29):
    for i1, e2 in enumerate(a0):
        if ((i1 * 0.25) + np.mean(a0)) > 0.62:
            break
        if (i1 * 0.25) > 0.26:
            v3 = (a0[-2] * (i1 * 0.25))
            b4 = np.zeros(3)
        else:
            v5 = np.cos(np.tanh(a0))
            v6 = v5 * 1.0
            b7 = np.zeros(3)
    v8 = a0 * 1.0
    v8 *= np.tanh(((c0 + 1.51) / (2.0 + np.sin(np.sin(d0)))))
    return 0.54 * np.sum(a0)
