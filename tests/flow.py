"""What the control-flow tests share: hypothesis strategies for seeds and sizes, and inputs made
to fall on one side of a branch."""

import numpy as np
from hypothesis import strategies as st

SEEDS = st.integers(0, 2**32 - 1)
SIZES = st.integers(1, 6)


def rng_of(seed):
    return np.random.default_rng(seed)


def with_sum(seed, n, lo, hi):
    """A random vector of length ``n`` whose sum lies in [lo, hi] (away from branch boundaries)."""
    rng = rng_of(seed)
    v = rng.normal(size=n)
    return v - v.mean() + rng.uniform(lo, hi) / n
