"""Custom derivatives with ``sourcegrad.Function``, as ``torch.autograd.Function``: several inputs
and several outputs against finite differences, the cotangents ``backward`` receives, and the
errors for a ``backward`` that returns the wrong thing.

The user's ``backward`` is trusted for its values (sourcegrad never looks inside it); what is
checked here is the plumbing around it: one cotangent per output, zeros where an output got no
gradient, one gradient per input, each reaching the right argument. The oracle is
``tests/oracle.py`` (central differences of the plain function, whose ``apply`` runs ``forward``).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad.errors import CustomGradientError, SourcegradError

from .corpus.harness import check, check_vjp
from .oracle import assert_close, fd_grad

SEEDS = st.integers(0, 2**32 - 1)
SIZES = st.integers(1, 5)


def rng_of(seed):
    return np.random.default_rng(seed)


# ==== Functions with several outputs ==============================================================


class SinCos(sg.Function):
    """One input, two outputs."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x), np.cos(x)

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        return g_sin * np.cos(x) - g_cos * np.sin(x)


class Polar(sg.Function):
    """Two inputs, two outputs: ``(r cos t, r sin t)``."""

    @staticmethod
    def forward(ctx, r, t):
        ctx.save_for_backward(r, t)
        return r * np.cos(t), r * np.sin(t)

    @staticmethod
    def backward(ctx, gx, gy):
        r, t = ctx.saved_tensors
        return gx * np.cos(t) + gy * np.sin(t), -gx * r * np.sin(t) + gy * r * np.cos(t)


class SumAndProduct(sg.Function):
    """Outputs of different shapes: a scalar and an array."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.sum(a * b), a * b

    @staticmethod
    def backward(ctx, g_sum, g_prod):
        a, b = ctx.saved_tensors
        g = g_sum + g_prod
        return g * b, g * a


def unpacked(x):
    s, c = SinCos.apply(x)
    return np.sum(s * 2.0 + c * c)


def indexed(x):
    out = SinCos.apply(x * 1.5)
    return np.sum(out[0] * out[1]) + np.sum(out[1])


def only_first(x):
    s, c = SinCos.apply(x)  # c gets no gradient: backward receives zeros for it
    return np.sum(s**2)


def only_second(x):
    out = SinCos.apply(x)
    return np.sum(np.exp(out[1]))


def polar(r, t):
    px, py = Polar.apply(r, t)
    return np.sum(px * py + px)


def polar_in_loop(r, t, n):
    x = r
    for i in range(n):
        a, b = Polar.apply(np.tanh(x), t)
        x = a + 0.5 * b
    return np.sum(x * x)


def different_shapes(a, b):
    total, prod = SumAndProduct.apply(a, b)
    return total * np.sum(np.sin(prod))


def vector_valued(r, t):
    px, py = Polar.apply(r, t)
    return px * py


@given(seed=SEEDS, n=SIZES)
def test_unpacked_outputs(seed, n):
    check(unpacked, (rng_of(seed).normal(size=n),))


@given(seed=SEEDS, n=SIZES)
def test_indexed_outputs(seed, n):
    check(indexed, (rng_of(seed).normal(size=(n, 2)),))


@given(seed=SEEDS, n=SIZES)
def test_an_output_with_no_gradient(seed, n):
    x = rng_of(seed).normal(size=n)
    check(only_first, (x,))
    check(only_second, (x,))


@given(seed=SEEDS, n=SIZES)
def test_two_inputs_two_outputs(seed, n):
    rng = rng_of(seed)
    r, t = rng.uniform(0.5, 2.0, size=n), rng.normal(size=n)
    check(polar, (r, t), wrt=(0, 1))
    check(polar, (r, t), wrt=1)


@given(seed=SEEDS, n=SIZES, k=st.integers(0, 3))
def test_in_a_loop(seed, n, k):
    rng = rng_of(seed)
    check(polar_in_loop, (rng.uniform(0.5, 2.0, size=n), rng.normal(size=n), k), wrt=(0, 1))


@given(seed=SEEDS, n=SIZES)
def test_outputs_of_different_shapes(seed, n):
    rng = rng_of(seed)
    check(different_shapes, (rng.normal(size=n), rng.normal(size=n)), wrt=(0, 1))


@given(seed=SEEDS, n=SIZES)
def test_vjp_through_several_outputs(seed, n):
    rng = rng_of(seed)
    r, t, ct = rng.uniform(0.5, 2.0, size=n), rng.normal(size=n), rng.normal(size=n)
    check_vjp(vector_valued, (r, t), ct, wrt=(0, 1))


def test_outside_differentiated_code_apply_runs_forward():
    x = np.linspace(0.0, 1.0, 4)
    s, c = SinCos.apply(x)
    np.testing.assert_array_equal(s, np.sin(x))
    np.testing.assert_array_equal(c, np.cos(x))


# ==== what backward receives ======================================================================


class Recorder(sg.Function):
    """Two outputs of different dtypes and shapes; records the cotangents backward receives."""

    seen = []

    @staticmethod
    def forward(ctx, x):
        return x * 2.0, np.sum(x).astype(np.float32)

    @staticmethod
    def backward(ctx, g_twice, g_sum):
        Recorder.seen.append((g_twice, g_sum, ctx.needs_input_grad))
        return g_twice * 2.0 + g_sum


def recorder_first(x):
    a, b = Recorder.apply(x)
    return np.sum(a * a)


def recorder_branch(x, use):
    a, b = Recorder.apply(x)
    if use:
        return np.sum(a)
    return np.sum(x * x)


def test_an_output_with_no_gradient_gets_zeros_shaped_like_it():
    Recorder.seen.clear()
    x = np.array([1.0, -2.0, 0.5])
    g = sg.grad(recorder_first)(x)
    assert_close(g, fd_grad(recorder_first, (x,), 0))
    ((g_twice, g_sum, needs),) = Recorder.seen
    np.testing.assert_allclose(g_twice, 2.0 * 2.0 * x)
    assert (
        isinstance(g_sum, np.ndarray)
        and g_sum.shape == ()
        and g_sum.dtype == np.float32
        and g_sum == 0
    )
    assert needs == (True,)


def test_backward_is_not_called_when_no_output_got_a_gradient():
    Recorder.seen.clear()
    x = np.array([1.0, -2.0])
    assert_close(sg.grad(recorder_branch)(x, False), 2.0 * x)
    assert Recorder.seen == []  # as torch: a Function none of whose outputs reached the loss
    assert_close(sg.grad(recorder_branch)(x, True), 2.0 * np.ones(2))
    assert len(Recorder.seen) == 1


class Scaled(sg.Function):
    """A non-array input, and needs_input_grad."""

    needs = []

    @staticmethod
    def forward(ctx, x, k, label):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        Scaled.needs.append(ctx.needs_input_grad)
        return g * ctx.k, None, None


def scaled(x):
    return np.sum(Scaled.apply(x, 3.0, "a label") ** 2)


def test_needs_input_grad_and_non_array_inputs():
    Scaled.needs.clear()
    x = np.array([0.5, 1.0])
    assert_close(sg.grad(scaled)(x), fd_grad(scaled, (x,), 0))
    assert Scaled.needs == [(True, True, False)]  # a string carries no gradient


# ==== a backward that returns the wrong thing ======================================================


def _make(name, result):
    """A Function of two inputs ``(a, b)`` whose backward returns ``result(g, a, b)``."""

    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return result(g, a, b)

    return type(
        name, (sg.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    )


WrongShape = _make("WrongShape", lambda g, a, b: (g * b, np.ones(7)))
TooFew = _make("TooFew", lambda g, a, b: g * b)
TooMany = _make("TooMany", lambda g, a, b: (g * b, g * a, g))
NotAnArray = _make("NotAnArray", lambda g, a, b: (g * b, "oops"))
AList = _make("AList", lambda g, a, b: [g * b, g * a])
Reshaped = _make("Reshaped", lambda g, a, b: (g * b, (g * a).reshape(-1)))  # same size, other shape
Broadcast = _make("Broadcast", lambda g, a, b: (g * b, g * a))  # a gradient with b's broadcast axes
TrailingNone = _make("TrailingNone", lambda g, a, b: (g * b, g * a, None))
NoneGrad = _make("NoneGrad", lambda g, a, b: (None, g * a))


def loss_with(cls):
    def loss(a, b):
        return np.sum(cls.apply(a, b) ** 2)

    return loss


def wrong_shape(a, b):
    return np.sum(WrongShape.apply(a, b))


def too_few(a, b):
    return np.sum(TooFew.apply(a, b))


def too_many(a, b):
    return np.sum(TooMany.apply(a, b))


def not_an_array(a, b):
    return np.sum(NotAnArray.apply(a, b))


def a_list(a, b):
    return np.sum(AList.apply(a, b))


def reshaped(a, b):
    return np.sum(Reshaped.apply(a, b))


def broadcast(a, b):
    return np.sum(Broadcast.apply(a, b) ** 2)


def trailing_none(a, b):
    return np.sum(TrailingNone.apply(a, b) ** 2)


def none_grad(a, b):
    return np.sum(NoneGrad.apply(a, b) ** 2)


A, B = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([0.5, -1.0, 2.0])


@pytest.mark.parametrize(
    "f, wrt, message",
    [
        (
            wrong_shape,
            1,
            "WrongShape.backward returned a gradient of shape (7,) for input 1 (b), of shape (3,)",
        ),
        (
            wrong_shape,
            0,
            "WrongShape.backward returned a gradient of shape (7,) for input 1 (b), of shape (3,)",
        ),
        (
            reshaped,
            1,
            "Reshaped.backward returned a gradient of shape (6,) for input 1 (b), of shape (3,)",
        ),
        (
            too_few,
            0,
            "TooFew.backward returned 1 gradient for 2 inputs of forward: return one per input (a, b)",
        ),
        (too_many, 0, "TooMany.backward returned 3 gradients for 2 inputs of forward"),
        (not_an_array, 0, "NotAnArray.backward returned str as the gradient of input 1 (b)"),
        (
            a_list,
            0,
            "AList.backward returned a list; return a tuple of gradients, one per input of forward (a, b)",
        ),
    ],
)
@pytest.mark.parametrize("specialize", [False, True])
def test_wrong_backward_results_are_named(f, wrt, message, specialize):
    df = sg.grad(f, wrt=wrt, specialize=specialize)
    with pytest.raises(CustomGradientError) as info:
        df(A, B)
    assert message in str(info.value)
    assert isinstance(info.value, SourcegradError) and isinstance(info.value, ValueError)
    # the note (the message, on Python 3.10) names the user's line that called apply
    told = "\n".join([str(info.value), *getattr(info.value, "__notes__", ())])
    assert f"return np.sum({f.__name__.title().replace('_', '')}.apply(a, b))" in told


def test_the_error_comes_when_the_backward_runs():
    # the forward is fine
    value, pullback = sg.vjp(lambda a, b: WrongShape.apply(a, b), wrt=1)(A, B)
    np.testing.assert_array_equal(value, A * B)
    with pytest.raises(
        CustomGradientError, match=r"of shape \(7,\) for input 1 \(b\), of shape \(3,\)"
    ):
        pullback(np.ones_like(A))


@pytest.mark.parametrize("f", [broadcast, trailing_none, none_grad], ids=lambda f: f.__name__)
def test_accepted_backward_results(f):
    # a gradient with the axes broadcasting gave its input is summed back (as torch does); trailing
    # Nones past the inputs are ignored; None is a zero gradient
    ga, gb = sg.grad(f, wrt=(0, 1))(A, B)
    want_a = np.zeros_like(A) if f is none_grad else fd_grad(f, (A, B), 0)
    assert_close(ga, want_a)
    assert_close(gb, fd_grad(f, (A, B), 1))
