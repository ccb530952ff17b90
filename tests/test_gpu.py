"""The backend table of ``tests/test_backend.py`` on real cupy arrays.

Skipped cleanly where cupy is not installed or no CUDA device answers. Each row checks that the
gradient (and the value) of cupy inputs comes back as cupy arrays with the argument's structure,
shape and dtype, equals the numpy gradient, and leaves the inputs alone. Host synchronizations are
counted by the test double only (cupy has no reliable way to count them;
``cupyx.allow_synchronize`` is deprecated for that reason), so rows whose only known bug is an
extra synchronization are not marked here; the other marks come from the double and are not
strict, since no GPU checked them when they were written.

Run with ``python -m pytest -m gpu tests/test_gpu.py``.
"""

import numpy as np
import pytest

cp = pytest.importorskip("cupy")

from .test_backend import CASES, check_case  # noqa: E402


def _has_device():
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:  # CUDARuntimeError without a driver or device
        return False


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_device(), reason="no CUDA device")]


def to_gpu(x):
    if isinstance(x, np.ndarray):
        return cp.asarray(x)
    if isinstance(x, dict):
        return {k: to_gpu(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_gpu(v) for v in x)
    return x


def to_cpu(x):
    if isinstance(x, cp.ndarray):
        return cp.asnumpy(x)
    if isinstance(x, dict):
        return {k: to_cpu(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


def on_gpu(x):
    if isinstance(x, cp.ndarray):
        return True
    if isinstance(x, dict):
        return all(on_gpu(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(on_gpu(v) for v in x)
    return False


def _tolerance(args):
    """cuBLAS, cuSOLVER and cupy's reductions sum in another order than numpy's."""
    leaves = args.values() if isinstance(args, dict) else args
    for a in leaves:
        if isinstance(a, (list, tuple, dict)) and _tolerance(a)[0] > 1e-6:
            return 1e-4, 1e-5
        if getattr(a, "dtype", None) == np.float32:
            return 1e-4, 1e-5
    return 1e-6, 1e-8


@pytest.mark.parametrize("specialize", [True, False], ids=["specialized", "general"])
@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_gradient_on_gpu(case, specialize):
    rtol, atol = _tolerance(case.make(np.random.default_rng(0)))
    check_case(case, to_gpu, to_cpu, on_gpu, rtol=rtol, atol=atol, specialize=specialize)
