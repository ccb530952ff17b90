"""A value that cannot be differentiated is told the fix for its kind: an int array ``astype``, a
torch tensor ``.numpy()``, a dataclass with no float field, an unregistered object
``register_structure``."""

import dataclasses
import types

import numpy as np
import pytest

import sourcegrad as sg


def f(x):
    return 1.0


@dataclasses.dataclass
class Params:
    w: np.ndarray


class Model:
    def __init__(self):
        self.w = np.ones(2)


def _torch_like(dtype_name):
    """An object of a module named ``torch`` with a non-numpy dtype, as a torch tensor has (torch
    is not needed to test the message)."""
    module = types.ModuleType("torch")
    dtype = type("dtype", (), {"__repr__": lambda self: f"torch.{dtype_name}"})()
    tensor_type = type(
        "Tensor",
        (),
        {
            "__module__": "torch",
            "dtype": dtype,
            "shape": (3,),
            "__array__": lambda self, *a, **k: np.ones(3),
        },
    )
    module.Tensor = tensor_type
    return tensor_type()


CASES = [
    ("int_array", np.arange(3), ("an array of dtype int64", "x.astype(float)")),
    ("int", 3, ("an int", "float(x)")),
    ("bool", True, ("a bool", "float(x)")),
    (
        "int_in_a_dict",
        {"w": np.ones(2), "n": [np.ones(2), 3]},
        ("x['n'][1] is an int", "float(x['n'][1])"),
    ),
    (
        "int_array_in_a_list",
        [np.ones(2), np.arange(2)],
        ("x[1] is an array of dtype int64", "x[1].astype(float)"),
    ),
    ("empty", [], ("an empty list", "nothing in it to differentiate")),
    (
        "torch_tensor",
        _torch_like("float32"),
        ("a torch.Tensor of dtype torch.float32", "x.detach().cpu().numpy()"),
    ),
    (
        "dataclass_without_floats",
        Params(np.arange(2)),
        ("a Params dataclass", "none of its fields holds float values"),
    ),
    (
        "object",
        Model(),
        ("a Model object", "register_structure(Model", "pass the arrays it holds as arguments"),
    ),
    ("none", None, ("a NoneType", "leave x out of wrt")),
    ("none_in_a_tuple", (np.ones(2), None), ("x[1] is a NoneType", "outside x")),
]


@pytest.mark.parametrize("value, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_value_that_cannot_be_differentiated_is_told_its_fix(value, expected):
    with pytest.raises(sg.WrtError) as info:
        sg.grad(f)(value)
    message = str(info.value)
    assert message.startswith("cannot differentiate f with respect to 'x': it is ")
    for part in expected:
        assert part in message
    if not any("astype" in part for part in expected):
        assert "astype" not in message  # the fix for numpy integers and bools only


# ---- hints the compiler gives about the function itself ------------------------------------------
def doubles_argument(x):
    x *= 2.0
    return np.sum(x)


_cubed = sg.vjp(lambda x: x**3)


def calls_a_vjp(x):
    y, pullback = _cubed(x)
    return np.sum(y * x)


def stops_in_the_debugger(x):
    breakpoint()
    return np.sum(x * x)


def test_an_augmented_write_names_its_own_operator():
    with pytest.raises(sg.UnsupportedSyntaxError) as e:
        sg.grad(doubles_argument)(np.ones(2))
    assert "*= on it" in str(e.value) and "x = x * ..." in str(e.value) and "+=" not in str(e.value)


def test_a_vjp_called_inside_a_differentiated_function_says_only_gradients_differentiate_again():
    with pytest.raises(sg.UnsupportedSyntaxError, match="only gradients") as e:
        sg.grad(calls_a_vjp)(np.ones(2))
    assert (
        "adjoint" not in str(e.value) and e.value.lineno == calls_a_vjp.__code__.co_firstlineno + 1
    )


def test_breakpoint_runs_in_the_forward(monkeypatch):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    assert np.allclose(sg.grad(stops_in_the_debugger)(np.array([1.0, 2.0])), [2.0, 4.0])
