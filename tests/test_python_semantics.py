"""The forward is Python: a gradient's value is what the function returns, and where the function
raises, the gradient raises the same kind of error, in every mode (specialized or general code,
loops unrolled or not). Corners where regenerating the forward could depart from Python: an
augmented assignment on an array updates it in place (its dtype and shape stay; numpy raises
where they cannot), a 0-d array stays an array, a Python number rebinds.
"""

import numpy as np
import pytest

import sourcegrad as sg


def float32_buffer(x):
    b = np.zeros(3, dtype=np.float32)
    b += x  # stays float32
    return np.sum(b.astype(np.float64) * x) + (b.dtype == np.float32)


def float32_buffer_in_a_loop(x):
    b = np.ones(3, dtype=np.float32)
    for _ in range(12):
        b *= 1.01
        b += x * 0.1
    return np.sum(b * x) * (b.dtype == np.float32)


def integer_buffer(x):
    b = np.zeros(3, dtype=int)
    b += x  # numpy: cannot cast float64 into int64
    return np.sum(b * x)


def grows(x):
    b = np.zeros(1)
    b += x  # numpy: a (1,) buffer cannot hold the (3,) result
    return np.sum(b * x)


def broadcast_into(x):
    b = np.zeros((2, 3))
    b += x  # (3,) into (2, 3): fine
    b *= x
    return np.sum(b)


def zero_d(x):
    s = np.zeros(())
    s += np.sum(x * x)
    return np.sum(s * 2.0) + isinstance(s, np.ndarray)


def python_number(x):
    s = 0.0
    s += np.sum(x)  # a float has no in-place add: s is rebound to an array scalar
    s *= 2.0
    return s


def list_extended(x):
    xs = [x]
    xs += [x * 2.0]
    return np.sum(xs[1])


CASES = [
    float32_buffer,
    float32_buffer_in_a_loop,
    integer_buffer,
    grows,
    broadcast_into,
    zero_d,
    python_number,
    list_extended,
]
MODES = {
    "specialized": {},
    "general": {"specialize": False},
    "not unrolled": {"unroll": 0},
}


def _outcome(run):
    try:
        return "value", run()
    except Exception as e:  # noqa: BLE001 — the kind of error is what is compared
        return "raises", e


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_the_gradients_value_or_error_is_pythons(f, mode):
    x = np.array([0.5, -1.25, 2.0])
    want = _outcome(lambda: f(x.copy()))
    got = _outcome(lambda: sg.value_and_grad(f, **MODES[mode])(x.copy())[0])
    assert got[0] == want[0], (got, want)
    if want[0] == "raises":
        # numpy's own kind of error (a casting failure is a TypeError, a shape one a ValueError)
        base = TypeError if isinstance(want[1], TypeError) else type(want[1])
        assert isinstance(got[1], base), (got[1], want[1])
    else:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


# ---- extrema that skip a NaN: the operand that is the value gets the gradient --------------------
NANS = np.array([np.nan, 0.3, np.nan])


def builtin_max_with_nan(x):
    return max(np.sum(x * x), float("nan")) + min(np.sum(x), float("nan"))


def fmax_fmin_with_nans(x):
    return np.sum(np.fmax(x, NANS) * x) + np.sum(np.fmin(NANS, x * 2.0))


@pytest.mark.parametrize("f", [builtin_max_with_nan, fmax_fmin_with_nans])
def test_an_extremum_that_skips_a_nan_differentiates_the_other_operand(f):
    """``max(v, nan)`` is ``v`` in Python and ``np.fmax(v, nan)`` is ``v``: their gradient is
    ``v``'s (it was 0: the NaN's comparison lost the selection)."""
    from .oracle import assert_close, fd_grad

    x = np.array([0.5, 1.5, -1.0])
    want = fd_grad(f, (x,), 0)
    assert np.all(np.isfinite(want))
    assert_close(sg.grad(f)(x), want)
    assert_close(sg.jvp(f)(x, np.ones(3))[1], np.sum(want))


def falls_off_the_end(x):
    if np.sum(x) > 100.0:
        return np.sum(x)


def test_a_way_through_the_function_without_a_return_returns_none():
    """Python returns None there: the gradient says it got None, not an internal unbound name."""
    x = np.array([0.5, -1.25, 2.0])
    assert falls_off_the_end(x) is None
    for specialize in (True, False):
        with pytest.raises(sg.NonScalarOutputError, match="NoneType"):
            sg.grad(falls_off_the_end, specialize=specialize)(x)
    assert sg.grad(falls_off_the_end)(x * 100.0) is not None  # the way with a return
