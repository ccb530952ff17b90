"""The two-layer network on the GPU when there is one: the same ``loss``, the same generated code.

As the tutorial does ("if cuda is available, use it"), this picks cupy when it is installed and a
CUDA device answers, and numpy otherwise, and says which. Nothing in ``loss`` or in the code
sourcegrad generates names an array library's device: numpy's functions dispatch to cupy for
cupy arrays, and the runtime makes every array it needs with the arguments' own module, so the
data never leaves the device.

    pip install "sourcegrad[gpu]"      # cupy for CUDA 12; see the README for other CUDA versions
    python examples/two_layer_gpu.py
"""

import numpy as np

import sourcegrad as sg


def array_library():
    """cupy when it is installed and a CUDA device answers, else numpy."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # noqa: BLE001 (no cupy, no driver or no device: use the CPU)
        return np


def loss(w1, w2, x, y):
    h = x.dot(w1)
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2)
    return np.square(y_pred - y).sum()


loss_and_grads = sg.value_and_grad(loss, wrt=(0, 1))


def train(xp, N=64, D_in=1000, H=100, D_out=10, steps=500, lr=1e-6, seed=0, log_every=100):
    rng = np.random.default_rng(seed)
    x, y = (xp.asarray(rng.standard_normal(s)) for s in ((N, D_in), (N, D_out)))
    w1, w2 = (xp.asarray(rng.standard_normal(s)) for s in ((D_in, H), (H, D_out)))
    losses = []
    for t in range(steps):
        value, (g1, g2) = loss_and_grads(w1, w2, x, y)
        assert type(g1) is type(w1)  # the gradient lives where the weights live
        losses.append(float(value))  # the one host transfer per step: the loss, for printing
        if log_every and (t + 1) % log_every == 0:
            print(f"t = {t + 1:4d}   loss = {losses[-1]:.6g}")
        w1 -= lr * g1
        w2 -= lr * g2
    return losses


if __name__ == "__main__":
    xp = array_library()
    print(f"running on {xp.__name__}" + (" (GPU)" if xp is not np else " (no GPU found: CPU)"))
    losses = train(xp)
    print(f"loss: {losses[0]:.6g} at the start, {losses[-1]:.6g} after {len(losses)} steps")
