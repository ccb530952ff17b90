"""A value whose dtype is not inexact carries no adjoint, and reshapes that follow the memory layout
are refused.

A cast to an integer or boolean dtype is a step function: its derivative is zero. It is a cast
whether written out (``x.astype(int)``), asked for (``np.sum(x, dtype=int)``) or implicit (a float
written into an integer buffer, ``np.full_like`` of an integer array): each gradient below is
compared with central finite differences (``tests/oracle.py``). ``order="A"`` and ``"K"`` reshape
by the operand's layout at run time, which the adjoint does not have: they are refused at compile
time, at the user's line.
"""

import inspect

import numpy as np
import pytest

import sourcegrad as sg

from .oracle import assert_close, fd_grad

# away from the points where ten times an entry crosses an integer
V = np.array([0.537, 1.21, 0.734, 2.345, 1.862, 0.411])
X = np.array([[0.537, 1.21, 0.734], [2.345, 1.862, 0.411], [1.127, 0.263, 1.548]])
EXACT = [np.int8, np.int32, np.int64, np.uint16, np.bool_]


def check(f, *args, wrt=0):
    g = sg.grad(f, wrt=wrt)(*args)
    assert_close(g, fd_grad(f, args, wrt))
    return g


# ---- writes into a buffer of integers or booleans ------------------------------------------------
def zeros_setitem(dt):
    def f(v):
        buf = np.zeros(6, dtype=dt)
        buf[0] = v[0] * 10
        buf[2:4] = v[2:4] * 10
        return np.sum(buf * v) + np.sum(v**2)

    return f


def zeros_positional_slice(dt):
    def f(v):
        buf = np.zeros(6, dt)
        buf[:] = v * 10
        return np.sum(buf * v)

    return f


def ones_mask_write(dt):
    def f(v):
        buf = np.ones(6, dtype=dt)
        buf[v > 1.0] = v[v > 1.0] * 10
        return np.sum(buf * v**2)

    return f


def full_augmented_write(dt):
    def f(v):
        buf = np.full(6, 1, dtype=dt)
        buf[1] += v[1] * 10
        return np.sum(buf * v)

    return f


def empty_fancy_write(dt):
    def f(v):
        buf = np.empty(6, dtype=dt)
        buf[:] = 0
        buf[[0, 3, 5]] = v[[1, 2, 4]] * 10
        return np.sum(buf * v)

    return f


def zeros_like_of_argument(dt):
    def f(v, k):
        buf = np.zeros_like(k)
        buf[2] = v[2] * 10
        return np.sum(buf * v)

    return f


def rows_in_a_loop(dt):
    def f(x):
        buf = np.zeros((3, 3), dtype=dt)
        for i in range(3):
            buf[i] = x[i] * 10
        return np.sum(buf * x)

    return f


def add_at_buffer(dt):
    def f(v):
        buf = np.zeros(6, dtype=dt)
        np.add.at(buf, [0, 1, 1], v[:3] * 10)
        return np.sum(buf * v)

    return f


@pytest.mark.parametrize("dt", EXACT, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "make",
    [
        zeros_setitem,
        zeros_positional_slice,
        ones_mask_write,
        full_augmented_write,
        empty_fancy_write,
        rows_in_a_loop,
        add_at_buffer,
    ],
)
def test_a_write_into_an_exact_buffer_carries_no_gradient(make, dt):
    f = make(dt)
    args = (X,) if make is rows_in_a_loop else (V,)
    check(f, *args)


@pytest.mark.parametrize("dt", EXACT + [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_zeros_like_of_an_argument_of_any_dtype(dt):
    # the buffer's dtype is known only when the gradient runs
    k = np.arange(6).astype(dt)
    g = sg.grad(zeros_like_of_argument(dt))(V, k)
    want = fd_grad(zeros_like_of_argument(dt), (V, k), 0, h=1e-3)  # (float32 rounds)
    assert_close(g, want, rtol=1e-3, atol=1e-4)


def int_arange_buffer(v):
    a = np.arange(6)  # int64
    a[1] = v[1] * 10
    return np.sum(a * v)


def int_list_buffer(v):
    b = np.array([0, 0, 0])
    b[1] = v[1] * 10
    return np.sum(b * v[:3])


def full_like_int(v):
    a = np.full_like(np.arange(6), v[0] * 10)
    return np.sum(a * v)


def zeros_like_bool(v):
    a = np.zeros_like(v > 1.0)
    a[0] = v[0]
    return np.sum(a * v)


def empty_like_int(v):
    a = np.empty_like(np.arange(6))
    a[:] = v * 10
    return np.sum(a * v)


def float32_buffer(v):
    buf = np.zeros(6, dtype=np.float32)
    buf[:] = v
    return np.sum(buf.astype(np.float64) * v)


@pytest.mark.parametrize(
    "f", [int_arange_buffer, int_list_buffer, full_like_int, zeros_like_bool, empty_like_int]
)
def test_buffers_of_integers_from_their_constructors(f):
    check(f, V)


def test_a_float32_buffer_still_carries_its_gradient():
    g = sg.grad(float32_buffer)(V)
    assert_close(g, 2 * V, rtol=1e-6, atol=1e-6)


# ---- a literal dtype that is not inexact: the result carries no gradient ------------------------
def reductions(dt):
    def f(v):
        return (
            np.sum(v * 10, dtype=dt) * v[0]
            + np.sum(np.cumsum(v * 10, dtype=dt) * v)
            + np.mean(v * 10, dtype=dt) * v[1]
            + (v * 10).sum(dtype=dt) * v[2]
            + np.sum(v)
        )

    return f


def products(dt):
    def f(v):
        return np.prod(v[:3] * 3, dtype=dt) * v[0] + np.sum(np.cumprod(v[:3] * 3, dtype=dt) * v[:3])

    return f


def made_with_dtype(dt):
    def f(v):
        a = np.full(6, v[0] * 10, dtype=dt)
        b = np.array(v * 10, dt)
        c = np.asarray(v * 10, dtype=dt)
        d = np.linspace(v[0], v[1] * 10, 6, dtype=dt)
        return np.sum((a + b + c + d) * v)

    return f


def trace_dtype(x):
    return np.trace(x * 10, dtype=int) * x[0, 0] + np.sum(np.sum(x * 10, 0, int) * x[0])


def string_dtypes(v):
    return (
        np.sum(v.astype("int32") * v)
        + np.sum(np.array(v * 10, dtype="i8") * v)
        + np.sum(v, dtype="int16") * v[0]
    )


@pytest.mark.parametrize("dt", EXACT[:-1], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("make", [reductions, products, made_with_dtype])
def test_a_literal_exact_dtype_makes_a_constant(make, dt):
    check(make(dt), V)


def test_literal_dtypes_as_strings_and_by_position():
    check(trace_dtype, X)
    check(string_dtypes, V)


def test_a_literal_boolean_dtype():
    def f(v):
        return np.sum(np.array(v - 1.0, dtype=bool) * v) + np.sum(v.astype(bool) * v)

    check(f, V)


def sum_with_dtype_of(v, dt):
    return np.sum(v * 10, dtype=dt) * v[0] + np.sum(np.full(3, v[1] * 10, dtype=dt) * v[:3])


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint16", "float32", "float64"])
def test_a_dtype_given_by_a_variable_is_decided_when_the_gradient_runs(dt):
    g = sg.grad(sum_with_dtype_of)(V, dt)
    want = fd_grad(lambda v: sum_with_dtype_of(v, dt), (V,), 0, h=1e-3)  # (float32 rounds)
    assert_close(g, want, rtol=1e-3, atol=1e-3)


def literal_int_dtypes(v):
    buf = np.zeros(6, dtype=np.int16)
    buf[1:] = v[1:] * 10
    return (
        np.sum(v * 10, dtype=int) * v[0]
        + np.sum(np.cumsum(v * 10, dtype=np.int32) * v)
        + (v * 10).sum(dtype=np.uint16) * v[2]
        + np.sum(np.full(6, v[0] * 10, dtype=np.int8) * v)
        + np.sum(buf * v)
    )


def test_literal_exact_dtypes_are_constants_when_compiled():
    check(literal_int_dtypes, V)
    text = sg.source(sg.grad(literal_int_dtypes))
    # the casting calls have no backward; the buffer's writes test its dtype
    assert "unreduce(_t1_bar" not in text and "fill_adjoint" not in text
    assert text.count("inexact_part(") == 1


def test_float_buffers_keep_their_code():
    def f(v):
        a = np.zeros(6)
        a[0] = v[0]
        b = np.zeros_like(v)
        b[1] = v[1]
        c = v.copy()
        c[2] = v[3]
        return np.sum(a * b * c)

    check(f, V)
    assert "inexact_part" not in sg.source(sg.grad(f))


# ---- reshapes by memory layout ------------------------------------------------------------------
W = np.arange(12.0) ** 1.5


def flatten_a(x):
    return np.sum(x.T.flatten(order="A") * W)


def flatten_a_positional(x):
    return np.sum(x.T.flatten("A") * W)


def ravel_a(x):
    return np.sum(x.T.ravel(order="A") * W)


def reshape_a(x):
    return np.sum(x.T.reshape(-1, order="A") * W)


def np_reshape_k(x):
    return np.sum(np.reshape(x.T, (12,), order="K") * W)


def ravel_k(x):
    return np.sum(np.ravel(x.T, order="K") * W)


def ravel_by_variable(x, order):
    return np.sum(x.T.ravel(order=order) * W)


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize(
    "f", [flatten_a, flatten_a_positional, ravel_a, reshape_a, np_reshape_k, ravel_k]
)
def test_memory_layout_orders_are_refused_at_their_line(f):
    x = np.asfortranarray(np.arange(12.0).reshape(4, 3))
    with pytest.raises(sg.MissingAdjointError) as e:
        sg.grad(f)(x)
    assert "order=" in str(e.value)
    assert "'C', 'F'" in e.value.hint
    assert e.value.lineno == _line_of(f, "return")


def test_an_order_given_by_a_variable_is_refused():
    with pytest.raises(sg.MissingAdjointError) as e:
        sg.grad(ravel_by_variable)(np.ones((4, 3)), "C")
    assert "variable" in str(e.value)
    assert e.value.lineno == _line_of(ravel_by_variable, "return")


def test_memory_layout_orders_are_refused_in_forward_mode():
    with pytest.raises(sg.MissingAdjointError):
        sg.jvp(ravel_a)(np.ones((4, 3)), np.ones((4, 3)))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("layout", [np.ascontiguousarray, np.asfortranarray])
def test_orders_c_and_f_are_exact_for_any_layout(order, layout):
    def f(x):
        return (
            np.sum(x.T.ravel(order=order) * W)
            + np.sum(x.flatten(order) * W)
            + np.sum(np.reshape(x, (2, 6), order=order) * W.reshape(2, 6))
        )

    x = layout(np.arange(12.0).reshape(4, 3) ** 0.5)
    g = sg.grad(f)(x)
    assert_close(g, fd_grad(f, (x,), 0))


@pytest.mark.parametrize(
    "f",
    [
        int_arange_buffer,
        full_like_int,
        zeros_like_bool,
        literal_int_dtypes,
        zeros_setitem(np.int32),
        ones_mask_write(np.bool_),
        empty_fancy_write(np.uint16),
    ],
    ids=lambda f: f.__qualname__.split(".")[0],
)
def test_forward_mode_gives_an_exact_value_a_zero_tangent(f):
    t = np.linspace(-1.0, 1.5, 6)
    _, tangent = sg.jvp(f)(V, t)
    assert_close(tangent, fd_grad(f, (V,), 0) @ t)


def test_the_positions_of_dtype_known_without_a_signature_are_numpys():
    """numpy builds whose builtins have no signature Python can read (numpy 2.2) rely on the
    table: where this numpy has signatures, the table must say what they say."""
    import inspect

    from sourcegrad.transforms.dtypes import _KNOWN_POSITION

    for f, (position, _) in _KNOWN_POSITION.items():
        try:
            names = list(inspect.signature(f).parameters)
        except ValueError:
            continue
        assert names.index("dtype") == position, f.__name__
