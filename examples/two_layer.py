"""A two-layer network trained with sourcegrad: the PyTorch tutorial's numpy warm-up, minus the
hand-written backward pass.

The tutorial fits ``y = relu(x @ w1) @ w2`` to random data with plain numpy and a backward pass
written by hand. Here the forward pass is an ordinary function, ``loss(w1, w2, x, y)``, and
``sg.value_and_grad`` writes the backward pass for us, ahead of time, as plain Python that we can
print and read. For the first few steps we also run the tutorial's hand-written backward and
check that both give the same gradients.

Run it from the repository root::

    python examples/two_layer.py
"""

import numpy as np

import sourcegrad as sg

# N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
N, D_in, H, D_out = 64, 1000, 100, 10


def loss(w1, w2, x, y):
    """The forward pass and the squared-error loss: nothing but numpy."""
    h = x.dot(w1)
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2)
    return np.square(y_pred - y).sum()


# The loss and its gradients with respect to w1 and w2, from one call.
loss_and_grads = sg.value_and_grad(loss, wrt=("w1", "w2"))


def manual_loss_and_grads(w1, w2, x, y):
    """The tutorial's forward and hand-written backward pass, line for line."""
    h = x.dot(w1)
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2)
    loss = np.square(y - y_pred).sum()

    grad_y_pred = 2.0 * (y_pred - y)
    grad_w2 = h_relu.T.dot(grad_y_pred)
    grad_h_relu = grad_y_pred.dot(w2.T)
    grad_h = grad_h_relu.copy()
    grad_h[h < 0] = 0
    grad_w1 = x.T.dot(grad_h)
    return loss, (grad_w1, grad_w2)


def make_data(seed=0):
    """Random data and weights, drawn as the tutorial draws them (with a fixed seed)."""
    np.random.seed(seed)
    x = np.random.randn(N, D_in)
    y = np.random.randn(N, D_out)
    w1 = np.random.randn(D_in, H)
    w2 = np.random.randn(H, D_out)
    return w1, w2, x, y


def train(steps=500, lr=1e-6, check_steps=5, seed=0, log_every=100):
    """Gradient descent with sourcegrad's gradients; returns the loss at every step.

    For the first ``check_steps`` steps the hand-written backward runs too and must agree."""
    w1, w2, x, y = make_data(seed)
    losses = []
    for t in range(steps):
        value, (grad_w1, grad_w2) = loss_and_grads(w1, w2, x, y)

        if t < check_steps:
            manual_value, (manual_w1, manual_w2) = manual_loss_and_grads(w1, w2, x, y)
            assert np.allclose(value, manual_value)
            assert np.allclose(grad_w1, manual_w1)
            assert np.allclose(grad_w2, manual_w2)

        losses.append(float(value))
        if log_every and (t + 1) % log_every == 0:
            print(f"t = {t + 1:4d}   loss = {value:.6g}")

        w1 -= lr * grad_w1
        w2 -= lr * grad_w2
    return losses


def main():
    # The first call with arrays of new shapes compiles a version for those shapes (as jax.jit
    # does); source() given the call's arguments shows that code, the one every training step runs.
    w1, w2, x, y = make_data()
    print(f"The backward pass sourcegrad generated for loss(w1, w2, x, y) with w1 {w1.shape}, "
          f"w2 {w2.shape}, x {x.shape}, y {y.shape}:\n")
    print(sg.source(loss_and_grads, w1, w2, x, y))
    check_steps = 5
    losses = train(check_steps=check_steps)
    print(f"\nThe first {check_steps} steps matched the hand-written backward pass (np.allclose).")
    print(f"loss: {losses[0]:.6g} at the start, {losses[-1]:.6g} after {len(losses)} steps")


if __name__ == "__main__":
    main()
