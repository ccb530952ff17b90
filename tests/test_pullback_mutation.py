"""A pullback computes from the data its forward saw, whatever the caller writes in place before
calling it: into an argument, an array inside one (a dict entry, an object's attribute, a list
entry), the value returned, the aux, a module-level array or a closed-over array. The oracle is
finite differences of the function at the data as it was when the forward ran.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .oracle import assert_close, fd_vjp

S = np.array([1.0, -2.0, 0.5])


def _closure():
    C = np.array([0.5, 1.5, -1.0])

    def uses_closed_over(x, w):
        return np.exp(x * w) * C

    return uses_closed_over, C


uses_closed_over, C = _closure()


def reads_everything(x, w):
    h = np.tanh(x * w)  # the backward reads h, x and w
    return h * S


def returns_what_it_reads(x, w):
    return np.exp(x * w)  # the backward reads the value it returns


def reads_a_view(x, w):
    v = x[1:]
    return np.sum(np.sin(v * w[1:])) + x * w


def reads_a_dict(p, w):
    return np.sin(p["a"] * w) * p["b"]


class Layer:
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        return np.sin(x * self.W) * x


def with_aux(x, w):
    y = np.exp(x * w)
    return y, y


# (function, wrt, how to build (args, the array a write may target))
def _case_args(name, rng):
    x = rng.normal(size=3) * 0.5
    w = rng.normal(size=3) * 0.5
    if name == "reads_a_dict":
        return reads_a_dict, 1, ({"a": x, "b": rng.normal(size=3)}, w)
    if name == "reads_an_object":  # a method: self.W is read through the bound object
        layer = Layer(w)
        return layer.forward, 0, (x, layer)
    return globals()[name], (0, 1), (x, w)


FUNCTIONS = [
    "reads_everything",
    "returns_what_it_reads",
    "reads_a_view",
    "reads_a_dict",
    "reads_an_object",
    "uses_closed_over",
    "with_aux",
]


def _targets(name, args, value, aux):
    """The arrays the caller holds after the forward and may write into."""
    out = {"value": value}
    if aux is not None:
        out["aux"] = aux
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            out[f"arg{i}"] = a
            out[f"arg{i}[1:]"] = a[1:]
        elif isinstance(a, dict):
            out.update({f"arg{i}[{k!r}]": v for k, v in a.items()})
        elif isinstance(a, Layer):
            out[f"arg{i}.W"] = a.W
    if name == "reads_everything":
        out["S"] = S
    if name == "uses_closed_over":
        out["C"] = C
    return out


WRITES = {
    "+=": lambda a: a.__iadd__(1.5),
    "*=": lambda a: a.__imul__(-2.0),
    "[0] =": lambda a: a.__setitem__(0, 7.0),
    "[:] = 0": lambda a: a.__setitem__(slice(None), 0.0),
}


def _fresh(args):
    return [
        {k: v.copy() for k, v in a.items()}
        if isinstance(a, dict)
        else Layer(a.W.copy())
        if isinstance(a, Layer)
        else a.copy()
        for a in args
    ]


@pytest.mark.parametrize("name", FUNCTIONS)
@given(
    seed=st.integers(0, 2**32 - 1), which=st.integers(0, 50), write=st.sampled_from(list(WRITES))
)
def test_a_write_after_the_forward_never_reaches_the_pullback(name, seed, which, write):
    rng = np.random.default_rng(seed)
    f, wrt, args = _case_args(name, rng)
    held = args  # what the caller holds: for a method, the object too
    args = args[:1] if name == "reads_an_object" else args
    has_aux = name == "with_aux"
    saved_globals = S.copy(), C.copy()
    before = _fresh(held)  # the data the forward sees, kept apart
    oracle = f
    if name == "reads_an_object":
        oracle, before = before[1].forward, before[:1]
    vf = sg.vjp(f, wrt=wrt, has_aux=has_aux)
    result = vf(*args)
    value, pullback, aux = result if has_aux else (*result, None)
    ct = rng.normal(size=np.shape(value))
    targets = _targets(name, held, value, aux)
    target = list(targets)[which % len(targets)]
    try:
        WRITES[write](targets[target])
        got = pullback(ct)
    finally:
        S[:], C[:] = saved_globals
    plain = (lambda *a: oracle(*a)[0]) if has_aux else oracle
    for k, i in enumerate(wrt if isinstance(wrt, tuple) else (wrt,)):
        want = fd_vjp(plain, before, i, ct)
        g = got[k] if isinstance(wrt, tuple) else got
        assert_close(g, want, what=f"gradient of argument {i} after `{target} {write}`")


def test_arrays_the_forward_keeps_to_itself_are_not_copied():
    """The pullback of a function that reads only its own intermediates is returned as it is."""
    from sourcegrad.runtime.private import private_pullback

    x = np.array([0.1, 0.2])
    h = np.tanh(x)

    def pullback(g):
        return g * (1.0 - h * h)

    own = {"h"}
    assert private_pullback(pullback, ((x,), {}, h * 2.0), own) is pullback
    again = private_pullback(pullback, ((h,), {}, None), own)  # now h is an argument
    assert again is not pullback
    h[:] = 0.0
    assert_close(again(np.ones(2)), 1.0 - np.tanh(x) ** 2)
