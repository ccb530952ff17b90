"""Polynomials and series: Horner loops, three-term recurrences, Clenshaw, truncated series."""

import numpy as np

from . import case, inputs, listof, normal, scalar, uniform


@case(inputs(normal(5), uniform(-1.5, 1.5, 6)), wrt=(0, 1))
def horner(coeffs, x):
    y = np.zeros_like(x)
    for c in coeffs:
        y = y * x + c
    return np.sum(y)


@case(inputs(normal(6), scalar(-1.2, 1.2)), wrt=(0, 1))
def horner_scalar_index(coeffs, x):
    n = coeffs.shape[0]
    y = coeffs[n - 1]
    for i in range(n - 2, -1, -1):
        y = y * x + coeffs[i]
    return y


@case(inputs(listof(4, scalar(-1.0, 1.0)), uniform(-1.0, 1.0, 5)), wrt=(0, 1))
def horner_list_coeffs(coeffs, x):
    y = 0.0 * x
    for c in reversed(coeffs):
        y = y * x + c
    return np.sum(y * y)


@case(inputs(normal(6), uniform(-0.95, 0.95, 5)), wrt=(0, 1))
def chebyshev_series(c, x):
    t_prev = np.ones_like(x)
    t = x
    y = c[0] * t_prev + c[1] * t
    for k in range(2, c.shape[0]):
        t_next = 2.0 * x * t - t_prev
        y = y + c[k] * t_next
        t_prev = t
        t = t_next
    return np.sum(y)


@case(inputs(uniform(-0.95, 0.95, 4), 6))
def legendre_recurrence(x, n):
    p0 = np.ones_like(x)
    p1 = x
    total = np.sum(p0 + p1)
    for k in range(1, n):
        p2 = ((2 * k + 1) * x * p1 - k * p0) / (k + 1)
        p0, p1 = p1, p2
        total = total + np.sum(p2 * p2)
    return total


@case(inputs(normal(7), uniform(-0.9, 0.9, 4)), wrt=(0, 1))
def clenshaw_chebyshev(c, x):
    b1 = np.zeros_like(x)
    b2 = np.zeros_like(x)
    for k in range(c.shape[0] - 1, 0, -1):
        b0 = c[k] + 2.0 * x * b1 - b2
        b2 = b1
        b1 = b0
    return np.sum(c[0] + x * b1 - b2)


@case(inputs(normal(4), normal(3)), wrt=(0, 1))
def polynomial_product(p, q):
    r = np.zeros(p.shape[0] + q.shape[0] - 1)
    for i in range(p.shape[0]):
        for j in range(q.shape[0]):
            r[i + j] += p[i] * q[j]
    return np.sum(r * r)


@case(inputs(normal(6), scalar(-1.0, 1.0)), wrt=(0, 1))
def polynomial_derivative_value(c, x):
    d = np.zeros(c.shape[0] - 1)
    for k in range(1, c.shape[0]):
        d[k - 1] = k * c[k]
    y = 0.0
    for k in range(d.shape[0] - 1, -1, -1):
        y = y * x + d[k]
    return y * y


@case(inputs(uniform(-2.0, 2.0, 5), 15))
def taylor_exp(x, terms):
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, terms):
        term = term * x / k
        total = total + term
    return np.sum(total * np.sin(x))


@case(inputs(uniform(0.5, 2.0, 4), 10))
def continued_fraction(x, depth):
    y = x
    for k in range(depth):
        y = x + 1.0 / (1.0 + y)
    return np.sum(y)


@case(inputs(normal(4), normal(3, shift=0.0), uniform(-0.8, 0.8, 5)), wrt=(0, 1, 2))
def pade_rational(p, q, x):
    num = np.zeros_like(x)
    for c in p[::-1]:
        num = num * x + c
    den = np.zeros_like(x)
    for c in q[::-1]:
        den = den * x + c * 0.2
    den = 1.0 + den * x
    return np.sum(num / (1.0 + den * den))


@case(inputs(uniform(0.2, 0.9, 5), 4))
def power_sums(x, kmax):
    s = 0.0
    xk = np.ones_like(x)
    for k in range(1, kmax + 1):
        xk = xk * x
        s = s + np.sum(xk) / k
    return s


@case(inputs(uniform(-0.9, 0.9, 3), 5))
def hermite_physicists(x, n):
    h0 = np.ones_like(x)
    h1 = 2.0 * x
    out = np.sum(h1)
    for k in range(1, n):
        h2 = 2.0 * x * h1 - 2.0 * k * h0
        h0 = h1
        h1 = h2
        out = out + np.sum(h2) / (k + 1) ** 2
    return out
