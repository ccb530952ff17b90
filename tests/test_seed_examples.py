"""The seeds' custom ReLU, no_grad and profiler examples give the tutorial's numbers."""

import importlib.util
import os

import numpy as np

import sourcegrad as sg

from .oracle import assert_close, fd_grad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name):
    spec = importlib.util.spec_from_file_location(
        f"_seed_example_{name}", os.path.join(ROOT, "examples", f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_custom_relu_gradient_equals_the_plain_relu_and_finite_differences():
    ex = load("custom_relu")
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((6, 4)), rng.standard_normal((4, 2))
    x, y = rng.standard_normal((5, 6)), rng.standard_normal((5, 2))
    value, (g1, g2) = ex.loss_and_grads(w1, w2, x, y)

    def plain(w1, w2, x, y):
        return np.sum((np.maximum(x.dot(w1), 0).dot(w2) - y) ** 2)

    assert np.isclose(value, plain(w1, w2, x, y))
    assert_close(g1, fd_grad(plain, (w1, w2, x, y), 0), rtol=1e-4, atol=1e-5)
    assert_close(g2, fd_grad(plain, (w1, w2, x, y), 1), rtol=1e-4, atol=1e-5)


def test_custom_relu_trains_the_two_layer_network():
    ex = load("custom_relu")
    history = ex.train(steps=60, log_every=0)
    assert history[-1] < 1e-2 * history[0]


def test_no_grad_block_and_stop_gradient_hold_values_constant():
    ex = load("no_grad")
    x = np.ones((3, 3))
    g, g_stopped = ex.gradients(x)
    z = 3 * (x + 2) ** 2
    expected = 2 * z * 6 * (x + 2)  # h * dz/dx with h = 2 z held constant
    assert_close(g, expected)
    assert_close(g_stopped, expected)


def test_profiler_example_names_generated_statements_and_user_lines():
    ex = load("profiler")
    assert np.allclose(sg.grad(ex.out)(np.ones((3, 3))), 128.0 / 3.0)
    prof = ex.profile(n=20, repeats=3)
    rows = prof.rows()
    assert rows, "the profile recorded nothing"
    assert any(where.startswith("profiler.py:") for _, where, _, _, _ in rows)
    assert all(calls >= 3 for _, _, calls, _, _ in rows)
    assert "self time" in prof.table()


def test_two_layer_gpu_example_falls_back_to_numpy_and_trains():
    ex = load("two_layer_gpu")
    xp = ex.array_library()
    losses = ex.train(xp, steps=50, log_every=0)
    assert losses[-1] < 0.1 * losses[0]
