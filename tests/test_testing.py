"""``sourcegrad.testing``: ``check_grad`` on every kind of argument ``grad`` accepts, finite
differences of structured arguments, and the hypothesis settings for gradient tests."""

import dataclasses

import hypothesis
import numpy as np
import pytest
from hypothesis import given

import sourcegrad as sg
from sourcegrad.testing import GradientMismatch, arrays, numerical_grad

W = np.array([[0.5, -1.0], [0.25, 2.0]])
B = np.array([0.1, -0.3])
X = np.array([[1.0, 2.0], [-0.5, 0.3], [0.7, -1.2]])
V = np.array([[0.3, -0.2, 0.1], [0.4, 0.5, -0.6]])  # a second layer of another shape


def net(params, x):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.sum(h * h) * params["scale"]


def layers(ws, x):
    h = x
    for w in ws:
        h = np.tanh(h @ w)
    return np.sum(h * h)


def pair(wb, x):
    w, b = wb
    return np.sum(np.tanh(x @ w + b) ** 2)


class Doubled(sg.Function):
    """d/dx of 2x, with a backward that is wrong by a factor of 3/2 (for the mismatch tests)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 3.0


def wrong_in_b(params, x):
    return np.sum(np.tanh(x @ params["w"]) + Doubled.apply(params["b"]))


@pytest.mark.parametrize(
    "f, arg",
    [
        (net, {"w": W, "b": B, "scale": 1.5}),
        (layers, [W, V]),
        (layers, (W, V)),
        (pair, (W, B)),
        (net, {"w": W.astype(np.float32), "b": B.astype(np.float32), "scale": 1.5}),
    ],
)
def test_check_grad_accepts_every_structure_grad_does(f, arg):
    g = sg.check_grad(f, arg, X)
    assert type(g) is type(arg)


def test_check_grad_names_the_wrong_entry_of_a_dict():
    with pytest.raises(GradientMismatch, match=r"with respect to \"params\['b'\]\"") as info:
        sg.check_grad(wrong_in_b, {"w": W, "b": B}, X)
    assert "worst entry params['b'][" in str(info.value)


def test_check_grad_of_a_structure_with_a_second_argument():
    def f(params, scale):
        return np.sum(params[0] * params[1]) * scale

    g = sg.check_grad(f, [W, W * 2], 3.0, wrt=(0, 1))
    assert isinstance(g[0], list) and isinstance(g[1], float)


def test_numerical_grad_of_a_structure_has_its_structure():
    num = numerical_grad(net, [{"w": W, "b": B, "scale": 1.5}, X], 0)
    assert set(num) == {"w", "b", "scale"} and isinstance(num["scale"], float)
    want = sg.grad(net)({"w": W, "b": B, "scale": 1.5}, X)
    for k in num:
        np.testing.assert_allclose(num[k], want[k], rtol=1e-5, atol=1e-7)


def test_numerical_grad_leaves_the_arguments_alone():
    params = {"w": W.copy(), "b": B.copy(), "scale": 1.5}
    numerical_grad(net, [params, X], 0)
    np.testing.assert_array_equal(params["w"], W)
    np.testing.assert_array_equal(params["b"], B)


@pytest.mark.parametrize(
    "a, g, message",
    [
        ({"w": W}, {"v": W}, "structured as {'v': ndarray}, the argument as {'w': ndarray}"),
        ([W, W], [W], "structured as [ndarray], the argument as [ndarray, ndarray]"),
        ((W,), [W], "structured as [ndarray], the argument as (ndarray,)"),
    ],
)
def test_a_gradient_of_another_structure_is_a_mismatch(a, g, message):
    from sourcegrad.testing import _check_structure

    with pytest.raises(GradientMismatch) as info:
        _check_structure("p", a, g)
    assert message in str(info.value)


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    width: int = 2  # a static field: carried over, not checked


def layer_loss(p, x):
    return np.sum(np.tanh(x * p.w + p.b)) * p.width


def test_check_grad_of_a_dataclass_argument():
    g = sg.check_grad(layer_loss, Layer(np.array([0.5, -1.0]), 0.3), np.array([1.0, 2.0]))
    assert isinstance(g, Layer) and g.width == 2 and isinstance(g.b, float)


def test_check_grad_names_the_wrong_field_of_a_dataclass(monkeypatch):
    real = sg.grad

    def off_by_one(f, wrt=0):
        df = real(f, wrt=wrt)

        class Off:
            names, positions = df.names, df.positions

            def __call__(self, *args):
                g = df(*args)
                return dataclasses.replace(g, b=g.b + 1.0)

        return Off()

    monkeypatch.setattr(sg, "grad", off_by_one)
    monkeypatch.setattr("sourcegrad.api.grad", off_by_one, raising=False)
    with pytest.raises(GradientMismatch, match=r"p\['b'\]"):
        sg.testing.check_grad(layer_loss, Layer(np.array([0.5, -1.0]), 0.3), np.array([1.0, 2.0]))


# ---- hypothesis settings --------------------------------------------------------------------------


def test_settings_have_no_deadline_and_are_a_profile():
    assert sg.testing.settings.deadline is None
    assert hypothesis.settings.get_profile(sg.testing.PROFILE).deadline is None
    assert "settings" in sg.testing.__all__


def test_the_settings_apply_to_a_property_test():
    calls = []

    @given(arrays(shape=(2, 2)))
    @sg.testing.settings
    def check(w):
        calls.append(w.shape)
        sg.check_grad(net, {"w": w, "b": B, "scale": 1.0}, X)

    check()
    assert calls and set(calls) == {(2, 2)}


# ---- check_jvp and check_hvp ------------------------------------------------------------------------


def looped_loss(w, x):
    h = np.tanh(x @ w)
    for i in range(2):
        h = np.sin(h) * 1.5
    return np.sum(h**2)


@given(arrays(shape=(2, 2)), arrays(shape=(3, 2)), arrays(shape=(2, 2)))
@sg.testing.settings
def test_check_jvp_and_check_hvp_pass_on_correct_code(w, x, t):
    value, tangent = sg.testing.check_jvp(looped_loss, w, X[:, :2] + x, tangent=t)
    assert np.ndim(tangent) == 0 and value == looped_loss(w, X[:, :2] + x)
    hv = sg.testing.check_hvp(looped_loss, w, X[:, :2] + x, v=t)
    assert hv.shape == w.shape


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_check_jvp_and_check_hvp_of_several_arguments_with_random_directions(dtype):
    w, x = W.astype(dtype), X[:, :2].astype(dtype)
    value, tangent = sg.testing.check_jvp(looped_loss, w, x, wrt=(0, 1))
    hw, hx = sg.testing.check_hvp(looped_loss, w, x, wrt=(0, 1))
    assert hw.dtype == dtype and hx.shape == x.shape


def test_check_jvp_of_a_vector_valued_function_and_a_dict():
    sg.testing.check_jvp(lambda w: np.tanh(X @ w), W)
    sg.testing.check_jvp(net, {"w": W, "b": B, "scale": 1.5}, X)


class WrongTangent(sg.Function):
    """2x, whose jvp is wrong by a factor of 3/2 (its backward is right)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0

    @staticmethod
    def jvp(ctx, t):
        return t * 3.0


def uses_wrong_tangent(w):
    return np.sum(np.sin(WrongTangent.apply(w)))


def test_check_jvp_reports_a_wrong_tangent_rule_with_a_diff():
    sg.check_grad(uses_wrong_tangent, B)  # the reverse rule is right
    with pytest.raises(
        GradientMismatch,
        match=r"(?s)tangent of uses_wrong_tangent .*worst entry tangent: "
        r"sourcegrad .*finite differences .*\|diff\|",
    ):
        sg.testing.check_jvp(uses_wrong_tangent, B)


class _Cube:
    """A library function with no source (a callable object): its rules are registered."""

    def __call__(self, x):
        return x**3


cube = _Cube()


@sg.adjoint(cube)
def _(y, x):
    d[x] += d[y] * 2.0 * x * x  # noqa: F821  (wrong: the slope is 3 x ** 2)


def uses_cube(w):
    return np.sum(cube(w) * w)


def test_check_hvp_reports_a_wrong_rule_with_a_diff(monkeypatch):
    from sourcegrad.transforms.rules import tangents as TR
    from sourcegrad.transforms.templates import parse_template

    right_tangent = parse_template(
        "d[y] += d[x] * 3.0 * x * x", ["y", "x"], {}, TR.TANGENT_NAMESPACE, "cube"
    )
    monkeypatch.setitem(TR.TEMPLATES, cube, right_tangent)
    sg.testing.check_jvp(uses_cube, B)  # forward mode is right
    with pytest.raises(
        GradientMismatch, match=r"(?s)Hessian-vector product of uses_cube for 'w'.*worst entry"
    ):
        sg.testing.check_hvp(uses_cube, B)


def test_the_readme_lines_for_check_jvp_and_check_hvp_run(tmp_path):
    from .test_readme import code_blocks, run_python, section

    snippets = code_blocks(section("### Testing your own gradients"), "python")
    # the property test's loss, x and y, a w, then the lines
    script = (
        snippets[0]
        + "\nw = np.linspace(-1.0, 1.0, 12).reshape(3, 4)\n"
        + snippets[1]
        + "\nprint('checked')\n"
    )
    proc = run_python(script, tmp_path)
    assert proc.returncode == 0 and "checked" in proc.stdout, proc.stderr
