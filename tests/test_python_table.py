"""The README's "Python you can write" table, held to its word: every row marked **yes** has a
program here, differentiated in the code specialized to its arguments and in the general code
against central finite differences (``tests/corpus/harness.check``), its value checked against
Python's (``check_value``); every row marked **refused** has a program refused at its line.
The thorough tests of each construct live in ``test_lang_*.py``; this module keeps the table true.
"""

import contextlib
import functools
import pathlib
import re
import warnings

import numpy as np
import pytest

import sourcegrad as sg

from .corpus.harness import check, check_value

X = np.array([0.5, -1.2, 0.8])
README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


# ---- statements ----------------------------------------------------------------------------------
def expression_statement(x):
    print("checking", x.shape)
    warnings.warn("a warning", stacklevel=1)
    return np.sum(np.sin(x))


def assignments(x):
    a = b = x * 2.0
    (c, d), e = (a, b), x
    return np.sum(c * d * e)


def starred_targets(x):
    first, *rest = [x, x * 2.0, x * 3.0]
    *init, last = x
    return np.sum(first * rest[1]) + last * init[0]


def augmented(x):
    y = x * 1.0
    y += x * x
    y[0] *= 3.0
    return np.sum(y)


def annotated(x):
    y: np.ndarray = np.tanh(x)
    return np.sum(y * y)


def assert_pass_raise(x):
    assert x.ndim == 1, "a vector"
    if x.shape[0] == 0:
        raise ValueError("empty")
    pass
    return np.sum(x**3)


def deletes(x):
    a = x * 2.0
    b = a + 1.0
    del a
    d = {"k": x, "j": b}
    del d["k"]
    return np.sum(d["j"] * b)


def returns(x):
    if np.sum(x) > 10.0:
        return np.sum(x)
    return np.sum(x * x)


def _pieces(x):
    for i in range(0, x.shape[0], 2):
        yield x[i : i + 2]


def generator_loop(x):
    total = 0.0
    for piece in _pieces(x):
        total = total + np.sum(np.sin(piece))
    return total


def break_continue(x):
    s = 0.0
    for i in range(x.shape[0]):
        if i == 1:
            continue
        if i == 2:
            break
        s = s + x[i] ** 2
    return s + np.sum(x)


def imports_inside(x):
    import numpy as np2
    from numpy import tanh

    return np.sum(tanh(x) * np2.cos(x))


def nonlocal_in_def(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + np.sum(v * v)

    add(x)
    add(np.sin(x))
    return total


# ---- compound statements ------------------------------------------------------------------------
def if_elif_else(x):
    if x[0] > 1.0:
        y = x * 2.0
    elif x[0] > 0.0:
        y = np.sin(x)
    else:
        y = x * x
    return np.sum(y)


def while_else(x):
    y, n = x, 0
    while n < 3:
        y = y * 1.1 + np.sin(y) * 0.1
        n += 1
    else:
        y = y * 2.0
    return np.sum(y)


def for_else(x):
    s = 0.0
    for v in x:
        if v > 5.0:
            break
        s = s + v * v
    else:
        s = s * 2.0
    return s


def try_except(x):
    try:
        chol = np.linalg.cholesky(np.outer(x, x))  # singular: numpy raises
    except np.linalg.LinAlgError:
        chol = np.linalg.cholesky(np.outer(x, x) + np.eye(x.shape[0]))
    finally:
        pass
    return np.sum(chol)


def with_blocks(x):
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = np.log(np.abs(x))
    with contextlib.suppress(ValueError):
        y = y * 2.0
    return np.sum(y)


def match_statement(x, mode="sum"):
    match mode:
        case "sum" | "total":
            y = np.sum(np.sin(x))
        case _:
            y = np.max(x)
    return y


def local_def_and_lambda(x):
    def scaled(v, k=2.0):
        return v * k

    square = lambda v: v * v  # noqa: E731
    return np.sum(square(scaled(x)))


def _wrapped(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@_wrapped
def passthrough_decorator(x):
    return np.sum(np.exp(x))


# ---- expressions -------------------------------------------------------------------------------
def operators(x):
    a = np.outer(x, x)
    return np.sum(-(a @ x) / 3.0 + x**2 - x // 1.0 + (x % 1.0) * x)


def comparisons_and_chains(x):
    y = x
    if 0.0 < np.sum(x * x) < 100.0:
        y = x * 3.0
    return np.sum(y * (x > 0.0))


def boolean_values(x, scale=None):
    k = scale or 2.0
    flag = not (np.sum(x) > 0.0) and True
    return np.sum(x * k) * (2.0 if flag else 1.0)


def conditional_expression(x):
    return np.sum(x * x) if x[0] > 0.0 else np.sum(x)


def walrus(x):
    if (n := np.sum(x * x)) > 1.0:
        return n * 2.0
    return n


def _scaled(v, *, scale=1.0, shift=0.0):
    return v * scale + shift


def star_calls(x):
    args = (x, 2.0)
    kw = {"scale": 3.0}
    return np.sum(np.power(*args)) + np.sum(_scaled(x, **kw)) + np.sum(np.zeros((*x.shape, 2)))


def _two(x):
    return x * 2.0, np.sin(x)


def helper_tuples(x):
    a, b = _two(x)
    return np.sum(a * b) + np.sum(_two(x)[1])


def attributes_and_getattr(x):
    return np.sum(getattr(np, "tanh")(x.T) * x.real)


def indexing(x):
    m = np.outer(x, x)
    return np.sum(m[0, 1:]) + np.sum(m[..., 0] * m[[0, 2, 2], :][:, 1]) + np.sum(m[m > 0.0])


def displays(x):
    xs = [x, x * 2.0]
    ys = [*xs, (x * 3.0,)[0]]
    d = {"a": ys[2], "b": xs[1]}
    return np.sum(d["a"] * ys[1])


def comprehensions(x):
    squares = [v * v for v in x if v > -5.0]
    d = {f"k{i}": x * i for i in range(3)}
    return sum(squares) + np.sum(d["k2"]) + sum(np.sin(v) for v in x)


def strings(x, params):
    name = f"layer{len(x)}"
    key = "_".join([name.upper(), "w"])
    return np.sum(params[key] * x) * ("3" in name) + np.sum(params[f"W{len(x) - 2}"] * x)


def membership_and_identity(x, y=None):
    if y is None and 1 in (1, 2):
        return np.sum(x * x)
    return np.sum(x)


def functional(x):
    f = functools.partial(np.power, x)
    total = functools.reduce(lambda a, b: a + b, [f(2.0), f(3.0)])
    return np.sum(total) + sum(map(np.sum, [x, x * x]))


def _power(v, n):
    return v if n == 1 else v * _power(v, n - 1)


def bounded_recursion(x):
    return np.sum(_power(x, 3))


def masks_and_bitwise(x):
    m = (x > 0.0) & ~(x > 0.7) | (x < -1.0)
    return np.sum(np.where(m, x * x, x))


# ---- objects -------------------------------------------------------------------------------------
class _Activation:
    def __call__(self, z):
        return self.fn(z)


class _Tanh(_Activation):
    def fn(self, z):
        return np.tanh(z)


class _Dense:
    def __init__(self, scale):
        self.scale = scale
        self.n_in = None

    @property
    def weight(self):
        return np.exp(self.scale)

    @staticmethod
    def combine(a, b):
        return a * b

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        if self.n_in is None:
            self.n_in = x.shape[0]  # set on the first call, as lazy layers do
        self.out = self.combine(x, self.weight)  # written, then read back by the loss
        return self.out


class _Scaled(_Dense):
    def forward(self, x):
        return super().forward(x) * 2.0


class _Net:
    def __init__(self):
        self.layers = [_Dense(0.1), _Tanh(), _Scaled(-0.2)]

    def loss(self, x):
        h = x
        for layer in self.layers:
            h = layer(h)
        return np.sum(h * h) + np.sum(self.layers[0].out) * self.layers[2].n_in


NET = _Net()


def attribute_writes(x):
    return NET.loss(x)


def methods_and_layers(x):
    return NET.loss(x * 0.5) + np.sum(NET.layers[2].out)


def _relu(z):
    return np.maximum(z, 0.0)


ACTIVATIONS = {"relu": _relu, "tanh": np.tanh}


def _activation(name):
    return ACTIVATIONS[name]


def _mlp(x, nonlinearity):
    return nonlinearity(x * 1.5 - 0.2)


def functions_as_values(x):
    act = _activation("tanh")
    return np.sum(_mlp(x, act)) + np.sum(_mlp(x, np.sin)) + np.sum(ACTIVATIONS["relu"](x))


YES = {
    "expression statements": (expression_statement, (X,)),
    "assignment": (assignments, (X,)),
    "starred targets": (starred_targets, (X,)),
    "augmented assignment": (augmented, (X,)),
    "annotated assignment": (annotated, (X,)),
    "assert, pass, raise": (assert_pass_raise, (X,)),
    "del": (deletes, (X,)),
    "return": (returns, (X,)),
    "yield": (generator_loop, (X,)),
    "break, continue": (break_continue, (X,)),
    "import inside the function": (imports_inside, (X,)),
    "nonlocal": (nonlocal_in_def, (X,)),
    "if, elif, else": (if_elif_else, (X,)),
    "while, while/else": (while_else, (X,)),
    "for, for/else": (for_else, (X,)),
    "try, except, else, finally": (try_except, (X,)),
    "with": (with_blocks, (X,)),
    "match": (match_statement, (X,)),
    "def and lambda inside": (local_def_and_lambda, (X,)),
    "decorators": (passthrough_decorator, (X,)),
    "arithmetic operators": (operators, (X,)),
    "comparisons": (comparisons_and_chains, (X,)),
    "and, or, not": (boolean_values, (X,)),
    "conditional expression": (conditional_expression, (X,)),
    "walrus": (walrus, (X,)),
    "calls with *args, **kwargs": (star_calls, (X,)),
    "helpers returning tuples": (helper_tuples, (X,)),
    "attributes, getattr": (attributes_and_getattr, (X,)),
    "subscripts and slices": (indexing, (X,)),
    "list, tuple, dict displays": (displays, (X,)),
    "comprehensions": (comprehensions, (X,)),
    "f-strings and string methods": (strings, (X, {"LAYER3_w": X * 2.0, "W1": X + 1.0})),
    "in, is": (membership_and_identity, (X,)),
    "partial, reduce, map": (functional, (X,)),
    "recursion": (bounded_recursion, (X,)),
    "bitwise operators": (masks_and_bitwise, (X,)),
    "attribute writes on objects": (attribute_writes, (X,)),
    "methods, properties, super and lists of layers": (methods_and_layers, (X,)),
    "functions as values": (functions_as_values, (X,)),
}


# ---- refused, at the line --------------------------------------------------------------------------
def global_write(x):
    global _G  # noqa: PLW0603
    _G = 1.0
    return np.sum(x)


def class_inside(x):
    class Inner:
        pass

    return np.sum(x)


def set_display(x):
    return np.sum(x) * len({1, 2})


def slice_of_a_list(x):
    xs = [x, x]
    xs[0:1] = [x * 2.0]
    return np.sum(xs[0])


def chained_comparison_value(x):
    inside = 0.0 < np.sum(x) < 10.0
    return np.sum(x) * inside


def data_recursion(x):
    return np.sum(_halve(x))


def _halve(v):
    return v if np.sum(v * v) < 0.1 else _halve(v * 0.5)


class _Holder:
    def __init__(self):
        self.w = np.ones(3)


HOLDER = _Holder()


def attribute_updated_in_place(x):
    HOLDER.w += x  # the caller's array, updated in place
    return np.sum(HOLDER.w)


REFUSED = {
    "global": (global_write, "global"),
    "class inside the function": (class_inside, "class"),
    "set displays and comprehensions": (set_display, "set"),
    "slice assignment to a list": (slice_of_a_list, "slice"),
    "chained comparison as a value": (chained_comparison_value, "chained comparison"),
    "recursion of data-dependent depth": (data_recursion, "recursion"),
    "in-place update of an object's array": (attribute_updated_in_place, "in place"),
}


@pytest.mark.parametrize("row", sorted(YES))
def test_a_yes_row_differentiates_like_finite_differences(row):
    f, args = YES[row]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(f, args)
        check_value(f, args)


@pytest.mark.parametrize("row", sorted(REFUSED))
def test_a_refused_row_is_refused_at_its_line(row):
    f, what = REFUSED[row]
    with pytest.raises(sg.SourcegradError, match=re.compile(what, re.I)) as e:
        sg.grad(f)(X)
    assert getattr(e.value, "lineno", None) is not None


def _table_rows():
    """(construct, status) of each row of the README's table."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Python you can write", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([^|]+?) \| (yes|refused)\b", section, re.M)
    return {name.strip(): status for name, status in rows}


def test_every_row_of_the_readme_table_has_its_test():
    rows = _table_rows()
    assert {r for r, s in rows.items() if s == "yes"} == set(YES)
    assert {r for r, s in rows.items() if s == "refused"} == set(REFUSED) | set(REFUSED_ELSEWHERE)


# refused rows whose programs live in other modules (they need a file of their own, or a newer
# Python than the oldest one CI runs)
REFUSED_ELSEWHERE = {"async, await", "exec, eval"}  # tests/test_errors.py
