"""Objects as people build models, and functions as values.

The model of ``tests/lang_objects_model.py`` (a ``Layer`` base class, ``Dense(Layer)`` with lazy
initialization and caches for a hand-written backward, activation classes with ``__call__`` and
``.fn``, a ``Sequential``, a loss class) is differentiated as it is written, with respect to its
input and with respect to the model itself; then each mechanism on its own: writes into
attributes (run on the live object, read back and differentiated through), calls through
attributes and containers, properties, static and class methods, validation helpers called for
what they check, and functions passed in, returned or held in dicts. Every gradient is checked
against central finite differences in both code paths (``specialize=False`` and the default);
what the compile decided from the arguments (an object's class, a function passed in) is
guarded, so changing it between calls compiles again and never runs stale code; what has no
meaning for a gradient is refused at its line."""

import copy
import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import MissingAdjointError, UnsupportedSyntaxError

from . import lang_objects_model as M
from .oracle import assert_close, fd_grad

RNG = np.random.default_rng(11)
X = RNG.normal(size=(5, 3))
Y = np.eye(3)[[0, 1, 2, 0, 1]]


def _both(f, *args, wrt=0):
    """``grad(f, wrt)(*args)`` in both code paths."""
    return [sg.grad(f, wrt=wrt, specialize=s)(*args) for s in (False, True)]


def _initialized(model=None):
    """A model whose layers have run once (their lazy initialization done), with biases away
    from zero (the ReLU and ELU kinks at 0 would make finite differences one-sided)."""
    m = model or M.Model()
    m.loss(X, Y)
    for layer in m.net.layers:
        layer.parameters["b"] = RNG.normal(size=layer.parameters["b"].shape)
    return m


# ---- the model, as written ----------------------------------------------------------------------
def test_the_model_differentiates_with_respect_to_its_input_from_its_first_call():
    for specialize in (False, True):
        m = M.Model()
        g = sg.grad(m.loss, specialize=specialize)
        first = g(X, Y)  # the layers initialize themselves in this call
        m2 = copy.deepcopy(m)
        assert_close(first, fd_grad(lambda x: copy.deepcopy(m2).loss(x, Y), (X,), 0))
        assert_close(g(X, Y), fd_grad(lambda x: copy.deepcopy(m).loss(x, Y), (X,), 0))


def test_the_forwards_writes_happen_on_the_live_objects():
    m = M.Model()
    sg.grad(m.loss)(X, Y)
    first, last = m.net.layers[0], m.net.layers[-1]
    assert first.is_initialized and first.n_in == 3 and m.calls == 1
    assert len(first.X) == 1 and first.X[0] is X  # appended, as Python appends
    assert len(first.derived["Z"]) == 1 and first.derived["Z"][0] is first.Z
    # the cached Z is the forward's value (an array), as a call of the model leaves it
    h = X
    for layer in m.net.layers[:-1]:
        h = layer.act_fn(h @ layer.W + layer.parameters["b"])
    assert_close(last.Z, h @ last.W + last.parameters["b"])
    sg.grad(m.loss)(X, Y)
    assert len(first.X) == 2 and m.calls == 2  # a later call appends again: nothing is undone


def _register_model():
    M.register(sg, M.Model, ["net"])
    M.register(sg, M.Sequential, ["layers"])
    M.register(sg, M.Dense, ["parameters", "act_fn"])
    M.register(sg, M.ELU, ["alpha"])
    M.register(sg, M.ReLU, [])
    M.register(sg, M.Tanh, [])


def test_the_model_differentiates_with_respect_to_itself():
    _register_model()
    m = _initialized()
    for g in _both(M.Model.loss, m, X, Y):
        assert type(g) is M.Model and type(g.net.layers[1]) is M.Dense
        for i, layer in enumerate(m.net.layers):
            for k in ("W", "b"):

                def f(v, i=i, k=k):
                    other = copy.deepcopy(m)
                    other.net.layers[i].parameters[k] = v
                    return other.loss(X, Y)

                want = fd_grad(f, (layer.parameters[k],), 0)
                assert_close(g.net.layers[i].parameters[k], want, what=f"layer {i} {k}")

        def with_alpha(a):
            other = copy.deepcopy(m)
            other.net.layers[1].act_fn.alpha = a
            return other.loss(X, Y)

        assert_close(g.net.layers[1].act_fn.alpha, fd_grad(with_alpha, (0.7,), 0))


class Holder:
    """Registered with ``w`` its only child: its ``act`` (an ELU, whose ``alpha`` is a float)
    is no child."""

    def __init__(self, w, act):
        self.w, self.act = w, act

    def loss(self, x):
        return np.sum(self.act(x @ self.w))


sg.register_structure(Holder, lambda h: ({"w": h.w}, h.act), lambda act, ch: Holder(ch["w"], act))


def test_a_gradient_reaching_a_plain_object_a_registered_one_holds_is_refused_not_dropped():
    h = Holder(RNG.normal(size=(3, 2)), M.ELU(0.5))
    with pytest.raises(sg.errors.UnsupportedValueError, match=r"\.act of a Holder"):
        sg.grad(Holder.loss)(h, X)
    g = sg.grad(Holder.loss)(Holder(h.w, M.Tanh()), X)  # no float there: nothing is dropped
    assert_close(g.w, fd_grad(lambda w: Holder(w, M.Tanh()).loss(X), (h.w,), 0))


def test_swapping_a_layers_activation_between_calls_compiles_again():
    m = _initialized()
    g = sg.grad(m.loss)
    g(X, Y)
    for act in (M.Tanh(), M.ELU(0.3), M.ReLU()):
        m.net.layers[0].act_fn = act  # a new class: never the code compiled for the old one
        assert_close(g(X, Y), fd_grad(lambda x: copy.deepcopy(m).loss(x, Y), (X,), 0))
    swapped = M.Model()  # another order of classes in the list
    swapped.net.layers = [M.Dense(4, M.ELU(0.2)), M.Dense(4, M.Tanh()), M.Dense(3, M.ReLU())]
    _initialized(swapped)
    assert_close(
        sg.grad(M.Model.loss, wrt=1)(swapped, X, Y),
        fd_grad(lambda x: copy.deepcopy(swapped).loss(x, Y), (X,), 0),
    )


MODEL = M.Model()


def loss_of_the_module_level_model(x):
    return MODEL.loss(x, Y)


def test_a_module_level_model_is_differentiated_through():
    _initialized(MODEL)
    for g in _both(loss_of_the_module_level_model, X):
        assert_close(g, fd_grad(lambda x: copy.deepcopy(MODEL).loss(x, Y), (X,), 0))


def test_super_forward_is_the_parents_method():
    m = M.Model()
    m.net.layers[1] = M.Scaled(4, M.ELU(0.7), seed=2)
    _initialized(m)
    for g in _both(m.loss, X, Y):
        assert_close(g, fd_grad(lambda x: copy.deepcopy(m).loss(x, Y), (X,), 0))


def test_a_validation_helper_runs_in_the_forward():
    m = _initialized()
    g = sg.grad(m.loss)
    with pytest.raises(AssertionError, match="y must be binary"):
        g(X, Y * 0.5)
    with pytest.raises(ValueError, match="X must be 2-D, got 1-D"):
        g(X[0], Y)


# ---- writes into attributes --------------------------------------------------------------------
class Pair:
    def run(self, x):
        self.a, self.b = np.sin(x), np.cos(x)
        setattr(self, "c", self.a * self.b)
        return np.sum(self.c + self.a)


class Cell:
    """An RNN cell keeping its state on itself: written in one step, read in the next."""

    def __init__(self, W):
        self.W = W
        self.h = None

    def step(self, x):
        self.h = np.tanh(x + self.h @ self.W)
        return self.h


def rnn(cell, xs):
    cell.h = np.zeros(xs.shape[1])
    for t in range(xs.shape[0]):
        cell.step(xs[t])
    return np.sum(cell.h**2)


class Cache:
    def __init__(self):
        self.hs = []
        self.count = 0

    def run(self, xs):
        self.hs = []
        for t in range(xs.shape[0]):
            self.hs.append(np.sin(xs[t]))
            self.count += 1
        return np.sum(np.stack(self.hs) ** 2)


class Lazy:
    def __init__(self):
        self.scale = None

    def run(self, x):
        if self.scale is None:
            self.scale = np.sum(x**2)
        return np.sum(x * self.scale)


def test_values_written_into_attributes_are_differentiated_when_read_back():
    for g in _both(Pair().run, X):
        assert_close(g, fd_grad(lambda x: Pair().run(x), (X,), 0))
    p = Pair()
    sg.grad(p.run)(X)
    assert_close(p.c, np.sin(X) * np.cos(X))  # the object holds the forward's values


sg.register_structure(Cell, lambda c: ({"W": c.W}, None), lambda aux, ch: Cell(ch["W"]))


def test_a_state_written_in_one_iteration_is_read_in_the_next():
    cell = Cell(RNG.normal(size=(3, 3)) * 0.5)
    for g in _both(rnn, cell, X, wrt=1):
        assert_close(g, fd_grad(lambda xs: rnn(cell, xs), (X,), 0))
    other = Cell(cell.W)
    rnn(other, X)
    assert_close(cell.h, other.h)  # the state the forward left
    for g in _both(rnn, cell, X):  # and with respect to the cell itself
        assert type(g) is Cell
        assert_close(g.W, fd_grad(lambda w: rnn(Cell(w), X), (cell.W,), 0))


def test_a_list_an_object_holds_is_appended_to_and_read_back():
    c = Cache()
    for g in _both(c.run, X):
        assert_close(g, fd_grad(lambda x: Cache().run(x), (X,), 0))
    assert len(c.hs) == X.shape[0] and c.count == 2 * X.shape[0]  # kept after the backward


def test_an_attribute_initialized_lazily_in_a_branch():
    # the first call computes the scale from x (its gradient flows through it), a later one
    # reads it as a constant
    for make in (Lazy, lambda: _ran(Lazy())):
        for specialize in (False, True):
            obj = make()
            before = copy.deepcopy(obj)
            g = sg.grad(obj.run, specialize=specialize)(X)
            assert_close(g, fd_grad(lambda x: copy.deepcopy(before).run(x), (X,), 0))
            assert obj.scale is not None


def _ran(obj):
    obj.run(X)
    return obj


class LazyCell:
    """Its state made on its first step: ``is None`` is decided per step, never from what the
    state held when the call started (the loop writes it)."""

    def __init__(self):
        self.h = None

    def step(self, x):
        if self.h is None:
            self.h = np.zeros(x.shape)
        self.h = np.tanh(x + 0.5 * self.h)
        return self.h


def lazy_rnn(cell, xs):
    for t in range(xs.shape[0]):
        cell.step(xs[t])
    return np.sum(cell.h**2)


def test_a_test_on_an_attribute_a_loop_writes_is_decided_per_iteration():
    for specialize in (False, True):
        for ran in (False, True):
            cell = LazyCell()
            if ran:
                lazy_rnn(cell, X)
            before = copy.deepcopy(cell)
            g = sg.grad(lazy_rnn, wrt=1, specialize=specialize)(cell, X)
            assert_close(g, fd_grad(lambda xs: lazy_rnn(copy.deepcopy(before), xs), (X,), 0))
            after = copy.deepcopy(before)
            lazy_rnn(after, X)
            assert_close(cell.h, after.h)  # the forward leaves the state Python leaves


def test_one_object_at_two_places_and_two_objects_are_told_apart_by_the_guard():
    # a layer shared by two entries (weight tying) writes and reads one object; two layers two
    tied = M.Dense(3, M.Tanh(), seed=4)
    shared = M.Sequential([tied, tied])
    apart = M.Sequential([M.Dense(3, M.Tanh(), seed=4), M.Dense(3, M.Tanh(), seed=5)])

    def f(net, x):
        return np.sum(net.forward(x) ** 2)

    g = sg.grad(f, wrt=1)
    for net in (shared, apart, shared):
        net.forward(X)  # initialized
        for layer in net.layers:
            layer.parameters["b"] = RNG.normal(size=layer.parameters["b"].shape)
        assert_close(g(net, X), fd_grad(lambda x: f(copy.deepcopy(net), x), (X,), 0))


# ---- calls through attributes and containers ------------------------------------------------------
class Base:
    def forward(self, x):
        return np.tanh(x)


class Child(Base):
    def forward(self, x):
        return super().forward(x) * 2.0


class Sine(Base):
    def forward(self, x):
        return np.sin(x)


LAYERS = [Child(), Base()]


def through_module_list(x):
    h = x
    for layer in LAYERS:
        h = layer.forward(h)
    return np.sum(h)


def through_argument_list(layers, x):
    h = x
    for i, layer in enumerate(layers):
        h = layer.forward(h) * (i + 1)
    return np.sum(h)


def test_layers_of_different_classes_in_a_list():
    for g in _both(through_module_list, X):
        assert_close(g, fd_grad(through_module_list, (X,), 0))
    layers = [Base(), Child(), Sine()]
    for g in _both(through_argument_list, layers, X, wrt=1):
        assert_close(g, fd_grad(lambda x: through_argument_list(layers, x), (X,), 0))
    g = sg.grad(through_argument_list, wrt=1)
    for layers in ([Sine(), Base()], [Sine(), Base(), Child(), Child()]):
        assert_close(g(layers, X), fd_grad(lambda x: through_argument_list(layers, x), (X,), 0))


class Constrained:
    """A positive parameter held unconstrained: a property computes it."""

    FACTOR = 3.0

    def __init__(self, raw):
        self.raw = raw

    @property
    def value(self):
        return np.log1p(np.exp(self.raw))

    @staticmethod
    def square(z):
        return z * z

    @classmethod
    def scale(cls, z):
        return z * cls.FACTOR

    def loss(self, x):
        return (
            np.sum(self.square(self.value * x))
            + np.sum(Constrained.square(x) * self.value)
            + np.sum(self.scale(x))
            + np.sum(Constrained.scale(x) * self.value)
        )


sg.register_structure(
    Constrained, lambda p: ({"raw": p.raw}, None), lambda aux, ch: Constrained(ch["raw"])
)


def test_properties_static_and_class_methods():
    p = Constrained(RNG.normal(size=3))
    for g in _both(Constrained.loss, p, X):
        assert type(g) is Constrained
        assert_close(g.raw, fd_grad(lambda raw: Constrained(raw).loss(X), (p.raw,), 0))
    for g in _both(p.loss, X):
        assert_close(g, fd_grad(p.loss, (X,), 0))


# ---- functions as values -------------------------------------------------------------------------
def relu(z):
    return np.maximum(z, 0.0)


def swish(z):
    return z / (1.0 + np.exp(-z))


ACTS = {"relu": relu, "tanh": np.tanh, "swish": swish}


def get_activation(name):
    if name == "relu":
        return relu
    elif name == "tanh":
        return np.tanh
    return swish


def mlp(params, x, nonlinearity):
    h = x
    for W in params:
        h = nonlinearity(h @ W)
    return np.sum(h**2)


def returned_by_a_helper(x):
    act = get_activation("swish")
    return np.sum(act(x) * x)


def from_a_dict(x, name):
    return np.sum(ACTS[name](x) * x)


def draws_from(rs, shape, x):
    noise = rs.randn(*shape)
    return np.sum(np.tanh(x) * noise)


PARAMS = [RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(3, 2))]


@pytest.mark.parametrize(
    "nonlinearity", [np.tanh, swish, lambda t: np.sin(t) * 2.0], ids=["numpy", "def", "lambda"]
)
def test_a_function_passed_as_an_argument(nonlinearity):
    for g in _both(mlp, PARAMS, X, nonlinearity, wrt=1):
        assert_close(g, fd_grad(lambda x: mlp(PARAMS, x, nonlinearity), (X,), 0))


def test_a_function_passed_in_that_changes_compiles_again():
    g = sg.grad(mlp, wrt=1)
    for fn in (np.tanh, np.sin, swish, np.tanh):
        assert_close(g(PARAMS, X, fn), fd_grad(lambda x: mlp(PARAMS, x, fn), (X,), 0))
    # a lambda made afresh by the same line: the same code, not compiled again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(12):
            g(PARAMS, X, lambda t: np.tanh(t) * 2.0)


def test_a_function_returned_by_a_helper_or_held_in_a_dict():
    for g in _both(returned_by_a_helper, X):
        assert_close(g, fd_grad(returned_by_a_helper, (X,), 0))
    g = sg.grad(from_a_dict)
    for name in ("relu", "tanh", "swish", "relu"):
        assert_close(g(X, name), fd_grad(lambda x: from_a_dict(x, name), (X,), 0))


def test_a_method_of_a_library_object_passed_in_runs_as_a_constant():
    for specialize in (False, True):
        g = sg.grad(draws_from, wrt=2, specialize=specialize)
        got = g(np.random.RandomState(0), (5, 3), X)
        want = fd_grad(lambda x: draws_from(np.random.RandomState(0), (5, 3), x), (X,), 0)
        assert_close(got, want)


# ---- refused where they have no meaning for a gradient -------------------------------------------
def calls_an_array(x, w):
    return np.sum(w(x))


def writes_into_an_array(x):
    y = x * 2.0
    y.scale = 3.0
    return np.sum(y)


def breaks_out_of_a_loop_over_objects(layers, x):
    for layer in layers:
        x = layer.forward(x)
        if np.sum(x) > 0:
            break
    return np.sum(x)


class Opaque:
    def __init__(self):
        self.h = np.ones(3)

    def bumps(self, x):
        self.h += x
        return np.sum(self.h)

    def names_it(self, x, name):
        setattr(self, name + "_", x)
        return np.sum(x)


class Logged:
    def __init__(self, w, log=[]):  # noqa: B006 (the shared list is what is tested)
        self.w, self.log = w, log

    def forward(self, x):
        self.log.append(x)
        return np.tanh(x * self.w)


def appends_to_a_shared_list(layers, x):
    for layer in layers:
        x = layer.forward(x)
    return np.sum(np.stack(layers[0].log[-2:]))


class WithSetter:
    def __init__(self):
        self._scale = 1.0

    @property
    def scale(self):
        return self._scale

    @scale.setter
    def scale(self, v):
        self._scale = v

    def run(self, x):
        self.scale = np.sum(x)
        return np.sum(x) * self.scale


class Node:
    def __init__(self, v):
        self.v = v
        self.peer = None


def reads_through_an_unknown_object(node, x, pick):
    node.v = np.sin(x)
    other = node if np.sum(pick) > 0 else node.peer  # which one, decided by the data
    return np.sum(other.v)


def noise_into_a_parameter(rs, x):
    return np.sum(rs.randn(*x.shape) * x) + np.sum(rs.normal(x))


@pytest.mark.parametrize(
    "f,args,kind,fragment,line_text",
    [
        (calls_an_array, (X, X), UnsupportedSyntaxError, "can be called", "w(x)"),
        (writes_into_an_array, (X,), UnsupportedSyntaxError, "can be assigned to", "y.scale"),
        (
            breaks_out_of_a_loop_over_objects,
            ([Base(), Sine()], X),
            UnsupportedSyntaxError,
            "break, continue and return inside it are not supported",
            "for layer in layers",
        ),
        (Opaque().bumps, (np.ones(3),), UnsupportedSyntaxError, "updates in place", "self.h +="),
        (
            Opaque().names_it,
            (np.ones(3), "w"),
            UnsupportedSyntaxError,
            "must be known when the function is compiled",
            "setattr",
        ),
        (
            reads_through_an_unknown_object,
            (Node(np.ones((5, 3))), X, np.ones(1)),
            UnsupportedSyntaxError,
            "cannot tell whether this is that object",
            "other.v",
        ),
        (WithSetter().run, (X,), UnsupportedSyntaxError, "is a property", "self.scale ="),
        (
            appends_to_a_shared_list,
            ([Logged(0.5), Logged(2.0)], X),
            UnsupportedSyntaxError,
            "are one list",
            "def appends_to_a_shared_list",
        ),
        (
            noise_into_a_parameter,
            (np.random.RandomState(0), X),
            MissingAdjointError,
            "normal",
            "rs.normal(x)",
        ),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_refused_at_their_line(f, args, kind, fragment, line_text):
    wrt = (
        1
        if f
        in (
            breaks_out_of_a_loop_over_objects,
            noise_into_a_parameter,
            reads_through_an_unknown_object,
            appends_to_a_shared_list,
        )
        else 0
    )
    with pytest.raises(kind) as info:
        sg.grad(f, wrt=wrt)(*args)
    e = info.value
    assert fragment in str(e), str(e)
    assert e.filename.endswith("test_lang_objects.py"), e.filename
    assert line_text in e.text, e.text


def test_a_checkpointed_loop_does_not_write_attributes():
    cell = Cell(np.eye(3) * 0.5)
    with pytest.raises(UnsupportedSyntaxError, match="checkpointed loop") as info:
        sg.grad(rnn, wrt=1, checkpoint=True)(cell, X)
    assert "self.h = " in info.value.text


# ---- values: the forward computes what Python computes, and leaves the objects as Python does ----
def _value_rows():
    return [
        ("model", M.Model.loss, (M.Model(), X, Y), 1),
        ("pair", Pair.run, (Pair(), X), 1),
        ("rnn", rnn, (Cell(RNG.normal(size=(3, 3)) * 0.5), X), 1),
        ("lazy_rnn", lazy_rnn, (LazyCell(), X), 1),
        ("cache", Cache.run, (Cache(), X), 1),
        ("constrained", Constrained.loss, (Constrained(RNG.normal(size=3)), X), 1),
        ("layers", through_argument_list, ([Base(), Child(), Sine()], X), 1),
        ("mlp", mlp, (PARAMS, X, lambda t: np.sin(t) * 2.0), 1),
        ("dict", from_a_dict, (X, "swish"), 0),
        ("helper", returned_by_a_helper, (X,), 0),
    ]


def _state(obj):
    """What an object's attributes hold, arrays as lists (to compare two runs)."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [_state(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _state(v) for k, v in obj.items()}
    if hasattr(obj, "__dict__") and not callable(obj):
        return (type(obj).__name__, _state(vars(obj)))
    return obj if isinstance(obj, (int, float, str, type(None))) else type(obj).__name__


@pytest.mark.parametrize(
    "f,args,wrt", [r[1:] for r in _value_rows()], ids=[r[0] for r in _value_rows()]
)
def test_values_are_what_python_computes(f, args, wrt):
    for specialize in (False, True):
        mine, python = copy.deepcopy(args), copy.deepcopy(args)
        value, _ = sg.value_and_grad(f, wrt=wrt, specialize=specialize)(*mine)
        assert_close(value, f(*python), 1e-10, 1e-12, what="value")
        assert _state(mine) == _state(python)  # the objects, as the call leaves them


# ---- objects with the statement and call forms of the other lines of work ---------------------
class _StarLayer:
    def __init__(self, w):
        self.w = w

    def forward(self, h, *extra):
        out = np.tanh(h * self.w)
        for e in extra:
            out = out + e
        return out


class _StarNet:
    def __init__(self, layers, mode=None):
        self.layers = layers
        self.mode = mode
        self.calls = 0

    def loss(self, x, shift):
        self.calls += 1
        h = x
        for layer in self.layers:
            h = layer.forward(h, *shift)  # *shift: an argument's tuple, its length guarded
        else:
            h = h * 2.0
        if self.mode is None:  # decided from the object
            h = h + 1.0
        elif self.mode == "sq":
            h = h**2
        if (n := len(self.layers)) > 1:
            h = h / n
        first, *rest = self.parts(h)
        if np.sum(x) > 1e6:
            h.sort()  # refused where it runs: never, for these calls
        return np.sum(first * sum(rest))

    def parts(self, h):
        return h, h * 2.0, np.sin(h)


def _star_net_loss(net, x, shift):
    return net.loss(x, shift)


@pytest.mark.parametrize("mode", [None, "sq", "other"])
@pytest.mark.parametrize("count", [1, 2])
def test_objects_with_star_calls_for_else_walrus_and_a_deferred_refusal(mode, count):
    layers = [_StarLayer(0.5 + k) for k in range(count)]
    shift = (X * 0.1,)
    for specialize in (False, True):
        net = _StarNet(layers, mode)
        g = sg.value_and_grad(_star_net_loss, wrt=1, specialize=specialize)
        value, grad = g(net, X, shift)
        fresh = _StarNet(layers, mode)
        assert_close(value, _star_net_loss(fresh, X, shift))
        assert net.calls == fresh.calls == 1
        assert_close(
            grad, fd_grad(lambda x: _star_net_loss(_StarNet(layers, mode), x, shift), (X,), 0)
        )
        with pytest.raises(UnsupportedSyntaxError, match="sort"):
            g(net, X + 1e7, shift)
