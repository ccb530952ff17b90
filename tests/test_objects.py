"""Objects as parameters and in methods: dataclasses, namedtuples and registered classes read by
attribute (``p.w``), bound methods reading ``self``'s attributes and calling its methods, and the
named fields of numpy's namedtuple results (``np.linalg.svd(a).S``). Each gradient is checked
against central finite differences, leaf by leaf, in both code paths (``specialize=False`` and
the default); a gradient has its argument's structure (a dataclass of gradients for a dataclass,
its non-float fields carried over unchanged)."""

import copy
import dataclasses
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, strategies as st

import sourcegrad as sg
from sourcegrad.errors import UnsupportedSyntaxError, UnsupportedValueError, WrtError

from .oracle import assert_close, fd_grad

RNG = np.random.default_rng(7)
X = RNG.normal(size=(4, 3))


# ---- the oracle: finite differences leaf by leaf, through containers and objects ------------------
def _is_float_tree(v):
    if type(v) is float or (isinstance(v, np.ndarray) and v.dtype.kind == "f"):
        return True
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return bool(v) and all(_is_float_tree(x) for x in v)
    if hasattr(v, "_fields") or dataclasses.is_dataclass(v) or isinstance(v, Linear):
        return any(_is_float_tree(x) for x in _attrs(v).values())
    return False


def _attrs(a):
    if hasattr(a, "_fields"):
        return a._asdict()
    if dataclasses.is_dataclass(a):
        return {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
    return {"w": a.w, "b": a.b, "act": a.act}  # Linear


def _with(a, k, v):
    if hasattr(a, "_fields"):
        return a._replace(**{k: v})
    new = copy.copy(a)
    object.__setattr__(new, k, v)
    return new


def _fd_leaves(g, a):
    if isinstance(a, dict):
        return {k: _fd_leaves(lambda v, k=k: g({**a, k: v}), a[k]) for k in a}
    if isinstance(a, list):
        return [_fd_leaves(lambda v, j=j: g(a[:j] + [v] + a[j + 1 :]), a[j]) for j in range(len(a))]
    if hasattr(a, "_fields") or dataclasses.is_dataclass(a) or isinstance(a, Linear):
        out = a
        for k, v in _attrs(a).items():
            if _is_float_tree(v):
                out = _with(out, k, _fd_leaves(lambda x, k=k: g(_with(a, k, x)), v))
        return out
    return fd_grad(g, (a,), 0)


def _fd(f, args, i):
    return _fd_leaves(lambda a: f(*args[:i], a, *args[i + 1 :]), args[i])


def _assert_tree(got, want, what):
    if isinstance(want, dict):
        assert type(got) is dict and set(got) == set(want), what
        for k in want:
            _assert_tree(got[k], want[k], f"{what}[{k!r}]")
    elif isinstance(want, list):
        assert type(got) is list and len(got) == len(want), what
        for j, (g, w) in enumerate(zip(got, want)):
            _assert_tree(g, w, f"{what}[{j}]")
    elif hasattr(want, "_fields") or dataclasses.is_dataclass(want) or isinstance(want, Linear):
        assert type(got) is type(want), (
            f"{what}: a {type(got).__name__}, not a {type(want).__name__}"
        )
        for k, w in _attrs(want).items():
            if _is_float_tree(w):
                _assert_tree(_attrs(got)[k], w, f"{what}.{k}")
            else:
                assert _attrs(got)[k] is w, f"{what}.{k}: a static field is carried over unchanged"
    else:
        assert type(got) is type(want) or isinstance(want, np.ndarray), (
            f"{what}: {type(got)} for {type(want)}"
        )
        assert_close(got, want, what=what)


def check(f, args, wrt=0, argnums=None):
    """grad(f, wrt) in both code paths against finite differences; ``argnums``: the positions in
    ``args`` that ``wrt`` selects (a bound method's wrt counts after self)."""
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    argnums = argnums if argnums is not None else wrts
    fn = f.__func__ if hasattr(f, "__func__") else f
    full = ((f.__self__,) + tuple(args)) if hasattr(f, "__self__") else tuple(args)
    shift = 1 if hasattr(f, "__self__") else 0
    for specialize in (False, True):
        got = sg.grad(f, wrt=wrt, specialize=specialize)(*args)
        got = got if isinstance(wrt, tuple) else (got,)
        for i, gi in zip(argnums, got):
            _assert_tree(
                gi, _fd(fn, full, i + shift), f"{fn.__name__} d/d{i} (specialize={specialize})"
            )


# ---- the objects ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: np.ndarray
    scale: float = 0.5  # a float field: differentiated
    steps: int = 2  # an int field: static, carried over
    act: str = "tanh"  # static


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    c: float


@dataclasses.dataclass
class Net:
    enc: Params
    layers: list
    head: np.ndarray
    note: object = None


class Pair(NamedTuple):
    w: np.ndarray
    b: np.ndarray


class Tagged(NamedTuple):
    w: np.ndarray
    n: int


class Linear:
    """A plain class, differentiable once registered."""

    def __init__(self, w, b, act="tanh"):
        self.w, self.b, self.act = w, b, act


sg.register_structure(
    Linear, lambda m: ({"w": m.w, "b": m.b}, m.act), lambda act, ch: Linear(ch["w"], ch["b"], act)
)


def _params():
    return Params(RNG.normal(size=(3, 2)), RNG.normal(size=2), 0.7, 2, "tanh")


def _net():
    return Net(
        _params(), [RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2))], RNG.normal(size=2), "v1"
    )


# ---- functions of objects -------------------------------------------------------------------------
def dense(p, x):
    return np.sum(np.tanh(x @ p.w + p.b) ** 2) * p.scale


def uses_static_fields(p, x):
    h = x @ p.w
    for _ in range(p.steps):
        h = np.tanh(h) * p.steps
    if p.act == "tanh":
        h = h + p.b
    return np.sum(h**2)


def frozen_fields(p, x):
    return np.sum(np.sin(x @ p.w)) * p.c


def layer(p, x):  # a module-level helper reading fields
    return np.tanh(x @ p.w + p.b)


def through_helper(p, x):
    return np.sum(layer(p, x) ** 2)


def field_in_loop(p, xs):
    total = 0.0
    for k in range(len(xs)):
        total = total + np.sum(np.tanh(xs[k] @ p.w) * p.b)
    return total


def nested(net, x):
    h = np.tanh(x @ net.enc.w + net.enc.b)
    for W in net.layers:
        h = np.tanh(h @ W)
    return np.sum(h * net.head)


def in_a_dict(params, x):
    return np.sum(np.tanh(x @ params["enc"].w) * params["out"])


def in_a_list(layers, x):
    h = x
    for p in layers:
        h = np.tanh(h @ p.w + p.b)
    return np.sum(h**2)


def namedtuple_fields(p, x):
    return np.sum((x @ p.w + p.b) ** 2) + np.sum(p[0])  # by name and by position


def namedtuple_static(p, x):
    return np.sum(x @ p.w) * p.n


def registered(m, x):
    h = x @ m.w + m.b
    if m.act == "tanh":
        h = np.tanh(h)
    return np.sum(h**2)


def object_and_array(p, x):
    return np.sum(np.tanh(x @ p.w) * p.b)


def _rows():
    p = _params()
    return [
        ("dense", dense, (p, X), 0),
        ("static_fields", uses_static_fields, (_params(), X), 0),
        ("frozen", frozen_fields, (Frozen(RNG.normal(size=(3, 2)), 1.5), X), 0),
        ("helper", through_helper, (_params(), X), 0),
        ("loop", field_in_loop, (_params(), [RNG.normal(size=(4, 3)) for _ in range(3)]), 0),
        ("nested", nested, (_net(), X), 0),
        ("in_a_dict", in_a_dict, ({"enc": _params(), "out": RNG.normal(size=2)}, X), 0),
        (
            "in_a_list",
            in_a_list,
            (
                [
                    Pair(RNG.normal(size=(3, 3)), RNG.normal(size=3)),
                    Pair(RNG.normal(size=(3, 2)), RNG.normal(size=2)),
                ],
                X,
            ),
            0,
        ),
        (
            "namedtuple",
            namedtuple_fields,
            (Pair(RNG.normal(size=(3, 2)), RNG.normal(size=2)), X),
            0,
        ),
        ("namedtuple_static", namedtuple_static, (Tagged(RNG.normal(size=(3, 2)), 3), X), 0),
        ("registered", registered, (Linear(RNG.normal(size=(3, 2)), RNG.normal(size=2)), X), 0),
        ("both", object_and_array, (_params(), X), (0, 1)),
        ("by_name", dense, (_params(), X), "p"),
        ("wrt_x_only", dense, (_params(), X), 1),
    ]


@pytest.mark.parametrize("f,args,wrt", [r[1:] for r in _rows()], ids=[r[0] for r in _rows()])
def test_objects_as_parameters(f, args, wrt):
    check(f, args, wrt, argnums=(0,) if wrt == "p" else None)


def test_gradient_is_the_same_dataclass_with_static_fields_carried_over():
    p = _params()
    g = sg.grad(dense)(p, X)
    assert type(g) is Params and g.steps is p.steps and g.act is p.act
    assert type(g.scale) is float and g.w.shape == p.w.shape
    value, (gp, gx) = sg.value_and_grad(dense, wrt=(0, 1))(p, X)
    assert np.isclose(value, dense(p, X)) and type(gp) is Params and gx.shape == X.shape
    value, pullback = sg.vjp(dense)(p, X)
    assert type(pullback(1.0)) is Params


def test_namedtuple_gradient_is_the_same_namedtuple():
    p = Tagged(RNG.normal(size=(3, 2)), 3)
    g = sg.grad(namedtuple_static)(p, X)
    assert type(g) is Tagged and g.n == 3


def test_registered_object_is_rebuilt_by_unflatten():
    m = Linear(RNG.normal(size=(3, 2)), RNG.normal(size=2), act="tanh")
    g = sg.grad(registered)(m, X)
    assert type(g) is Linear and g.act == "tanh" and g.b.shape == (2,)


@given(st.floats(0.1, 3.0), st.integers(1, 3))
@sg.testing.settings
def test_float_and_int_fields_of_any_value(scale, steps):
    p = Params(np.linspace(-1, 1, 6).reshape(3, 2), np.array([0.3, -0.2]), scale, steps)
    got = sg.grad(uses_static_fields)(p, X)
    want = _fd(uses_static_fields, (p, X), 0)
    _assert_tree(got, want, "uses_static_fields")


@given(sg.testing.arrays(shape=(3, 2)), sg.testing.arrays(shape=(2,)))
@sg.testing.settings
def test_dataclass_namedtuple_and_registered_gradients_for_any_values(w, b):
    for f, p in (
        (dense, Params(w, b, 0.9)),
        (namedtuple_fields, Pair(w, b)),
        (registered, Linear(w, b)),
    ):
        for specialize in (False, True):
            _assert_tree(sg.grad(f, specialize=specialize)(p, X), _fd(f, (p, X), 0), f.__name__)


def vector_valued(p, x):
    return np.tanh(x @ p.w) * p.scale


def test_vjp_of_a_vector_valued_function_of_a_dataclass():
    p = _params()
    ct = RNG.normal(size=(4, 2))
    value, pullback = sg.vjp(vector_valued)(p, X)
    got = pullback(ct)
    want = _fd_leaves(lambda q: float(np.sum(vector_valued(q, X) * ct)), p)
    _assert_tree(got, want, "vjp")


# ---- bound methods ----------------------------------------------------------------------------------
class Model:
    def __init__(self, w, alpha=0.5, n=2):
        self.w = w  # an array attribute: a constant when self is not differentiated
        self.alpha = alpha
        self.n = n

    def helper(self, z):
        return np.tanh(z) * self.alpha

    @staticmethod
    def square(z):
        return z * z

    def inner(self, x):
        return self.helper(x @ self.w) + self.alpha

    def loss(self, x, y):
        h = self.inner(x)
        for _ in range(self.n):
            h = self.helper(h @ y)
        return np.sum(self.square(h))


@dataclasses.dataclass
class Mlp:
    w1: np.ndarray
    w2: np.ndarray
    decay: float = 0.01

    def forward(self, x):
        return np.tanh(x @ self.w1) @ self.w2

    def loss(self, x):
        return np.sum(self.forward(x) ** 2) + self.decay * np.sum(self.w1**2)


def _model():
    return Model(RNG.normal(size=(3, 2)), 0.8, 2)


def _method_rows():
    y = RNG.normal(size=(2, 2))
    m = _model()
    return [
        ("method_wrt_x", m.loss, (X, y), 0, None),
        ("method_wrt_y", m.loss, (X, y), 1, None),
        ("method_wrt_name", m.loss, (X, y), "y", (1,)),
        ("method_wrt_both", m.loss, (X, y), (0, 1), None),
        (
            "dataclass_method",
            Mlp(RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))).loss,
            (X,),
            0,
            None,
        ),
    ]


@pytest.mark.parametrize(
    "f,args,wrt,argnums", [r[1:] for r in _method_rows()], ids=[r[0] for r in _method_rows()]
)
def test_bound_methods(f, args, wrt, argnums):
    check(f, args, wrt, argnums)


def test_unbound_method_differentiates_self_as_a_dataclass():
    m = Mlp(RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2)), 0.05)
    for specialize in (False, True):
        g = sg.grad(Mlp.loss, specialize=specialize)(m, X)
        _assert_tree(g, _fd(Mlp.loss, (m, X), 0), f"Mlp.loss d/dself (specialize={specialize})")


def test_hyperparameters_of_self_are_read_live():
    m = _model()
    y = RNG.normal(size=(2, 2))
    df = sg.grad(m.loss)
    first = df(X, y)
    m.alpha = 1.5
    m.w = m.w * 2.0
    assert_close(df(X, y), fd_grad(lambda x: m.loss(x, y), (X,), 0))
    assert not np.allclose(first, df(X, y))


class Base:
    def act(self, z):
        return np.tanh(z)

    def loss(self, x):
        return np.sum(self.act(x) ** 2)


class Overrides(Base):
    def act(self, z):
        return np.sin(z)


class Inherits(Base):
    pass


def test_a_method_inherited_from_a_base_class():
    check(Inherits().loss, (X,), 0)


def test_a_subclass_overriding_a_called_method_runs_the_override():
    # compiled for the object the call passes: its class's act (sin), never Base's (tanh)
    check(Overrides().loss, (X,), 0)
    g = sg.grad(Base.loss, wrt=1)
    assert_close(g(Base(), X), fd_grad(lambda x: Base().loss(x), (X,), 0))
    assert_close(g(Overrides(), X), fd_grad(lambda x: Overrides().loss(x), (X,), 0))


def test_a_subclass_overriding_a_method_of_code_compiled_without_its_object_is_refused():
    # the general code shown before any call is compiled from the class the method is defined
    # in; a self whose class overrides a method it calls is refused when it runs
    from sourcegrad.transforms import compile_gradient

    c = compile_gradient(Base.loss, ["x"], "value_and_grad")
    with pytest.raises(UnsupportedValueError, match="Overrides.act"):
        c.function(Overrides(), X)


# ---- a module-level object's method (or __call__) called inside the differentiated function ----------------------
MODEL = Model(RNG.normal(size=(3, 2)), 0.8, 2)


class Squares(Model):
    def loss(self, x, y):
        return np.sum(x * x) * self.alpha


@dataclasses.dataclass
class Dense:  # unhashable (eq=True): no rule can be registered for it
    w: np.ndarray

    def __call__(self, x):
        return np.tanh(x @ self.w)


LAYER = Dense(RNG.normal(size=(3, 3)))


def uses_a_model(x, y):
    return MODEL.loss(x, y) + np.sum(MODEL.helper(LAYER(x)) * x)


@given(
    x=st.lists(st.floats(-2, 2), min_size=12, max_size=12),
    y=st.lists(st.floats(-2, 2), min_size=4, max_size=4),
)
def test_a_module_level_objects_method_is_inlined(x, y):
    args = (np.array(x).reshape(4, 3), np.array(y).reshape(2, 2))
    check(uses_a_model, args, (0, 1))


def test_a_module_level_objects_attributes_and_class_are_read_live(monkeypatch):
    y = RNG.normal(size=(2, 2))
    g = sg.grad(uses_a_model)
    g(X, y)
    monkeypatch.setattr(MODEL, "alpha", 1.7)  # an attribute changed: read at run time
    assert_close(g(X, y), fd_grad(uses_a_model, (X, y), 0))
    # the name rebound to an object whose class overrides the method: compiled again
    monkeypatch.setitem(globals(), "MODEL", Squares(MODEL.w, 0.3))
    assert_close(g(X, y), fd_grad(uses_a_model, (X, y), 0))


# ---- named fields of numpy's namedtuple results ------------------------------------------------------
C = RNG.normal(size=3)


def eigh_fields(b):
    a = b + b.T
    v = np.linalg.eigh(a).eigenvectors
    return np.sum(np.linalg.eigh(a).eigenvalues * C) + np.sum((v * v) @ C)


def eigh_unpacked(b):
    w, v = np.linalg.eigh(b + b.T)
    return np.sum(w * C) + np.sum((v * v) @ C)


def slogdet_fields(a):
    r = np.linalg.slogdet(a)  # a local holding the namedtuple: read by field at run time
    return r.logabsdet * r.sign + np.linalg.slogdet(a).logabsdet


def svd_fields(a):
    u = np.linalg.svd(a, full_matrices=False).U
    return (
        np.sum(np.linalg.svd(a).S * C) + np.sum((u * u) @ C) + np.sum(np.linalg.svd(a).Vh ** 2 * C)
    )


def qr_fields(a):
    q = np.linalg.qr(a).Q
    return np.sum(q[:, 0] * C) + np.sum(np.triu(np.linalg.qr(a).R) * C)


def _well_conditioned():
    return RNG.normal(size=(3, 3)) + 3.0 * np.eye(3)


@pytest.mark.parametrize(
    "f",
    [eigh_fields, eigh_unpacked, slogdet_fields, svd_fields, qr_fields],
    ids=lambda f: f.__name__,
)
def test_named_fields_of_library_results(f):
    check(
        f,
        (
            np.diag([1.0, 2.5, 4.0]) + 0.1 * RNG.normal(size=(3, 3))
            if f.__name__.startswith("eigh")
            else _well_conditioned(),
        ),
        0,
    )


# ---- refused -----------------------------------------------------------------------------------------
def writes_attribute(p, x):
    p.w = p.w * 2.0
    return np.sum(p.w)


def updates_attribute(p, x):
    p.b += 1.0
    return np.sum(p.b)


def writes_through_alias(p, x):
    w = p.w
    w[0] = 0.0
    return np.sum(w * 2.0)


def calls_method_of_parameter(p, x):
    return np.sum(p.forward(x))


def unknown_result_field(a):
    return np.sum(np.linalg.svd(a).singular_values)


def svd_without_uv(a):
    return np.sum(np.linalg.svd(a, compute_uv=False).S)


def field_of_helper_result(p, x):
    return np.sum(layer(p, x).w)


@pytest.mark.parametrize(
    "f,fragment,line_text",
    [
        (updates_attribute, "updates in place the array the object holds", "p.b += 1.0"),
        (writes_through_alias, "may share memory with the argument 'p'", "w[0] = 0.0"),
        (calls_method_of_parameter, "has no attribute 'forward'", "p.forward(x)"),
        (field_of_helper_result, "an attribute of a call's result", "layer(p, x).w"),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_refused_forms(f, fragment, line_text):
    with pytest.raises(UnsupportedSyntaxError) as info:
        sg.grad(f)(_params(), X)
    e = info.value
    assert fragment in str(e)
    assert e.filename.endswith("test_objects.py") and e.lineno == f.__code__.co_firstlineno + 1 + (
        f is writes_through_alias
    )
    assert line_text in e.text


@pytest.mark.parametrize(
    "f,fragment,line_text",
    [
        (unknown_result_field, "has no field 'singular_values'", "singular_values"),
        (svd_without_uv, "compute_uv", "compute_uv=False"),
    ],
)
def test_refused_result_fields(f, fragment, line_text):
    with pytest.raises(UnsupportedSyntaxError) as info:
        sg.grad(f)(_well_conditioned())
    e = info.value
    assert fragment in str(e) or "full_matrices, hermitian" in str(e)
    assert e.filename.endswith("test_objects.py") and e.lineno == f.__code__.co_firstlineno + 1
    assert line_text in e.text


class Plain:
    def __init__(self):
        self.w = np.ones(2)


@dataclasses.dataclass
class Transposed:
    T: np.ndarray


@dataclasses.dataclass
class Hyper:
    n: int
    name: str


@pytest.mark.parametrize(
    "value,fragments",
    [
        (Plain(), ("a Plain object", "register_structure(Plain", "make Plain a dataclass")),
        (Transposed(np.ones(2)), ("'T'", "rename the field")),
        (Hyper(3, "a"), ("a Hyper dataclass", "none of its fields holds float values")),
        ({"enc": Plain()}, ("x['enc'] is a Plain object", "register_structure")),
        (Params(np.ones((3, 2)), [np.ones(2), 3]), ("x.b[1] is an int",)),
    ],
)
def test_objects_that_cannot_be_differentiated_are_refused_with_the_fix(value, fragments):
    def f(x):
        return 1.0

    with pytest.raises(WrtError) as info:
        sg.grad(f)(value)
    for part in fragments:
        assert part in str(info.value)


@dataclasses.dataclass
class WithProperty:
    w: np.ndarray

    @property
    def doubled(self):
        return self.w * 2.0


def reads_property(p):
    return np.sum(p.doubled**2)


def test_a_property_is_inlined_as_a_method_is():
    # the gradient reaches the fields the getter reads
    p = WithProperty(np.array([0.5, -1.5]))
    for specialize in (False, True):
        g = sg.grad(reads_property, specialize=specialize)(p)
        assert type(g) is WithProperty
        assert_close(g.w, fd_grad(lambda w: reads_property(WithProperty(w)), (p.w,), 0))


def test_an_attribute_written_runs_on_the_object_and_is_read_back():
    # p.w = p.w * 2.0 changes the caller's object, as Python does; the read after it is the
    # value written, differentiated through it
    for specialize in (False, True):
        p = _params()
        w0 = p.w.copy()
        g = sg.grad(writes_attribute, specialize=specialize)(p, X)
        assert_close(p.w, 2.0 * w0)
        assert_close(g.w, np.full_like(w0, 2.0))


def test_a_property_of_an_object_not_differentiated_is_a_constant():
    def f(x, p):
        return np.sum(x * p.doubled)

    check(f, (np.array([1.0, 2.0]), WithProperty(np.array([0.5, -1.0]))), 0)


class Scaled:
    """Registered with ``w`` its only child; ``s`` (a float) and ``n`` (an int) are aux."""

    def __init__(self, w, s, n):
        self.w, self.s, self.n = w, s, n


sg.register_structure(
    Scaled, lambda m: ({"w": m.w}, (m.s, m.n)), lambda aux, ch: Scaled(ch["w"], *aux)
)


def reads_aux(m, x):
    return np.sum(x @ m.w) * m.n + np.sum(m.w) * m.s


def test_a_registered_object_reads_its_aux_as_constants_but_refuses_a_float_gradient_it_would_drop():
    m = Scaled(RNG.normal(size=(3, 2)), 0.5, 3)
    with pytest.raises(UnsupportedValueError, match=r"\.s of a Scaled"):
        sg.grad(reads_aux)(m, X)
    # an int attribute has no gradient to drop
    g = sg.grad(lambda m, x: np.sum(x @ m.w) * m.n)(m, X)
    assert type(g) is Scaled and g.n == 3 and g.s == 0.5
    assert_close(g.w, fd_grad(lambda w: np.sum(X @ w) * 3, (m.w,), 0))


def ignores_its_object(p, x):
    return np.sum(x**2)


def test_an_object_no_gradient_reaches_gets_zeros():
    p = _params()
    g = sg.grad(ignores_its_object)(p, X)
    assert type(g) is Params and np.all(g.w == 0) and g.scale == 0.0 and g.act == "tanh"


def test_a_method_of_a_class_defined_in_a_function_calls_its_methods():
    # the object's class is known from the call, wherever it is defined
    class Local:
        def helper(self, z):
            return np.sin(z) * 2.0

        def loss(self, x):
            return np.sum(self.helper(x))

    check(Local().loss, (X,), 0)
