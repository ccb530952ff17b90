"""Small models with containers and helper calls: dict parameters, layer lists, residual blocks."""

import numpy as np

from . import case, inputs, listof, normal, params, tupleof, uniform


@case(inputs(params(W1=normal(3, 5, scale=0.5), b1=normal(5), W2=normal(5, 2, scale=0.5), b2=normal(2)),
             normal(6, 3), normal(6, 2)), wrt=(0, 1))
def mlp_dict(p, x, y):
    h = np.tanh(x @ p["W1"] + p["b1"])
    out = h @ p["W2"] + p["b2"]
    return np.mean((out - y) ** 2)


def _layers(rng):
    return [{"W": rng.normal(size=(4, 4)) * 0.5, "b": rng.normal(size=4) * 0.1} for _ in range(3)]


@case(inputs(_layers, normal(5, 4)), wrt=(0, 1))
def residual_net(layers, x):
    h = x
    for layer in layers:
        h = h + dense_tanh(h, layer["W"], layer["b"])
    return np.sum(layer_norm(h) ** 2 * np.arange(4))


def dense_tanh(x, w, b):
    return np.tanh(x @ w + b)


def layer_norm(x, eps=1e-5):
    mu = np.mean(x, axis=1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


@case(inputs(normal(4), normal(10, 4), lambda rng: (rng.uniform(size=10) > 0.5).astype(float)), wrt=0)
def logistic_regression(w, X, y):
    loss = 0.0
    for i in range(X.shape[0]):
        z = np.sum(X[i] * w)
        if z >= 0:
            loss = loss + np.log1p(np.exp(-z)) + (1.0 - y[i]) * z
        else:
            loss = loss + np.log1p(np.exp(z)) - y[i] * z
    return loss / X.shape[0] + 0.01 * np.sum(w * w)


@case(inputs(normal(3, 4), normal(8, 3), lambda rng: rng.integers(0, 4, size=8)), wrt=0)
def softmax_regression(W, X, labels):
    logits = X @ W
    total = 0.0
    for i in range(X.shape[0]):
        total = total + log_softmax_at(logits[i], labels[i])
    return -total


def log_softmax_at(z, k):
    m = np.max(z)
    return z[k] - m - np.log(np.sum(np.exp(z - m)))


@case(inputs(params(w=normal(3), b=normal(1)), normal(8, 3), normal(8), 5, 0.1), wrt=0)
def unrolled_sgd(p, X, y, steps, lr):
    w = p["w"]
    b = p["b"]
    for t in range(steps):
        pred = X @ w + b
        r = pred - y
        w = w - lr * (X.T @ r) / X.shape[0]
        b = b - lr * np.mean(r)
    return np.mean((X @ w + b - y) ** 2)


@case(inputs(normal(12), normal(3, scale=0.5), normal(3, scale=0.5)), wrt=(0, 1, 2))
def conv1d_two_layers(x, k1, k2):
    h = conv_valid(x, k1)
    h = np.tanh(h)
    h = conv_valid(h, k2)
    return np.sum(h * h)


def conv_valid(x, k):
    n = x.shape[0] - k.shape[0] + 1
    out = np.zeros(n)
    for i in range(n):
        out[i] = np.sum(x[i:i + k.shape[0]] * k)
    return out


@case(inputs(tupleof(normal(3, 3, scale=0.5), normal(3)), normal(4, 3)), wrt=(0, 1))
def tuple_params(p, x):
    w, b = p
    h = x
    for i in range(2):
        h = np.tanh(h @ w + b)
    return np.sum(h)


@case(inputs(listof(3, normal(2, 2, scale=0.7)), normal(2)), wrt=(0, 1))
def list_params_chain(ws, x):
    outs = []
    h = x
    for w in ws:
        h = np.sin(w @ h)
        outs.append(np.sum(h))
    return sum(outs) + np.sum(np.stack(outs) ** 2)


@case(inputs(normal(5, 2), uniform(0.3, 1.0, 3), normal(3, 2), uniform(0.5, 1.5, 3)), wrt=(0, 1, 2, 3))
def gaussian_mixture_nll(x, weights, means, scales):
    nll = 0.0
    for i in range(x.shape[0]):
        lik = 0.0
        for k in range(means.shape[0]):
            d = x[i] - means[k]
            lik = lik + weights[k] * np.exp(-0.5 * np.sum(d * d) / scales[k] ** 2) / scales[k] ** 2
        nll = nll - np.log(lik / np.sum(weights))
    return nll


@case(inputs(normal(6, 4), normal(4), uniform(0.5, 1.5, 4)), wrt=(0, 1, 2))
def batch_norm_then_relu6(x, beta, gamma):
    mu = np.mean(x, axis=0)
    var = np.var(x, axis=0)
    y = (x - mu) / np.sqrt(var + 1e-5) * gamma + beta
    return np.sum(np.tanh(y) * x)


@case(inputs(normal(4, 3), normal(3, 3, scale=0.4), normal(3, 3, scale=0.4), 2), wrt=(0, 1, 2))
def message_passing(h, w_self, w_nbr, rounds):
    n = h.shape[0]
    for r in range(rounds):
        new = np.zeros(h.shape)
        for i in range(n):
            agg = np.zeros(h.shape[1])
            for j in range(n):
                if j != i and (i + j) % 2 == 1:
                    agg = agg + h[j]
            new[i] = np.tanh(h[i] @ w_self + agg @ w_nbr)
        h = new
    return np.sum(h ** 2)


@case(inputs(normal(3), normal(3), 0.5), wrt=(0, 1))
def helper_with_keywords(a, b, t):
    return blend(a, b, t=t) + blend(b, a) + blend(t=0.2, a=a * 2.0, b=b)


def blend(a, b, t=0.5, sharp=2.0):
    return np.sum(np.tanh(sharp * ((1.0 - t) * a + t * b)))
