"""Filters and state estimation: Kalman updates, IIR/FIR loops, smoothing, HMM recursions."""

import numpy as np

from . import case, inputs, normal, scalar, spd, uniform


@case(inputs(normal(10), scalar(0.05, 0.5), scalar(0.2, 1.0)), wrt=(0, 1, 2))
def kalman_1d(zs, q, r):
    x = 0.0
    p = 1.0
    nll = 0.0
    for z in zs:
        p = p + q
        s = p + r
        k = p / s
        innov = z - x
        nll = nll + 0.5 * (np.log(s) + innov * innov / s)
        x = x + k * innov
        p = (1.0 - k) * p
    return nll


def _transition(rng):
    return np.array([[1.0, 0.1], [0.0, 1.0]]) + rng.normal(size=(2, 2)) * 0.05


@case(inputs(normal(6, 1), _transition, spd(2, 0.05, 0.2), uniform(0.2, 0.8, 1)), wrt=(0, 1, 2, 3),
      rtol=1e-4, atol=1e-5)
def kalman_2d(zs, F, Q, r):
    h = np.array([1.0, 0.0])
    x = np.zeros(2)
    P = np.eye(2)
    total = 0.0
    for z in zs:
        x = F @ x
        P = F @ P @ F.T + Q
        s = h @ P @ h + r[0]
        k = P @ h / s
        y = z[0] - h @ x
        x = x + k * y
        P = P - np.outer(k, h @ P)
        total = total + y * y / s + np.log(s)
    return total


@case(inputs(normal(12), 0.5, 0.1), wrt=(0, 1, 2))
def alpha_beta_filter(zs, alpha, beta):
    x = zs[0]
    v = 0.0
    err = 0.0
    for k in range(1, zs.shape[0]):
        x_pred = x + v
        res = zs[k] - x_pred
        x = x_pred + alpha * res
        v = v + beta * res
        err = err + res * res
    return err


@case(inputs(normal(10), normal(3, scale=0.5), normal(2, scale=0.3)), wrt=(0, 1, 2))
def iir_biquad(x, b, a):
    n = x.shape[0]
    y = np.zeros(n)
    for t in range(n):
        acc_ = b[0] * x[t]
        if t >= 1:
            acc_ = acc_ + b[1] * x[t - 1] - a[0] * y[t - 1]
        if t >= 2:
            acc_ = acc_ + b[2] * x[t - 2] - a[1] * y[t - 2]
        y[t] = acc_
    return np.sum(y * y)


@case(inputs(normal(12), normal(4)), wrt=(0, 1))
def fir_convolution(x, h):
    n = x.shape[0] - h.shape[0] + 1
    y = np.zeros(n)
    for i in range(n):
        for k in range(h.shape[0]):
            y[i] += h[k] * x[i + k]
    return np.sum(np.tanh(y))


@case(inputs(normal(10), 0.4, 0.3), wrt=(0, 1, 2))
def holt_linear_smoothing(x, alpha, beta):
    level = x[0]
    trend = x[1] - x[0]
    sse = 0.0
    for t in range(1, x.shape[0]):
        forecast = level + trend
        err = x[t] - forecast
        sse = sse + err * err
        new_level = alpha * x[t] + (1.0 - alpha) * forecast
        trend = beta * (new_level - level) + (1.0 - beta) * trend
        level = new_level
    return sse


def _stochastic(n):
    def make(rng):
        m = rng.uniform(0.2, 1.0, size=(n, n))
        return m / m.sum(axis=1, keepdims=True)

    return make


@case(inputs(_stochastic(3), uniform(0.1, 1.0, 6, 3), uniform(0.2, 1.0, 3)), wrt=(0, 1, 2))
def hmm_forward_normalized(T, emissions, prior):
    alpha = prior / np.sum(prior)
    loglik = 0.0
    for t in range(emissions.shape[0]):
        alpha = (alpha @ T) * emissions[t]
        c = np.sum(alpha)
        loglik = loglik + np.log(c)
        alpha = alpha / c
    return loglik


@case(inputs(normal(8, 3), normal(3), 0.98), wrt=(0, 1))
def complementary_filter(gyro, accel_bias, k):
    angle = np.zeros(3)
    total = 0.0
    for t in range(gyro.shape[0]):
        accel_angle = np.sin(gyro[t] + accel_bias)
        angle = k * (angle + 0.01 * gyro[t]) + (1.0 - k) * accel_angle
        total = total + np.sum(angle * angle)
    return total


@case(inputs(normal(9), 4), wrt=0)
def median_free_despike(x, w):
    out = x.copy()
    for i in range(w, x.shape[0]):
        local = np.mean(x[i - w:i])
        if abs(x[i] - local) > 1.5:
            out[i] = local
    return np.sum(out * out)


@case(inputs(normal(8), uniform(0.1, 0.5, 1)), wrt=(0, 1))
def particle_like_resample_weights(z, sigma):
    w = np.ones(z.shape[0]) / z.shape[0]
    for k in range(3):
        lik = np.exp(-0.5 * (z - 0.3 * k) ** 2 / sigma ** 2)
        w = w * lik
        w = w / np.sum(w)
    return np.sum(w * z)
