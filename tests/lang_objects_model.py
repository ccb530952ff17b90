"""An object-oriented numpy model, written as libraries write them (numpy-ml's style): a
``Layer`` base class, ``Dense(Layer)`` initializing its parameters lazily on its first call and
caching what a hand-written backward would need (``self.X``, ``self.Z``, ``self.derived``),
activations as classes with ``__call__`` and ``.fn``, a ``Sequential`` holding its layers, a
loss class, and a model whose ``loss(self, X, y)`` calls everything. ``tests/test_lang_objects.py``
differentiates it as it is."""

import numpy as np


def is_binary(y):
    msg = "y must be binary"
    assert np.array_equal(y, y.astype(bool)), msg
    return True


class ActivationBase:
    def __call__(self, z):
        if z.ndim == 1:
            z = z.reshape(1, -1)
        return self.fn(z)

    def fn(self, z):
        raise NotImplementedError


class ReLU(ActivationBase):
    def __str__(self):
        return "ReLU"

    def fn(self, z):
        return np.clip(z, 0, np.inf)


class Tanh(ActivationBase):
    def fn(self, z):
        return np.tanh(z)


class ELU(ActivationBase):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fn(self, z):
        return np.where(z > 0, z, self.alpha * (np.exp(z) - 1))


class Softmax:
    def forward(self, s):
        e = np.exp(s - np.max(s, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)


class Layer:
    def __init__(self):
        self.X = []
        self.trainable = True
        self.derived = {"Z": []}

    def forward(self, X):
        raise NotImplementedError

    def _check_input(self, X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim}-D")


class Dense(Layer):
    def __init__(self, n_out, act_fn=None, seed=0):
        super().__init__()
        self.n_in = None
        self.n_out = n_out
        self.act_fn = act_fn if act_fn is not None else Tanh()
        self.seed = seed
        self.is_initialized = False
        self.parameters = {"W": None, "b": None}

    def _init_params(self):
        rs = np.random.RandomState(self.seed)
        self.parameters = {
            "W": rs.randn(self.n_in, self.n_out) * 0.5,
            "b": rs.randn(1, self.n_out) * 0.1,
        }
        self.is_initialized = True

    @property
    def W(self):
        return self.parameters["W"]

    def forward(self, X, retain_derived=True):
        self._check_input(X)
        if not self.is_initialized:
            self.n_in = X.shape[1]
            self._init_params()
        b = self.parameters["b"]
        Z = X @ self.W + b
        Y = self.act_fn(Z)
        if retain_derived:
            self.X.append(X)
            self.derived["Z"].append(Z)
        self.Z = Z
        return Y


class Scaled(Dense):
    """A layer whose forward is its parent's, scaled: ``super().forward``."""

    def forward(self, X, retain_derived=True):
        return super().forward(X, retain_derived) * self.scale

    scale = 2.0


class Sequential(Layer):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, X):
        h = X
        for layer in self.layers:
            h = layer.forward(h)
        return h


class CrossEntropy:
    def __call__(self, y, y_pred):
        return self.loss(y, y_pred)

    @staticmethod
    def loss(y, y_pred):
        eps = np.finfo(float).eps
        return -np.sum(y * np.log(y_pred + eps))


class Model:
    def __init__(self, hidden=4, n_classes=3):
        self.net = Sequential(
            [
                Dense(hidden, ReLU(), seed=1),
                Dense(hidden, ELU(0.7), seed=2),
                Dense(n_classes, Tanh(), seed=3),
            ]
        )
        self.softmax = Softmax()
        self.loss_fn = CrossEntropy()
        self.calls = 0

    def loss(self, X, y):
        is_binary(y)
        out = self.net.forward(X)
        probs = self.softmax.forward(out)
        self.calls += 1
        return self.loss_fn(y, probs)


def _rebuild(cls, aux, children):
    obj = object.__new__(cls)
    obj.__dict__.update(aux)
    obj.__dict__.update(children)
    return obj


def register(sg, cls, names):
    """Register ``cls`` with ``names`` its differentiable attributes (the rest carried over)."""
    sg.register_structure(
        cls,
        lambda o: (
            {n: getattr(o, n) for n in names},
            {k: v for k, v in o.__dict__.items() if k not in names},
        ),
        lambda aux, children: _rebuild(cls, aux, children),
    )
