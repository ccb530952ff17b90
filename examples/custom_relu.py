"""The tutorial's custom ReLU, as a ``sourcegrad.Function``, training the two-layer network.

``MyReLU`` is the tutorial's class with torch swapped for numpy: ``forward(ctx, input)`` saves
its input and clamps at zero, ``backward(ctx, grad_output)`` zeroes the gradient where the input
was negative. sourcegrad calls it as a black box: the forward runs in the generated forward pass,
its ``ctx`` is kept, and ``backward`` runs in the generated backward pass. The weight update
runs under ``sg.no_grad()``, as in the tutorial (with plain numpy there is nothing to track, so
outside a differentiated function it only marks intent).

Run it from the repository root::

    python examples/custom_relu.py
"""

import numpy as np

import sourcegrad as sg


class MyReLU(sg.Function):
    """A ReLU with a hand-written backward pass."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return np.clip(input, 0, None)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.copy()
        grad_input[input < 0] = 0
        return grad_input


def loss(w1, w2, x, y):
    relu = MyReLU.apply
    y_pred = relu(x.dot(w1)).dot(w2)
    return np.sum((y_pred - y) ** 2)


loss_and_grads = sg.value_and_grad(loss, wrt=(0, 1))


def train(steps=500, learning_rate=1e-6, seed=0, log_every=100):
    N, D_in, H, D_out = 64, 1000, 100, 10
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((N, D_in)), rng.standard_normal((N, D_out))
    w1, w2 = rng.standard_normal((D_in, H)), rng.standard_normal((H, D_out))
    history = []
    for t in range(steps):
        value, (g1, g2) = loss_and_grads(w1, w2, x, y)
        history.append(float(value))
        if log_every and (t + 1) % log_every == 0:
            print(f"t = {t + 1:4d}   loss = {value:.6g}")
        with sg.no_grad():
            w1 -= learning_rate * g1
            w2 -= learning_rate * g2
    return history


if __name__ == "__main__":
    print(sg.source(loss_and_grads))
    history = train()
    print(f"loss: {history[0]:.6g} at the start, {history[-1]:.6g} after {len(history)} steps")
