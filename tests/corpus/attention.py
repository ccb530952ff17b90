"""Attention-like computations: softmax loops, running maxima, masked scores, per-head loops."""

import numpy as np

from . import case, inputs, mask, normal, scalar, uniform


@case(inputs(normal(6)))
def softmax_loop_entropy(z):
    m = z[0]
    for i in range(1, z.shape[0]):
        if z[i] > m:
            m = z[i]
    total = 0.0
    for i in range(z.shape[0]):
        total = total + np.exp(z[i] - m)
    p = np.exp(z - m) / total
    return -np.sum(p * np.log(p))


@case(inputs(normal(7), normal(7)), wrt=(0, 1))
def online_softmax(scores, values):
    m = -1e30
    denom = 0.0
    num = 0.0
    for i in range(scores.shape[0]):
        s = scores[i]
        if s > m:
            scale = np.exp(m - s)
            denom = denom * scale + 1.0
            num = num * scale + values[i]
            m = s
        else:
            w = np.exp(s - m)
            denom = denom + w
            num = num + w * values[i]
    return num / denom


@case(inputs(normal(4, 3), normal(5, 3), normal(5, 2)), wrt=(0, 1, 2))
def dot_product_attention_per_query(q, k, v):
    out = np.zeros((q.shape[0], v.shape[1]))
    scale = 1.0 / np.sqrt(q.shape[1])
    for i in range(q.shape[0]):
        s = k @ q[i] * scale
        e = np.exp(s - np.max(s))
        out[i] = (e / np.sum(e)) @ v
    return np.sum(out * out)


@case(inputs(normal(5, 4), normal(5, 4), normal(5, 4), normal(4, 4, scale=0.5)), wrt=(0, 1, 2, 3))
def causal_attention(q, k, v, wo):
    t = q.shape[0]
    out = np.zeros(q.shape)
    for i in range(t):
        s = np.zeros(i + 1)
        for j in range(i + 1):
            s[j] = np.sum(q[i] * k[j]) / 2.0
        w = np.exp(s - np.max(s))
        w = w / np.sum(w)
        out[i] = w @ v[: i + 1]
    return np.sum(np.tanh(out @ wo))


@case(inputs(normal(4, 6), normal(6, 6, scale=0.4), normal(6, 6, scale=0.4), normal(6, 6, scale=0.4), 2),
      wrt=(0, 1, 2, 3))
def multi_head(x, wq, wk, wv, heads):
    d = x.shape[1] // heads
    q = x @ wq
    k = x @ wk
    v = x @ wv
    total = 0.0
    for h in range(heads):
        lo = h * d
        hi = lo + d
        s = q[:, lo:hi] @ k[:, lo:hi].T / np.sqrt(d)
        s = s - np.max(s, axis=1, keepdims=True)
        a = np.exp(s)
        a = a / np.sum(a, axis=1, keepdims=True)
        total = total + np.sum((a @ v[:, lo:hi]) ** 2)
    return total


@case(inputs(normal(8)))
def logsumexp_loop(z):
    m = np.max(z)
    s = 0.0
    for e in z:
        s = s + np.exp(e - m)
    return m + np.log(s)


@case(inputs(normal(5, 4), lambda rng: rng.integers(0, 4, size=5)))
def cross_entropy_loop(logits, labels):
    loss = 0.0
    for i in range(logits.shape[0]):
        row = logits[i]
        m = np.max(row)
        lse = m + np.log(np.sum(np.exp(row - m)))
        loss = loss + lse - row[labels[i]]
    return loss / logits.shape[0]


@case(inputs(normal(6), uniform(0.5, 2.0), 4), wrt=(0, 1))
def annealed_softmax(z, temp, steps):
    p = np.ones(z.shape[0]) / z.shape[0]
    t = temp
    for k in range(steps):
        logits = (z + np.log(p)) / t
        e = np.exp(logits - np.max(logits))
        p = e / np.sum(e)
        t = t * 0.8
    return np.sum(p * z)


@case(inputs(normal(5, 3), normal(3, 4, scale=0.5), normal(4), normal(3)), wrt=(0, 1, 2, 3))
def additive_attention(keys, w, v, query):
    n = keys.shape[0]
    scores = np.zeros(n)
    for i in range(n):
        scores[i] = np.sum(np.tanh((keys[i] + query) @ w) * v)
    a = np.exp(scores - np.max(scores))
    a = a / np.sum(a)
    ctx = np.zeros(3)
    for i in range(n):
        ctx = ctx + a[i] * keys[i]
    return np.sum(ctx * query)


@case(inputs(normal(6, 6), mask(0.7, 6, 6), normal(6, 3)), wrt=(0, 2))
def masked_scores(s, m, v):
    s2 = s.copy()
    for i in range(s.shape[0]):
        s2[i, i] = s[i, i] + 1.0
    s2[m == 0] = -1e9
    s2 = s2 - np.max(s2, axis=1, keepdims=True)
    e = np.exp(s2)
    a = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(np.sin(a @ v))


@case(inputs(normal(6, 2), normal(2), scalar(0.5, 1.5), 3), wrt=(0, 1, 2))
def slot_attention_iterations(inputs_, slot, sharpness, iters):
    for it in range(iters):
        logits = inputs_ @ slot * sharpness
        e = np.exp(logits - np.max(logits))
        a = e / np.sum(e)
        slot = 0.5 * slot + 0.5 * (a @ inputs_)
    return np.sum(slot ** 2)
