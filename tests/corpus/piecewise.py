"""Piecewise functions: branches on data, per element and on whole arrays, away from their kinks."""

import numpy as np

from . import case, inputs, normal, scalar, signed, uniform


@case(inputs(normal(8, scale=2.0), normal(8, scale=2.0), 1.0), wrt=(0, 1))
def huber_loop(pred, target, delta):
    loss = 0.0
    for i in range(pred.shape[0]):
        r = pred[i] - target[i]
        if abs(r) <= delta:
            loss = loss + 0.5 * r * r
        else:
            loss = loss + delta * (abs(r) - 0.5 * delta)
    return loss


@case(inputs(normal(10, scale=1.5)))
def smooth_l1_where(x):
    small = np.abs(x) < 1.0
    return np.sum(np.where(small, 0.5 * x * x, np.abs(x) - 0.5))


@case(inputs(uniform(0.05, 2.95, 9)))
def cubic_spline_segments(x):
    total = 0.0
    for e in x:
        if e < 1.0:
            y = e ** 3
        elif e < 2.0:
            t = e - 1.0
            y = 1.0 + 3.0 * t + 3.0 * t * t - 2.0 * t ** 3
        else:
            t = e - 2.0
            y = 5.0 + 3.0 * t - 3.0 * t * t + t ** 3
        total = total + y * e
    return total


@case(inputs(signed(0.05, 2.0, 8), 0.1))
def leaky_relu_loop(x, slope):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        if x[i] > 0:
            out[i] = x[i]
        else:
            out[i] = slope * x[i]
    return np.sum(out * out) + np.sum(out)


@case(inputs(uniform(0.0, 100.0, 6)))
def tax_brackets(incomes):
    total = 0.0
    for inc in incomes:
        tax = 0.1 * min(inc, 10.0)
        if inc > 10.0:
            tax = tax + 0.2 * (min(inc, 40.0) - 10.0)
        if inc > 40.0:
            tax = tax + 0.4 * (inc - 40.0)
        total = total + tax
    return total


@case(inputs(signed(0.05, 2.0, 8), 0.5))
def soft_threshold(x, lam):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > lam:
            y[i] = x[i] - lam
        elif x[i] < -lam:
            y[i] = x[i] + lam
    return np.sum(y * y * x)


def _interp_knots(rng):
    return np.sort(rng.uniform(0.0, 4.0, size=5)) + np.arange(5) * 0.2


@case(inputs(uniform(0.3, 4.0, 6), _interp_knots, normal(5)), wrt=(0, 2))
def linear_interpolation(xq, knots, values):
    out = 0.0
    for x in xq:
        j = 0
        while j < knots.shape[0] - 2 and x > knots[j + 1]:
            j += 1
        t = (x - knots[j]) / (knots[j + 1] - knots[j])
        out = out + (1.0 - t) * values[j] + t * values[j + 1]
    return out


@case(inputs(normal(7)))
def sign_dependent_scaling(x):
    s = np.sum(x)
    if s >= 0:
        y = x * np.exp(-s)
    else:
        y = x * (1.0 + s * s)
    if np.max(y) > 0.5:
        y = np.tanh(y)
    return np.sum(y * x)


@case(inputs(uniform(0.02, 0.98, 10)))
def bucketed(x):
    total = 0.0
    for e in x:
        b = int(e * 4)
        if b == 0:
            total = total + np.sin(e)
        elif b == 1:
            total = total + e * e
        elif b == 2:
            total = total + np.exp(e) * 0.5
        else:
            total = total + np.log(e + 1.0)
    return total


@case(inputs(normal(6, scale=2.0), scalar(-0.5, 0.5), scalar(1.0, 2.0)))
def clamp_by_branches(x, lo, hi):
    s = 0.0
    for e in x:
        if e < lo:
            c = lo
        elif e > hi:
            c = hi
        else:
            c = e
        s = s + c * c + np.sin(e)
    return s


@case(inputs(normal(5, 2)), atol=1e-5)
def polar_branches(pts):
    total = 0.0
    for p in pts:
        r = np.sqrt(p[0] * p[0] + p[1] * p[1])
        if p[0] > 0:
            ang = np.arctan(p[1] / p[0])
        elif p[1] > 0:
            ang = np.pi / 2 - np.arctan(p[0] / p[1])
        else:
            ang = -np.pi / 2 - np.arctan(p[0] / p[1])
        total = total + r * np.cos(ang) + ang * r
    return total


@case(inputs(normal(9)))
def ternary_activation(x):
    s = 0.0
    for e in x:
        s = s + (e * e if e > 0 else np.expm1(e)) * (2.0 if s > 1.0 else 1.0)
    return s
