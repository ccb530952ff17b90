"""Iterative solvers with fixed iteration counts or data-dependent convergence loops."""

import numpy as np

from . import case, inputs, normal, scalar, spd, uniform


@case(inputs(spd(4), normal(4), 20, 0.3), wrt=(0, 1))
def gradient_descent_quadratic(A, b, steps, lr):
    x = np.zeros(b.shape[0])
    for k in range(steps):
        g = A @ x - b
        x = x - lr * g
    return np.sum(x * x)


def _diag_dominant(rng):
    a = rng.normal(size=(4, 4)) * 0.3
    return a + np.diag(rng.uniform(2.0, 3.0, size=4))


@case(inputs(_diag_dominant, normal(4), 12), wrt=(0, 1))
def jacobi(A, b, iters):
    n = b.shape[0]
    x = np.zeros(n)
    for k in range(iters):
        x_new = np.zeros(n)
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s = s - A[i, j] * x[j]
            x_new[i] = s / A[i, i]
        x = x_new
    return np.sum(np.sin(x))


@case(inputs(_diag_dominant, normal(4), 6), wrt=(0, 1))
def gauss_seidel(A, b, iters):
    n = b.shape[0]
    x = np.zeros(n)
    for k in range(iters):
        for i in range(n):
            s = b[i] - np.sum(A[i] * x) + A[i, i] * x[i]
            x[i] = s / A[i, i]
    return np.sum(x * x)


@case(inputs(uniform(0.1, 5.0, 5)))
def newton_cube_root(a):
    y = np.ones(a.shape[0])
    for k in range(30):
        y = y - (y ** 3 - a) / (3.0 * y * y)
    return np.sum(y * a)


@case(inputs(uniform(0.5, 3.0, 4)))
def newton_until_converged(c):
    # root of x^3 + x - c, iterated until the step is tiny
    x = c * 0.5
    step = 1.0
    while np.max(np.abs(step)) > 1e-13:
        f = x ** 3 + x - c
        step = f / (3.0 * x * x + 1.0)
        x = x - step
    return np.sum(x * x)


@case(inputs(uniform(-1.0, 1.0, 5), 40))
def fixed_point_cos(x0, iters):
    x = x0
    for k in range(iters):
        x = np.cos(x) * 0.5 + x0 * 0.3
    return np.sum(x)


@case(inputs(spd(4, 0.5, 3.0), 60), rtol=1e-4, atol=1e-5)
def power_iteration(A, iters):
    v = np.ones(A.shape[0])
    for k in range(iters):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v


@case(inputs(spd(4, 0.5, 2.0), normal(4)), wrt=(0, 1), rtol=1e-4, atol=1e-5)
def conjugate_gradient(A, b):
    x = np.zeros(b.shape[0])
    r = b - A @ x
    p = r
    rs = np.sum(r * r)
    for k in range(b.shape[0]):
        Ap = A @ p
        alpha = rs / np.sum(p * Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = np.sum(r * r)
        if rs_new < 1e-20:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return np.sum(x * b) + np.sum(x)


@case(inputs(uniform(0.5, 4.0, 3)))
def heron_sqrt_while(a):
    y = a
    while np.max(np.abs(y * y - a)) > 1e-12 * np.max(a):
        y = 0.5 * (y + a / y)
    return np.sum(np.sin(y))


@case(inputs(normal(3), normal(3, 3, scale=0.3), 0.05, 25), wrt=(0, 1))
def euler_ode(y0, W, dt, steps):
    y = y0
    for k in range(steps):
        y = y + dt * np.tanh(W @ y)
    return np.sum(y * y)


@case(inputs(normal(2), scalar(0.5, 2.0), 0.1, 15), wrt=(0, 1))
def rk4_oscillator(y0, omega, dt, steps):
    y = y0
    for k in range(steps):
        k1 = np.array([y[1], -omega * omega * np.sin(y[0])])
        y2 = y + 0.5 * dt * k1
        k2 = np.array([y2[1], -omega * omega * np.sin(y2[0])])
        y3 = y + 0.5 * dt * k2
        k3 = np.array([y3[1], -omega * omega * np.sin(y3[0])])
        y4 = y + dt * k3
        k4 = np.array([y4[1], -omega * omega * np.sin(y4[0])])
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] + 0.5 * y[1] ** 2


@case(inputs(normal(3), normal(3), uniform(0.5, 2.0, 3), 0.05, 20), wrt=(0, 1, 2))
def velocity_verlet(x0, v0, k, dt, steps):
    x = x0
    v = v0
    a = -k * x
    for i in range(steps):
        x = x + v * dt + 0.5 * a * dt * dt
        a_new = -k * x - 0.1 * x ** 3
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    return np.sum(0.5 * v * v + 0.5 * k * x * x)


@case(inputs(scalar(1.5, 3.0)))
def secant_root(c):
    # root of x^2 - c from two starting points
    x0 = 1.0
    x1 = 2.0
    for k in range(8):
        f0 = x0 * x0 - c
        f1 = x1 * x1 - c
        if abs(f1 - f0) < 1e-14:
            break
        x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
        x0 = x1
        x1 = x2
    return x1 * x1 * x1


@case(inputs(normal(4, 3), normal(4), 0.1, 30), wrt=(0, 1), rtol=1e-4)
def ridge_by_gradient_descent(X, y, lam, steps):
    w = np.zeros(X.shape[1])
    lr = 0.1
    for t in range(steps):
        r = X @ w - y
        g = X.T @ r / X.shape[0] + lam * w
        w = w - lr * g
    return np.sum((X @ w - y) ** 2)
