"""The independent oracle: central finite differences, written here and nowhere else.

It shares no code with sourcegrad (not even ``sourcegrad.testing``): it only calls the user's
plain function on perturbed float64 copies of its arguments.
"""

import numpy as np


def fd_grad(f, args, i, h=1e-6):
    """d f(*args) / d args[i] by central differences, in float64."""
    args = list(args)
    x0 = args[i]
    is_float = isinstance(x0, float)
    # a list or tuple stays one, entry by entry (Python concatenates and repeats lists where
    # numpy would add and multiply)
    back = isinstance(x0, (list, tuple))
    x = np.array(x0, dtype=np.float64)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[k]))
        xp = x.copy()
        xp[k] += step
        xm = x.copy()
        xm[k] -= step
        args[i] = float(xp) if is_float else _like(x0, xp) if back else xp
        fp = f(*args)
        args[i] = float(xm) if is_float else _like(x0, xm) if back else xm
        fm = f(*args)
        g[k] = (float(fp) - float(fm)) / (2 * step)
    return float(g) if is_float else g


def _like(template, values):
    """``values`` (an array) in the structure of ``template``: lists, tuples, floats, arrays."""
    if isinstance(template, (list, tuple)):
        return type(template)(_like(t, values[k]) for k, t in enumerate(template))
    if isinstance(template, float):
        return float(values)
    return np.array(values)


def fd_vjp(f, args, i, cotangent, h=1e-6):
    """The vector-Jacobian product of any-shaped ``f`` with ``cotangent``, by central differences."""
    ct = np.asarray(cotangent, dtype=np.float64)
    return fd_grad(lambda *a: float(np.sum(np.asarray(f(*a), dtype=np.float64) * ct)), args, i, h)


def assert_close(got, want, rtol=1e-5, atol=1e-6, what="gradient"):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != finite differences {want.shape}"
    err = np.abs(got - want)
    ok = err <= atol + rtol * np.abs(want)
    if not np.all(ok):
        k = np.unravel_index(np.argmax(np.where(ok, -np.inf, err)), got.shape) if got.shape else ()
        raise AssertionError(
            f"{what} differs from finite differences at {k}: got {got[k]!r}, fd {want[k]!r}"
        )
