"""Newton's method with second derivatives compiled from the source.

1. Rosenbrock's banana function, minimized by damped Newton steps with ``sg.hessian`` (a 2x2
   matrix) and ``sg.grad``.
2. L2-regularized logistic regression, minimized by a Hessian-free Newton method: each step
   solves ``H d = -g`` by conjugate gradients, which needs only Hessian-vector products
   (``sg.hvp``), never the Hessian itself.
3. A one-dimensional Newton iteration with ``sg.grad(sg.grad(f))``.

    python examples/newton.py
"""

import numpy as np

import sourcegrad as sg


# ---- 1. Newton with the Hessian -------------------------------------------------------------------


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1.0 - x) ** 2 + 100.0 * (y - x * x) ** 2


def newton(f, x, steps=50, tol=1e-10):
    """Damped Newton: the full step if it lowers f, else halved until it does."""
    grad, hessian = sg.grad(f), sg.hessian(f)
    path = [x]
    for _ in range(steps):
        g = grad(x)
        if np.linalg.norm(g) < tol:
            break
        step = np.linalg.solve(hessian(x), -g)
        t = 1.0
        while f(x + t * step) > f(x) and t > 1e-8:
            t /= 2
        x = x + t * step
        path.append(x)
    return x, path


# ---- 2. Hessian-free Newton (conjugate gradients on Hessian-vector products) ----------------------


def logistic_loss(w, X, y, lam):
    z = X @ w  # log(1 + e^z) as np.logaddexp(0, z): no overflow for large z
    return np.sum(np.logaddexp(0.0, z) - y * z) / len(y) + 0.5 * lam * np.sum(w * w)


def conjugate_gradients(hvp, b, iters=50, rtol=1e-10):
    """Solve ``H d = b`` for a positive definite H given only ``v -> H v``."""
    d, r = np.zeros_like(b), b.copy()
    p, rr = r.copy(), r @ r
    for _ in range(iters):
        if rr <= rtol ** 2 * (b @ b):
            break
        hp = hvp(p)
        alpha = rr / (p @ hp)
        d, r = d + alpha * p, r - alpha * hp
        rr, rr_old = r @ r, rr
        p = r + (rr / rr_old) * p
    return d


def newton_cg(f, w, args, steps=20, tol=1e-10):
    grad, hvp = sg.grad(f), sg.hvp(f)
    norms = []
    for _ in range(steps):
        g = grad(w, *args)
        norms.append(float(np.linalg.norm(g)))
        if norms[-1] < tol:
            break
        w = w + conjugate_gradients(lambda v: hvp(w, *args, v), -g)
    return w, norms


def logistic_data(n=200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0).astype(float)
    return X, y, 1e-2


# ---- 3. grad of grad --------------------------------------------------------------------------------


def energy(t):
    return np.cosh(t) - 2.0 * t  # minimum where sinh(t) = 2


def newton_1d(f, t, steps=20, tol=1e-12):
    d1, d2 = sg.grad(f), sg.grad(sg.grad(f))
    for _ in range(steps):
        step = d1(t) / d2(t)
        t = t - step
        if abs(step) < tol:
            break
    return t


def main():
    x, path = newton(rosenbrock, np.array([-1.2, 1.0]))
    print(f"Rosenbrock from (-1.2, 1.0): {len(path) - 1} Newton steps to {x} (the minimum is (1, 1))")

    X, y, lam = logistic_data()
    w, norms = newton_cg(logistic_loss, np.zeros(X.shape[1]), (X, y, lam))
    print(f"logistic regression, Newton-CG on Hessian-vector products: gradient norm "
          + " -> ".join(f"{n:.1e}" for n in norms))
    print(f"  the Hessian at the optimum is symmetric: "
          f"{np.allclose(sg.hessian(logistic_loss)(w, X, y, lam), sg.hessian(logistic_loss)(w, X, y, lam).T)}")

    t = newton_1d(energy, 0.0)
    print(f"argmin of cosh(t) - 2t by grad(grad(f)): {t:.12f} (arcsinh(2) = {np.arcsinh(2.0):.12f})")
    print("\nthe generated Hessian-vector product code (reverse mode over the forward-mode code):\n")
    print(sg.source(sg.hvp(logistic_loss)))


if __name__ == "__main__":
    main()
