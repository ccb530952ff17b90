"""Scans: running maxima and minima with branches, cumulative products and sums, pooling."""

import numpy as np

from . import case, distinct, inputs, normal, uniform


@case(inputs(distinct(8)))
def running_max_branch(x):
    m = x[0]
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
        total = total + m * x[i]
    return total


@case(inputs(distinct(7)))
def running_min_max_spread(x):
    lo = x[0]
    hi = x[0]
    for e in x:
        if e < lo:
            lo = e
        elif e > hi:
            hi = e
    return (hi - lo) * np.sum(x * x)


@case(inputs(uniform(0.5, 1.5, 6)))
def cumulative_product_loop(x):
    n = x.shape[0]
    c = np.zeros(n)
    p = 1.0
    for i in range(n):
        p = p * x[i]
        c[i] = p
    return np.sum(np.log(c))


@case(inputs(normal(6)))
def prefix_product_except_self(x):
    n = x.shape[0]
    left = np.ones(n)
    right = np.ones(n)
    for i in range(1, n):
        left[i] = left[i - 1] * x[i - 1]
    for i in range(n - 2, -1, -1):
        right[i] = right[i + 1] * x[i + 1]
    return np.sum(left * right * np.sin(x))


@case(inputs(normal(8), 0.7), wrt=(0, 1))
def exponential_moving_average(x, beta):
    m = x[0]
    total = 0.0
    for i in range(1, x.shape[0]):
        m = beta * m + (1.0 - beta) * x[i]
        total = total + m * m
    return total


@case(inputs(distinct(12), 3))
def max_pool_1d_loop(x, width):
    n = x.shape[0] // width
    out = np.zeros(n)
    for i in range(n):
        best = x[i * width]
        for j in range(1, width):
            if x[i * width + j] > best:
                best = x[i * width + j]
        out[i] = best
    return np.sum(out * np.arange(1, n + 1))


@case(inputs(normal(9), 0.9), wrt=(0, 1))
def discounted_returns(rewards, gamma):
    n = rewards.shape[0]
    g = 0.0
    returns = np.zeros(n)
    for t in range(n - 1, -1, -1):
        g = rewards[t] + gamma * g
        returns[t] = g
    return np.sum(returns * returns) / n


@case(inputs(normal(10), 3))
def sliding_window_sums(x, w):
    n = x.shape[0] - w + 1
    s = np.sum(x[:w])
    out = np.zeros(n)
    out[0] = s
    for i in range(1, n):
        s = s + x[i + w - 1] - x[i - 1]
        out[i] = s
    return np.sum(np.tanh(out))


@case(inputs(distinct(9)))
def cumulative_max_maximum(x):
    m = x[0]
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        m = np.maximum(m, x[i])
        out[i] = m
    return np.sum(out * x)


@case(inputs(normal(8)))
def cumsum_then_diff(x):
    c = np.cumsum(x)
    d = np.zeros(x.shape[0] - 1)
    for i in range(d.shape[0]):
        d[i] = c[i + 1] - c[i] * 0.5
    return np.sum(d * d * x[1:])


@case(inputs(distinct(6, 3)))
def running_argmax_value(X):
    best = X[0]
    best_score = np.sum(X[0] ** 2)
    for row in X[1:]:
        score = np.sum(row ** 2)
        if score > best_score:
            best = row
            best_score = score
    return np.sum(best * np.arange(3.0))


@case(inputs(uniform(0.2, 2.0, 7)))
def geometric_running_mean(x):
    logp = 0.0
    out = 0.0
    for k in range(x.shape[0]):
        logp = logp + np.log(x[k])
        out = out + np.exp(logp / (k + 1))
    return out
