"""Tools for users' own gradient tests: ``check_grad`` and hypothesis strategies.

A property-based gradient test is three lines::

    @given(sourcegrad.testing.arrays(shape=(3, 4)))
    def test_my_loss(x):
        sourcegrad.check_grad(my_loss, x)

``check_grad`` compares the compiled gradient with central finite differences computed here,
independently of the compiler, in float64 whatever the argument's dtype, and raises
``AssertionError`` with a report of the worst entry.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_grad", "numerical_grad", "arrays", "GradientMismatch"]


class GradientMismatch(AssertionError):
    """The compiled gradient disagrees with finite differences."""


def _as_float64(a):
    if isinstance(a, float):
        return a
    return np.array(a, dtype=np.float64)


def numerical_grad(f, args, index, eps=None):
    """Central finite differences of scalar ``f`` in argument ``index``, in float64."""
    args = list(args)
    x0 = args[index]
    scalar = isinstance(x0, float)
    x = np.array(x0, dtype=np.float64)
    step = eps if eps is not None else 1e-6
    out = np.zeros_like(x)
    flat = x.reshape(-1)
    gflat = out.reshape(-1)
    for i in range(flat.size):
        orig = flat[i]
        h = step * max(1.0, abs(orig))
        flat[i] = orig + h
        args[index] = float(x) if scalar else x.copy()
        fp = float(f(*args))
        flat[i] = orig - h
        args[index] = float(x) if scalar else x.copy()
        fm = float(f(*args))
        flat[i] = orig
        gflat[i] = (fp - fm) / (2 * h)
    return float(out) if scalar else out


def _tolerances(dtype, rtol, atol):
    if rtol is not None and atol is not None:
        return rtol, atol
    low = dtype is not None and np.dtype(dtype).itemsize <= 4
    return (rtol if rtol is not None else (2e-3 if low else 1e-5),
            atol if atol is not None else (2e-3 if low else 1e-6))


def check_grad(f, *args, wrt=0, rtol=None, atol=None, eps=None):
    """Check ``sourcegrad.grad(f, wrt)`` at ``args`` against central finite differences.

    The finite differences evaluate ``f`` itself (the user's function, not generated code) on
    float64 copies of the arguments. Tolerances default by dtype: ``rtol=1e-5, atol=1e-6`` for
    float64, ``2e-3`` for float32 and smaller. Checks shape and dtype as well as values.
    Raises ``GradientMismatch`` naming the worst entry; returns the compiled gradient."""
    from .api import grad

    df = grad(f, wrt=wrt)
    g = df(*args)
    grads = g if isinstance(wrt, (tuple, list)) else (g,)
    names = df.names
    positions = df.positions
    hi = [_as_float64(a) if i in positions else a for i, a in enumerate(args)]
    for name, pos, gi in zip(names, positions, grads):
        a = args[pos]
        dtype = getattr(a, "dtype", None)
        _check_kind(name, a, gi)
        num = numerical_grad(f, hi, pos, eps)
        r, t = _tolerances(dtype, rtol, atol)
        _compare(name, np.asarray(gi, dtype=np.float64), np.asarray(num), r, t, f)
    return g


def _check_kind(name, a, g):
    if isinstance(a, float):
        if not isinstance(g, float):
            raise GradientMismatch(f"gradient for {name!r} should be a Python float, got {type(g).__name__}")
        return
    if np.shape(g) != np.shape(a):
        raise GradientMismatch(f"gradient for {name!r} has shape {np.shape(g)}, the argument {np.shape(a)}")
    if getattr(a, "dtype", None) is not None and getattr(g, "dtype", None) != a.dtype:
        raise GradientMismatch(f"gradient for {name!r} has dtype {getattr(g, 'dtype', type(g))}, the argument {a.dtype}")


def _compare(name, got, want, rtol, atol, f):
    err = np.abs(got - want)
    bound = atol + rtol * np.abs(want)
    bad = ~(err <= bound)  # NaN counts as bad
    if not bad.any():
        return
    excess = np.where(bad, np.nan_to_num(err - bound, nan=np.inf), -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), got.shape) if got.shape else ()
    raise GradientMismatch(
        f"gradient of {getattr(f, '__qualname__', f)} with respect to {name!r} disagrees with central "
        f"finite differences at {int(bad.sum())} of {got.size} entries\n"
        f"  worst entry {name}{list(worst) if worst else ''}: sourcegrad {got[worst]!r}, "
        f"finite differences {want[worst]!r}, |diff| {err[worst]:.3g} > atol {atol:g} + rtol {rtol:g} * |fd|"
    )


def arrays(shape=None, dtype=np.float64, min_value=-3.0, max_value=3.0, min_side=1, max_side=4, max_dims=3):
    """A hypothesis strategy for finite float arrays in ``[min_value, max_value]``.

    ``shape`` fixes the shape; otherwise shapes are drawn with up to ``max_dims`` axes."""
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    shapes = st.just(shape) if shape is not None else hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=min_side, max_side=max_side)
    width = 32 if np.dtype(dtype).itemsize <= 4 else 64
    elements = st.floats(min_value, max_value, allow_nan=False, allow_infinity=False, width=width)
    return hnp.arrays(dtype, shapes, elements=elements)
