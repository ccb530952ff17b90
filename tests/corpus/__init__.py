"""A corpus of whole functions with control flow, each registered with its inputs.

Every module here holds realistic numpy functions (recurrent networks, attention loops, piecewise
functions, iterative solvers, filters, scans, sorting networks, masked updates, small models) as
module-level ``def``s, since sourcegrad reads their source. Each is registered with ``@case``,
which names an input generator (shapes and the function's domain), the arguments to
differentiate, and tolerances where finite differences are noisier than usual::

    @case(inputs(normal(5), uniform(0.1, 2.0, 3)), wrt=(0, 1))
    def f(x, y):
        ...

``tests/test_corpus.py`` checks every case against finite differences on several random inputs.
"""

import importlib
from dataclasses import dataclass

import numpy as np

MODULES = (
    "rnn", "attention", "piecewise", "solvers", "polynomials", "scans", "sorting", "filters",
    "masked", "models",
)


@dataclass(frozen=True)
class Case:
    fn: object
    make: object  # rng -> tuple of arguments
    wrt: object = 0
    rtol: float = 1e-5
    atol: float = 1e-6

    @property
    def id(self):
        return f"{self.fn.__module__.rsplit('.', 1)[-1]}.{self.fn.__name__}"


CASES = []


def case(make, wrt=0, rtol=1e-5, atol=1e-6):
    """Register the decorated function with its input generator ``make(rng) -> args``."""

    def register(fn):
        CASES.append(Case(fn, make, wrt, rtol, atol))
        return fn

    return register


def all_cases():
    """Every registered case, in module order (importing the modules registers them)."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return list(CASES)


# ---- input generators: each is ``rng -> value``; ``inputs`` makes ``rng -> args`` -------------------


def inputs(*gens):
    """``rng -> args``: call each generator with ``rng``; anything not callable is a constant."""
    return lambda rng: tuple(g(rng) if callable(g) else g for g in gens)


def normal(*shape, scale=1.0, shift=0.0):
    return lambda rng: rng.normal(size=shape) * scale + shift


def uniform(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, size=shape)


def scalar(lo=-1.0, hi=1.0):
    return lambda rng: float(rng.uniform(lo, hi))


def signed(lo, hi, *shape):
    """|x| in [lo, hi] with a random sign: away from zero."""
    return lambda rng: rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def distinct(*shape, lo=-2.0, hi=2.0):
    """Entries at least (hi - lo) / (2 n) apart: no ties for max, min or sorting."""

    def make(rng):
        n = int(np.prod(shape))
        grid = np.linspace(lo, hi, n)
        jitter = rng.uniform(-0.25, 0.25, size=n) * (hi - lo) / max(n - 1, 1)
        return rng.permutation(grid + jitter).reshape(shape)

    return make


def spd(n, lo=0.5, hi=2.0):
    """A symmetric positive definite matrix with eigenvalues in [lo, hi]."""

    def make(rng):
        q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        return (q * rng.uniform(lo, hi, size=n)) @ q.T

    return make


def orthogonal_scaled(n, scale):
    """A random orthogonal matrix times ``scale`` (a contraction when scale < 1)."""

    def make(rng):
        q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        return q * scale

    return make


def mask(p, *shape):
    """A fixed 0/1 float mask with about a fraction ``p`` of ones."""
    return lambda rng: (rng.uniform(size=shape) < p).astype(float)


def params(**gens):
    """A dict of arrays (nn-style parameters)."""
    return lambda rng: {k: g(rng) for k, g in gens.items()}


def listof(n, gen):
    return lambda rng: [gen(rng) for _ in range(n)]


def tupleof(*gens):
    return lambda rng: tuple(g(rng) for g in gens)
