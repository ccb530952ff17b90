"""Backend neutrality: the generated code runs unchanged on device arrays and never copies data to
the host behind the user's back.

CI has no GPU, so the arrays are ``tests.devicearray.DeviceArray``: numpy underneath, cupy's
behaviour on the outside (numpy dispatch protocols only; ``np.asarray``, mixing host and device
arrays, and ``flags.writeable`` are refused; every ``bool``/``float``/``int``/``.item()`` of a 0-d
array -- a host synchronization -- is recorded). ``tests/test_gpu.py`` runs the same table on cupy.

For every row of ``CASES``:

1. the gradient (``value_and_grad``, or ``vjp`` with a device cotangent for a non-scalar function)
   of device inputs is a device array, leaf by leaf with the argument's structure, shape and dtype,
   and so is the value;
2. it equals the numpy gradient of the same inputs (the same compiled gradient object, on host
   arrays), and the value equals the function's own value;
3. host synchronizations: calling the user's function itself on the device inputs costs some
   (``if np.sum(x) > 0`` is one ``bool``; a ``while`` test is one per test); the gradient call,
   forward and backward together, must cost exactly as many, of the same kinds -- the backward
   sweep adds none;
4. the inputs are left as they were.

The functions are written as one writes for cupy: new arrays come from ``np.zeros_like(x)`` and
friends, which dispatch to the argument's module, never from ``np.zeros(shape)`` (a host array).
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import sourcegrad as sg

from .devicearray import DeviceArray, is_device, to_device, to_host, track_host_syncs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_example(name):
    """An example module (importing one only defines functions and lazy gradient objects)."""
    path = os.path.join(ROOT, "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_backend_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


two_layer = _load_example("two_layer")
autograd_basics = _load_example("autograd_basics")
dynamic_graph = _load_example("dynamic_graph")
custom_relu = _load_example("custom_relu")
no_grad_example = _load_example("no_grad")


# ---- the functions -------------------------------------------------------------------------------

# elementwise


def f_unary(x):
    return np.sum(
        np.tanh(np.sin(x) * np.exp(-x))
        + np.log1p(x * x)
        + np.sqrt(np.abs(x) + 1.0)
        + np.cos(x) ** 2
    )


def f_binary_broadcast(x, b, c):
    return np.sum((x * b - c) / (1.0 + b * b) + np.maximum(x, c) - np.minimum(b, 0.1) + x**2)


def f_power(x, p):
    return np.sum(np.power(x, p) + p**2.0 + 2.0**x)


def f_scalar_mean(x):
    return np.mean(2.0 * x - 3.0 / (x + 5.0))


# reductions


def f_reduce_axis(x):
    return (
        np.sum(np.sum(x, axis=0) ** 2)
        + np.sum(np.mean(x, axis=1, keepdims=True) * x)
        + np.sum(np.max(x, axis=1))
        + x.prod(axis=0).sum()
        + np.min(x, axis=(0, 1))
    )


def f_var_std(x):
    return np.sum(np.var(x, axis=0)) + x.std()


def f_cumsum(x, w):
    return np.sum(np.cumsum(x, axis=1) * w)


def f_norm(x):
    return np.linalg.norm(x)


def f_logsumexp(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0])


# linear algebra


def f_dot_matmul(x, w, v):
    return np.sum(np.tanh(x @ w).dot(v))


def f_batched_matmul(a, b):
    return np.sum((a @ b) ** 2)


def f_einsum(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b) ** 2) + np.einsum("ij,ij->", a, a)


def f_tensordot(a, b):
    return np.sum(np.tensordot(a, b, axes=2) ** 2)


def f_trace_diagonal(x):
    return np.trace(x) + np.sum(np.diagonal(x) ** 2)


# shape functions


def f_shapes(x, y):
    z = x.reshape(4, 3).T @ y
    return np.sum(np.swapaxes(z[None], 1, 2).squeeze(0) * 2.0) + np.sum(
        np.transpose(x, (1, 0)).ravel() ** 2
    )


def f_concat_stack(x, y, w):
    return np.sum(np.concatenate([x, y], axis=0) ** 2) + np.sum(np.stack([x, y], axis=1) * w)


def f_split(x):
    a, b = np.split(x, 2)
    return np.sum(a * 2.0) + np.sum(b**2)


def f_repeat_tile(x):
    return np.sum(x.repeat(2, axis=0) ** 2) + np.sum(np.tile(x, (2, 1)) * 3.0)


def f_flip_roll(x, w):
    return np.sum(np.roll(x, 1, axis=0) * w) + np.sum(np.flip(x, 1) * w)


# indexing and selection


def f_slices(x):
    return np.sum(x[1:, ::2] ** 2) + np.sum(x[0] * 3.0) + np.sum(x[..., None] * x[None, 0])


def f_int_index_repeats(x, idx):
    return np.sum(x[idx] ** 2)


def f_bool_mask(x):
    return np.sum(x[x > 0] ** 2)


def f_where(x):
    return np.sum(np.where(x > 0, x, 0.1 * x) ** 2)


def f_clip(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2) + np.sum(x.clip(-1.0, 1.0))


def f_sort(x, w):
    return np.sum(np.sort(x, axis=1) * w)


def f_take(x, idx):
    return np.sum(np.take(x, idx, axis=0) ** 2)


# control flow


def f_if(x):
    if np.sum(x) > 0:
        y = np.sin(x)
    else:
        y = x * x
    return np.sum(y)


def f_while(x):
    y = x * 2.0
    while np.linalg.norm(y) < 100.0:
        y = y * 2.0
    return np.sum(y**2)


def f_for_range(x, w):
    h = x
    for i in range(3):
        h = np.tanh(h @ w) + h
    return np.sum(h)


def f_for_rows(x):
    total = 0.0
    for row in x:
        total = total + np.sum(np.sin(row))
    return total


def f_break_early(x, w):
    h = x
    for i in range(6):
        h = np.tanh(h @ w)
        if i == 3:
            break
    return np.sum(h**2)


def f_data_break(x, w):
    h = x
    for i in range(10):
        h = h @ w
        if np.max(np.abs(h)) > 5.0:
            break
    return np.sum(h)


def f_early_return(x):
    if np.max(x) > 10.0:
        return np.sum(x)
    y = x * 3.0
    return np.sum(y**2)


def f_if_in_loop(x):
    h = x
    for i in range(3):
        if np.sum(h) > 0:
            h = np.sin(h) * 2.0
        else:
            h = h * h + 1.0
    return np.sum(h)


def f_ternary(x):
    y = np.sin(x) if np.mean(x) > 0 else np.cos(x)
    return np.sum(y)


# mutation


def f_setitem_loop(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * (i + 1.0)
    return np.sum(out**2)


def f_relu_mask(x, w):
    h = x @ w
    h[h < 0] = 0
    return np.sum(h**2)


def f_slice_iadd(x, v):
    a = x * 1.0
    a[1:3] += v
    return np.sum(a**2)


def f_name_iadd(x):
    acc = x * 0.0
    for i in range(3):
        acc += np.sin(x + i)
    return np.sum(acc)


# containers


def f_dict_params(params, x, y):
    h = np.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    return np.mean((pred - y) ** 2)


def f_list_arg(xs):
    return np.sum(xs[0] * xs[1]) + np.sum(xs[2] ** 2)


def f_list_append(x, w):
    hs = []
    h = x
    for i in range(3):
        h = np.tanh(h @ w)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2) + sum(np.sum(v) for v in hs)


# custom derivatives and gradient control


class MyReLU(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.maximum(x, 0.0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)


def f_custom_function(x, w):
    return np.sum(MyReLU.apply(x @ w) ** 2)


def f_stop_gradient(x):
    with sg.no_grad():
        scale = np.sum(x**2)
    return np.sum(x * sg.stop_gradient(x) * scale) + np.sum(x**3)


# more rule families (the runtime helpers behind them)


def f_elementwise_more(x, y):
    return np.sum(
        np.logaddexp(x, y)
        + np.arctan2(x, y)
        + np.hypot(x, y)
        + np.sinc(x)
        + np.expm1(x)
        + np.cbrt(y)
        + np.reciprocal(y)
        + np.square(x)
        + np.arcsinh(x)
        + np.deg2rad(x)
        + np.log2(y)
        + np.fmod(x, y)
    )


def f_extrema_ties(x):
    m = np.round(x)  # ties on purpose
    return (
        np.sum(np.max(m * x, axis=0))
        + np.sum(np.maximum(m, 0.0) * x)
        + np.sum(np.amin(x, axis=1, keepdims=True))
    )


def f_average_nansum(x, w):
    return (
        np.sum(np.average(x, axis=0, weights=w)) + np.nansum(x * x) + np.sum(np.nanmax(x, axis=1))
    )


def f_norm_ords(x, v):
    return (
        np.sum(np.linalg.norm(x, axis=1))
        + np.linalg.norm(v, ord=1)
        + np.linalg.norm(v, ord=np.inf)
        + np.linalg.norm(x, "fro")
    )


def f_linalg_dense(a, b):
    return np.sum(np.linalg.inv(a)) + np.linalg.det(a) + np.sum(np.linalg.solve(a, b) ** 2)


def f_outer_inner_kron(a, b, m):
    return (
        np.sum(np.outer(a, b) ** 2)
        + np.inner(a, a)
        + np.sum(np.kron(m, m) ** 2)
        + np.sum(np.cross(a, b) ** 2)
    )


def f_diag_tri(v, m):
    return (
        np.sum(np.diag(v) @ m)
        + np.sum(np.diag(m) ** 2)
        + np.sum(np.tril(m) * 2.0 + np.triu(m, 1) ** 2)
    )


def f_stack_family(x, y):
    h = np.hstack([x, y])
    v = np.vstack([x, y])
    c = np.column_stack([x[0], y[0]])
    e = np.expand_dims(x, 0)
    return (
        np.sum(h**2)
        + np.sum(v * 3.0)
        + np.sum(c**3)
        + np.sum(np.moveaxis(e, 0, 2) ** 2)
        + np.sum(np.broadcast_to(x[0], (4, 3)) ** 2)
        + np.sum(np.atleast_2d(x[0, 0]) * 2.0)
    )


PAD_WIDTH = ((1, 0), (0, 2))


def f_pad(x):
    return np.sum(np.pad(x, 1) ** 2) + np.sum(np.pad(x, PAD_WIDTH, mode="edge") ** 2)


def f_take_along_axis(x, idx):
    return np.sum(np.take_along_axis(x, idx, axis=1) ** 2)


def f_array_split(x):
    a, b, c = np.array_split(x, 3, axis=1)
    return np.sum(a**2) + np.sum(c * 3.0)


def f_take_flat_sort_flat(x, idx, w):
    return np.sum(np.take(x, idx) ** 2) + np.sum(np.sort(x, axis=None) * w)


def f_advanced_mixed(x, idx):
    return np.sum(x[idx, 1:] ** 2) + np.sum(x[:, idx[:2]] * 2.0) + np.sum(x[1, idx] ** 3)


def f_item_astype(x):
    return np.sum(x.astype(np.float32) ** 2) + x[0, 1].item() * 2.0


def f_prod_var_ddof(x):
    return (
        np.sum(np.prod(x, axis=1))
        + np.sum(np.var(x, axis=1, ddof=1))
        + np.std(x, axis=0).sum()
        + np.mean(x, axis=(0, 1))
    )


def f_rot_flip(x, w):
    return np.sum(np.rot90(x) * w.T) + np.sum(np.fliplr(x) * w) + np.sum(np.flipud(x) * w)


def f_mask_write_value(x, v):
    a = x * 2.0
    a[a > 0] = 0.5
    b = x * 1.0
    b[1] = v
    return np.sum(a**2) + np.sum(b**2)


# the examples (examples/rnn.py's rnn_loss starts from ``np.zeros(wh.shape[0])``, a host array,
# so on cupy the user's own forward would fail; this copy starts from ``np.zeros_like(b)``)


def rnn_loss(wx, wh, b, wy, sequences, targets):
    loss = 0.0
    for i in range(len(sequences)):
        xs = sequences[i]
        h = np.zeros_like(b)
        for t in range(xs.shape[0]):
            h = np.tanh(xs[t] @ wx + h @ wh + b)
        error = h @ wy - targets[i]
        loss = loss + np.sum(error**2)
    return loss / len(sequences)


# ---- the table -----------------------------------------------------------------------------------


def _n(rng, *shape):
    return rng.standard_normal(shape)


def _pos(rng, *shape):
    return rng.uniform(0.5, 2.0, shape)


# Known failures: sourcegrad code that breaks on device arrays, kept until that is fixed.
# Each row names the ones it hits. When one is fixed, delete its entry: the rows it marked
# then run for real (the marks are strict, so a fixed row that is still marked fails as XPASS).


@dataclass
class Case:
    id: str
    fn: Callable
    make: Callable  # rng -> tuple of host arguments
    wrt: Any = 0
    vjp: bool = False  # a non-scalar function: vjp with a random cotangent
    marks: list = field(default_factory=list)

    def param(self):
        return pytest.param(self, id=self.id, marks=self.marks)


CASES = [
    # elementwise
    Case("unary", f_unary, lambda r: (_n(r, 3, 4),)),
    Case(
        "binary_broadcast",
        f_binary_broadcast,
        lambda r: (_n(r, 3, 4), _n(r, 4), _n(r, 3, 1)),
        wrt=(0, 1, 2),
    ),
    Case("power", f_power, lambda r: (_pos(r, 3, 4), _n(r, 4)), wrt=(0, 1)),
    Case("scalar_mean", f_scalar_mean, lambda r: (_n(r, 2, 3),)),
    Case("float32", f_unary, lambda r: (_n(r, 3, 4).astype(np.float32),)),
    # reductions
    Case("reduce_axis", f_reduce_axis, lambda r: (_n(r, 3, 4),)),
    Case("var_std", f_var_std, lambda r: (_n(r, 3, 4),)),
    Case("cumsum", f_cumsum, lambda r: (_n(r, 3, 4), _n(r, 3, 4))),
    Case("norm", f_norm, lambda r: (_n(r, 3, 4),)),
    Case("logsumexp", f_logsumexp, lambda r: (_n(r, 3, 4),)),
    # linear algebra
    Case("dot_matmul", f_dot_matmul, lambda r: (_n(r, 5, 3), _n(r, 3, 4), _n(r, 4)), wrt=(0, 1, 2)),
    Case("batched_matmul", f_batched_matmul, lambda r: (_n(r, 2, 3, 4), _n(r, 4, 5)), wrt=(0, 1)),
    Case("einsum", f_einsum, lambda r: (_n(r, 3, 4), _n(r, 4, 2)), wrt=(0, 1)),
    Case("tensordot", f_tensordot, lambda r: (_n(r, 2, 3, 4), _n(r, 3, 4, 5)), wrt=(0, 1)),
    Case("trace_diagonal", f_trace_diagonal, lambda r: (_n(r, 4, 4),)),
    # shape functions
    Case("shapes", f_shapes, lambda r: (_n(r, 3, 4), _n(r, 4, 2)), wrt=(0, 1)),
    Case(
        "concat_stack",
        f_concat_stack,
        lambda r: (_n(r, 2, 3), _n(r, 2, 3), _n(r, 2, 2, 3)),
        wrt=(0, 1),
    ),
    Case("split", f_split, lambda r: (_n(r, 4, 3),)),
    Case("repeat_tile", f_repeat_tile, lambda r: (_n(r, 2, 3),)),
    Case("flip_roll", f_flip_roll, lambda r: (_n(r, 3, 4), _n(r, 3, 4))),
    # indexing and selection
    Case("slices", f_slices, lambda r: (_n(r, 3, 4),)),
    Case(
        "int_index_repeats", f_int_index_repeats, lambda r: (_n(r, 4, 3), np.array([0, 2, 0, 0, 3]))
    ),
    Case("bool_mask", f_bool_mask, lambda r: (_n(r, 3, 4),)),
    Case("where", f_where, lambda r: (_n(r, 3, 4),)),
    Case("clip", f_clip, lambda r: (_n(r, 3, 4),)),
    Case("sort", f_sort, lambda r: (_n(r, 3, 4), _n(r, 3, 4))),
    Case("take", f_take, lambda r: (_n(r, 4, 3), np.array([3, 1, 3]))),
    # control flow
    Case("if", f_if, lambda r: (_n(r, 3, 4),)),
    Case("while", f_while, lambda r: (_n(r, 3),)),
    Case("for_range", f_for_range, lambda r: (_n(r, 2, 3), _n(r, 3, 3) * 0.5), wrt=(0, 1)),
    Case("for_rows", f_for_rows, lambda r: (_n(r, 3, 4),)),
    Case("break", f_break_early, lambda r: (_n(r, 2, 3), _n(r, 3, 3)), wrt=(0, 1)),
    Case("data_break", f_data_break, lambda r: (_n(r, 2, 3), _n(r, 3, 3) * 1.5), wrt=(0, 1)),
    Case("early_return", f_early_return, lambda r: (_n(r, 3, 4),)),
    Case("if_in_loop", f_if_in_loop, lambda r: (_n(r, 3, 4),)),
    Case("ternary", f_ternary, lambda r: (_n(r, 3, 4),)),
    # mutation
    Case("setitem_loop", f_setitem_loop, lambda r: (_n(r, 3, 4),)),
    Case("relu_mask", f_relu_mask, lambda r: (_n(r, 5, 3), _n(r, 3, 4)), wrt=(0, 1)),
    Case("slice_iadd", f_slice_iadd, lambda r: (_n(r, 4, 3), _n(r, 3)), wrt=(0, 1)),
    Case("name_iadd", f_name_iadd, lambda r: (_n(r, 3, 4),)),
    # containers
    Case(
        "dict_params",
        f_dict_params,
        lambda r: (
            {"w1": _n(r, 3, 5), "b1": _n(r, 5), "w2": _n(r, 5, 2), "b2": _n(r, 2)},
            _n(r, 4, 3),
            _n(r, 4, 2),
        ),
        wrt="params",
    ),
    Case("list_arg", f_list_arg, lambda r: ([_n(r, 3), _n(r, 3), _n(r, 2, 2)],)),
    Case("list_append", f_list_append, lambda r: (_n(r, 2, 3), _n(r, 3, 3) * 0.5), wrt=(0, 1)),
    # custom derivatives, no_grad, stop_gradient
    Case("custom_function", f_custom_function, lambda r: (_n(r, 4, 3), _n(r, 3, 2)), wrt=(0, 1)),
    Case("stop_gradient", f_stop_gradient, lambda r: (_n(r, 3),)),
    # more rule families (runtime helpers)
    Case(
        "elementwise_more", f_elementwise_more, lambda r: (_n(r, 3, 4), _pos(r, 3, 4)), wrt=(0, 1)
    ),
    Case("extrema_ties", f_extrema_ties, lambda r: (_n(r, 3, 4) * 2.0,)),
    Case("average_nansum", f_average_nansum, lambda r: (_n(r, 3, 4), _pos(r, 3)), wrt=(0, 1)),
    Case("norm_ords", f_norm_ords, lambda r: (_n(r, 3, 4), _n(r, 5)), wrt=(0, 1)),
    Case(
        "linalg_dense",
        f_linalg_dense,
        lambda r: (_n(r, 3, 3) + 3.0 * np.eye(3), _n(r, 3, 2)),
        wrt=(0, 1),
    ),
    Case(
        "outer_inner_kron",
        f_outer_inner_kron,
        lambda r: (_n(r, 3), _n(r, 3), _n(r, 2, 2)),
        wrt=(0, 1, 2),
    ),
    Case("diag_tri", f_diag_tri, lambda r: (_n(r, 3), _n(r, 3, 3)), wrt=(0, 1)),
    Case("stack_family", f_stack_family, lambda r: (_n(r, 2, 3), _n(r, 2, 3)), wrt=(0, 1)),
    Case("pad", f_pad, lambda r: (_n(r, 2, 3),)),
    Case(
        "take_along_axis",
        f_take_along_axis,
        lambda r: (_n(r, 3, 4), np.array([[0, 0], [3, 1], [2, 2]])),
    ),
    Case("array_split", f_array_split, lambda r: (_n(r, 2, 7),)),
    Case(
        "take_flat_sort_flat",
        f_take_flat_sort_flat,
        lambda r: (_n(r, 3, 4), np.array([5, 0, 5, 11]), _n(r, 12)),
    ),
    Case("advanced_mixed", f_advanced_mixed, lambda r: (_n(r, 4, 4), np.array([3, 0, 3]))),
    Case("item_astype", f_item_astype, lambda r: (_n(r, 3, 4),)),
    Case("prod_var_ddof", f_prod_var_ddof, lambda r: (_n(r, 3, 4),)),
    Case("rot_flip", f_rot_flip, lambda r: (_n(r, 3, 3), _n(r, 3, 3))),
    Case("mask_write_value", f_mask_write_value, lambda r: (_n(r, 3, 4), _n(r, 4)), wrt=(0, 1)),
    # the examples
    Case(
        "example_two_layer",
        two_layer.loss,
        lambda r: (_n(r, 10, 4), _n(r, 4, 3), _n(r, 8, 10), _n(r, 8, 3)),
        wrt=("w1", "w2"),
    ),
    Case("example_autograd_basics", autograd_basics.out_basic, lambda r: (np.ones((2, 2)),)),
    Case("example_autograd_affine", autograd_basics.out_affine, lambda r: (np.ones((3, 3)),)),
    Case(
        "example_custom_relu",
        custom_relu.loss,
        lambda r: (_n(r, 10, 4), _n(r, 4, 3), _n(r, 8, 10), _n(r, 8, 3)),
        wrt=(0, 1),
    ),
    Case("example_no_grad", no_grad_example.out, lambda r: (_n(r, 3, 3),)),
    Case("example_stop_gradient", no_grad_example.out_stopped, lambda r: (_n(r, 3, 3),)),
    Case(
        "example_dynamic_graph", dynamic_graph.double_until_large, lambda r: (_n(r, 3),), vjp=True
    ),
    Case(
        "example_rnn",
        rnn_loss,
        lambda r: (
            _n(r, 3, 4) * 0.5,
            _n(r, 4, 4) * 0.5,
            _n(r, 4),
            _n(r, 4, 2),
            [_n(r, n, 3) for n in (2, 4, 1)],
            [_n(r, 2) for _ in range(3)],
        ),
        wrt=(0, 1, 2, 3),
    ),
]


# ---- the harness (shared with tests/test_gpu.py) -------------------------------------------------


def host_args(case, seed=0):
    return case.make(np.random.default_rng(seed))


def cotangent_for(case, args):
    """A cotangent shaped like the (non-scalar) value of ``case.fn`` at host ``args``."""
    return np.random.default_rng(1).standard_normal(np.shape(case.fn(*args)))


def run_gradient(case, args, cotangent=None, specialize=True):
    """``(value, gradient)`` of ``case`` at ``args``: value_and_grad, or vjp and its pullback."""
    if case.vjp:
        value, pullback = _compiled(case, "vjp", specialize)(*args)
        return value, pullback(cotangent)
    return _compiled(case, "value_and_grad", specialize)(*args)


_CACHE: dict = {}


def _compiled(case, kind, specialize=True):
    """One gradient object per row, kind and code path, used for host and device inputs alike."""
    key = (case.id, kind, specialize)
    if key not in _CACHE:
        _CACHE[key] = getattr(sg, kind)(case.fn, wrt=case.wrt, specialize=specialize)
    return _CACHE[key]


def assert_tree_close(got, expected, like, path="gradient", rtol=1e-7, atol=1e-9):
    """``got`` (host) equals ``expected`` leaf by leaf, with ``like``'s structure, shapes, dtypes."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), f"{path}: {type(got)} keys"
        for k in expected:
            assert_tree_close(
                got[k],
                expected[k],
                like[k] if isinstance(like, dict) else None,
                f"{path}[{k!r}]",
                rtol,
                atol,
            )
        return
    if isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected), (
            f"{path}: {type(got).__name__}"
        )
        for i, (g, e) in enumerate(zip(got, expected)):
            sub = (
                like[i] if isinstance(like, (list, tuple)) and len(like) == len(expected) else None
            )
            assert_tree_close(g, e, sub, f"{path}[{i}]", rtol, atol)
        return
    assert np.shape(got) == np.shape(expected), (
        f"{path}: shape {np.shape(got)} != {np.shape(expected)}"
    )
    if like is not None and hasattr(like, "dtype"):
        assert got.dtype == like.dtype, f"{path}: dtype {got.dtype} != {like.dtype}"
    assert np.allclose(got, expected, rtol=rtol, atol=atol), f"{path}: {got} != {expected}"


def _wrt_args(case, args):
    """The arguments the gradient is taken with respect to, in ``wrt`` order."""
    names = list(inspect.signature(case.fn).parameters)
    wrt = case.wrt if isinstance(case.wrt, tuple) else (case.wrt,)
    out = tuple(args[w if isinstance(w, int) else names.index(w)] for w in wrt)
    return out if isinstance(case.wrt, tuple) else out[0]


def _describe_syncs(syncs):
    return "\n  ".join(map(repr, syncs)) or "none"


def check_case(
    case, to_dev, to_cpu, is_dev, track_syncs=None, rtol=1e-7, atol=1e-9, specialize=True
):
    """The checks of the module docstring for one row, on one backend: ``to_dev``/``to_cpu`` move
    argument trees, ``is_dev(x)`` says whether every leaf of a tree is a device array, and
    ``track_syncs()`` (when the backend can count host synchronizations) is a context manager
    yielding the list of those made inside it. ``specialize``: the device run uses the code
    specialized to the arguments' shapes, or the general code."""
    args = host_args(case)
    cot = cotangent_for(case, args) if case.vjp else None
    expected_value, expected = run_gradient(case, args, cot)
    assert np.allclose(expected_value, case.fn(*args)), (
        "the value differs from the function's (numpy arrays)"
    )

    forward_syncs = grad_syncs = None
    if track_syncs is not None:
        dev = to_dev(args)
        with track_syncs() as forward_syncs:
            case.fn(*dev)  # what the user's own code costs
    dev = to_dev(args)
    with track_syncs() if track_syncs is not None else _nothing() as grad_syncs:
        value, grad = run_gradient(case, dev, to_dev(cot), specialize)

    assert is_dev(grad), f"a gradient leaf came back on the host: {grad!r}"
    assert is_dev(value), f"the value came back as {type(value).__name__}"
    assert_tree_close(to_cpu(grad), expected, _wrt_args(case, args), rtol=rtol, atol=atol)
    assert np.allclose(to_cpu(value), expected_value, rtol=rtol, atol=atol)
    if track_syncs is not None:
        assert sorted(s.kind for s in grad_syncs) == sorted(s.kind for s in forward_syncs), (
            f"the gradient call synchronized with the host {len(grad_syncs)} times, the function "
            f"itself {len(forward_syncs)} times.\ngradient:\n  {_describe_syncs(grad_syncs)}\n"
            f"function:\n  {_describe_syncs(forward_syncs)}"
        )
    assert_tree_close(to_cpu(dev), args, None, "inputs after the call", 0, 0)


@contextlib.contextmanager
def _nothing():
    yield None


@pytest.mark.parametrize("specialize", [True, False], ids=["specialized", "general"])
@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_gradient_on_device(case, specialize):
    check_case(case, to_device, to_host, is_device, track_host_syncs, specialize=specialize)


# ---- the double itself ---------------------------------------------------------------------------


def test_double_refuses_host_conversions():
    x = to_device(np.arange(6.0).reshape(2, 3))
    for convert in (
        np.asarray,
        np.array,
        float,
        bool,
        int,
        lambda a: a.item(),
        lambda a: a.tolist(),
    ):
        with pytest.raises(TypeError):
            convert(x)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Unsupported type"):
        x * np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        np.ones(3) + x
    with pytest.raises(TypeError, match="Unsupported type"):
        x + np.asarray(1.0)
    with pytest.raises(TypeError, match="Unsupported type"):
        np.concatenate([x, np.ones((1, 3))])
    with pytest.raises(TypeError, match="Unsupported type"):
        x[0] = np.ones(3)
    with pytest.raises(TypeError, match="host"):
        np.add.at(np.zeros(3), np.array([0, 0]), x[0, :2])
    assert not hasattr(x.flags, "writeable") and not hasattr(x, "setflags")


def test_double_counts_host_syncs_and_stays_on_device():
    x = to_device(np.arange(6.0).reshape(2, 3))
    with track_host_syncs() as syncs:
        s = np.sum(x)
        assert isinstance(s, DeviceArray) and s.shape == ()
        assert bool(s > 0) and float(s) == 15.0 and x[1, 2].item() == 5.0
    assert [e.kind for e in syncs] == ["bool", "float", "item"]
    assert "test_backend.py" in syncs[0].where
    for r in (
        x.T,
        x @ x.T,
        np.zeros_like(x),
        x[x > 2],
        np.where(x > 1, x, 0.0),
        np.exp(x),
        x.sum(axis=0),
        np.broadcast_to(x[0], (4, 3)),
        np.linalg.norm(x),
        np.einsum("ij->j", x),
        list(x)[0],
    ):
        assert isinstance(r, DeviceArray)
    np.testing.assert_array_equal(to_host(x[to_device(np.array([1, 1]))]), [[3, 4, 5], [3, 4, 5]])
    t = np.zeros_like(x)
    np.add.at(t, to_device(np.array([0, 0])), 1.0)
    np.testing.assert_array_equal(t.get(), [[2, 2, 2], [0, 0, 0]])
    v = x[0]
    v[1] = 7.0  # views share memory, as on the device
    assert x.get()[0, 1] == 7.0
    tree = to_device({"a": [np.ones(2), (np.zeros(1),)], "b": 3.0})
    assert is_device(tree["a"]) and tree["b"] == 3.0
    back = to_host(tree)
    assert type(back["a"][0]) is np.ndarray and isinstance(back["a"][1], tuple)
