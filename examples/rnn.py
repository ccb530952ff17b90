"""A recurrent network over sequences of different lengths, differentiated through its loops.

A tanh RNN reads each sequence one step at a time and predicts a target from its last hidden
state. The sequences have different lengths, so the number of loop iterations comes from the
data, as in the tutorials' dynamic graphs. sourcegrad compiles the loops once: the generated
forward sweep pushes what each step overwrites onto a tape, and the backward sweep runs the
steps in reverse, popping it.

We check the gradient against finite differences with ``sg.check_grad`` on a small network,
then train a slightly larger one with gradient descent.

Run it from the repository root::

    python examples/rnn.py
"""

import numpy as np

import sourcegrad as sg


def rnn_loss(wx, wh, b, wy, sequences, targets):
    """Mean squared error of ``h_T @ wy`` against each sequence's target."""
    loss = 0.0
    for i in range(len(sequences)):
        xs = sequences[i]
        h = np.zeros(wh.shape[0])
        for t in range(xs.shape[0]):  # a different number of steps for each sequence
            h = np.tanh(xs[t] @ wx + h @ wh + b)
        error = h @ wy - targets[i]
        loss = loss + np.sum(error ** 2)
    return loss / len(sequences)


rnn_loss_and_grads = sg.value_and_grad(rnn_loss, wrt=("wx", "wh", "b", "wy"))


def make_problem(n_sequences, n_in, n_hidden, n_out, max_len, seed=0):
    """Random weights, and sequences of random lengths whose target is their mean input."""
    rng = np.random.default_rng(seed)
    weights = [
        rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),
        rng.standard_normal((n_hidden, n_hidden)) / np.sqrt(n_hidden),
        np.zeros(n_hidden),
        rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden),
    ]
    lengths = rng.integers(1, max_len + 1, size=n_sequences)
    sequences = [rng.standard_normal((n, n_in)) for n in lengths]
    targets = [xs.mean(axis=0)[:n_out] for xs in sequences]
    return weights, sequences, targets


def check(seed=0):
    """``sg.check_grad`` on a small RNN: raises if any gradient disagrees with finite differences."""
    weights, sequences, targets = make_problem(3, n_in=3, n_hidden=4, n_out=2, max_len=5, seed=seed)
    return sg.check_grad(rnn_loss, *weights, sequences, targets, wrt=(0, 1, 2, 3))


def train(steps=200, lr=0.1, seed=0, log_every=50):
    """Gradient descent on 32 sequences of length 1 to 20; returns the losses."""
    weights, sequences, targets = make_problem(32, n_in=4, n_hidden=16, n_out=2, max_len=20, seed=seed)
    losses = []
    for step in range(steps):
        value, grads = rnn_loss_and_grads(*weights, sequences, targets)
        losses.append(float(value))
        if log_every and (step + 1) % log_every == 0:
            print(f"step {step + 1:4d}   loss = {value:.5f}")
        for w, g in zip(weights, grads):
            w -= lr * g
    return losses


def main():
    check()
    print("sg.check_grad: the RNN's gradients match finite differences.\n")
    losses = train()
    print(f"\nloss: {losses[0]:.5f} at the start, {losses[-1]:.5f} after {len(losses)} steps")
    print("\nThe generated code (the tape holds what each step overwrites):\n")
    print(sg.source(rnn_loss_and_grads))


if __name__ == "__main__":
    main()
