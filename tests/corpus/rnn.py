"""Recurrent networks: loops over time steps, states carried and stored, lengths from the data."""

import numpy as np

from . import case, inputs, listof, normal, orthogonal_scaled, params, uniform


@case(inputs(normal(6, 3), normal(3, 4, scale=0.5), orthogonal_scaled(4, 0.8), normal(4)), wrt=(0, 1, 2, 3))
def elman_last_state(xs, wx, wh, v):
    h = np.zeros(wh.shape[0])
    for x in xs:
        h = np.tanh(x @ wx + h @ wh)
    return np.sum(h * v)


@case(inputs(normal(5, 3), normal(3, 4, scale=0.5), orthogonal_scaled(4, 0.9), normal(5, 4)), wrt=(0, 1, 2))
def elman_all_states(xs, wx, wh, targets):
    t = xs.shape[0]
    hs = np.zeros((t, wh.shape[0]))
    h = np.zeros(wh.shape[0])
    for i in range(t):
        h = np.tanh(xs[i] @ wx + h @ wh)
        hs[i] = h
    d = hs - targets
    return 0.5 * np.sum(d * d) / t


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@case(inputs(normal(4, 3), params(wz=normal(7, 3, scale=0.5), wr=normal(7, 3, scale=0.5),
                                  wh=normal(7, 3, scale=0.5), bz=normal(3, scale=0.1))), wrt=(0, 1))
def gru(xs, p):
    h = np.zeros(3)
    for x in xs:
        xh = np.concatenate([x, h, np.ones(1)])
        z = sigmoid(xh @ p["wz"] + p["bz"])
        r = sigmoid(xh @ p["wr"])
        xrh = np.concatenate([x, r * h, np.ones(1)])
        cand = np.tanh(xrh @ p["wh"])
        h = (1.0 - z) * h + z * cand
    return np.sum(h ** 2)


@case(inputs(normal(5, 2), normal(2 + 3, 12, scale=0.4), normal(12, scale=0.1)), wrt=(0, 1, 2))
def lstm(xs, w, b):
    n = 3
    h = np.zeros(n)
    c = np.zeros(n)
    for x in xs:
        gates = np.concatenate([x, h]) @ w + b
        i = sigmoid(gates[0:n])
        f = sigmoid(gates[n:2 * n] + 1.0)
        o = sigmoid(gates[2 * n:3 * n])
        g = np.tanh(gates[3 * n:])
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.sum(h) + 0.1 * np.sum(c * c)


@case(inputs(normal(6, 2), normal(2, 3, scale=0.6), normal(2, 3, scale=0.6), normal(6)), wrt=(0, 1, 2))
def bidirectional(xs, wf, wb, v):
    t = xs.shape[0]
    hf = np.zeros(3)
    hb = np.zeros(3)
    fwd = np.zeros((t, 3))
    bwd = np.zeros((t, 3))
    for i in range(t):
        hf = np.tanh(xs[i] @ wf + 0.5 * hf)
        fwd[i] = hf
    for i in range(t - 1, -1, -1):
        hb = np.tanh(xs[i] @ wb + 0.5 * hb)
        bwd[i] = hb
    return np.sum((fwd * bwd).sum(axis=1) * v)


@case(inputs(normal(7, 3), uniform(0.2, 0.9, 3), normal(3)), wrt=(0, 1, 2))
def leaky_integrator(xs, alpha, w):
    h = np.zeros(3)
    total = 0.0
    for x in xs:
        h = (1.0 - alpha) * h + alpha * np.tanh(x + w * h)
        total = total + np.sum(h * h)
    return total


@case(inputs(normal(8, 2), normal(2, 3), orthogonal_scaled(3, 0.7), 5), wrt=(0, 1, 2))
def rnn_variable_length(xs, wx, wh, length):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        if t >= length:
            break
        h = np.tanh(xs[t] @ wx + h @ wh)
    return np.sum(np.sin(h))


@case(inputs(normal(6), normal(4, scale=0.5), normal(4, scale=0.5), normal(4, scale=0.5)), wrt=(0, 1, 2, 3))
def teacher_forcing(seq, w_in, w_rec, w_out):
    h = np.zeros(4)
    loss = 0.0
    for t in range(seq.shape[0] - 1):
        h = np.tanh(w_in * seq[t] + w_rec * h)
        pred = np.sum(w_out * h)
        err = pred - seq[t + 1]
        loss = loss + err * err
    return loss


@case(inputs(normal(5, 3), listof(3, orthogonal_scaled(3, 0.8)), normal(3)), wrt=(0, 1, 2))
def stacked_rnn(xs, layers, v):
    seq = xs
    for w in layers:
        h = np.zeros(3)
        out = np.zeros(seq.shape)
        for t in range(seq.shape[0]):
            h = np.tanh(seq[t] @ w + 0.5 * h)
            out[t] = h
        seq = out + seq
    return np.sum(seq[-1] * v)


@case(inputs(normal(6, 3), normal(3, 3, scale=0.5), normal(3)), wrt=(0, 1, 2))
def rnn_attention_pool(xs, w, q):
    t = xs.shape[0]
    hs = []
    h = np.zeros(3)
    for i in range(t):
        h = np.tanh(xs[i] @ w + h)
        hs.append(h)
    H = np.stack(hs)
    scores = H @ q
    e = np.exp(scores - np.max(scores))
    a = e / np.sum(e)
    return np.sum(a @ H)


@case(inputs(normal(3), normal(3, 3, scale=0.5), normal(3, 3, scale=0.5), 4), wrt=(0, 1, 2))
def decoder_feedback(h0, w_hh, w_yh, steps):
    h = h0
    y = np.zeros(3)
    score = 0.0
    for t in range(steps):
        h = np.tanh(h @ w_hh + y @ w_yh)
        y = np.exp(h) / np.sum(np.exp(h))
        score = score + np.log(y[t % 3])
    return score


@case(inputs(normal(6, 2), normal(2, 3), uniform(0.5, 1.5, 6)), wrt=(0, 1, 2))
def rnn_gated_skip(xs, w, gate):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        cand = np.tanh(xs[t] @ w + h)
        if gate[t] > 1.0:
            h = cand
        else:
            h = gate[t] * cand + (1.0 - gate[t]) * h
    return np.sum(h * h)
