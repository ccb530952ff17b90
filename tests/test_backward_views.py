"""A view the backward reads, of an array written in place after it was made.

``t = a.T``, ``r = a[1]``, ``v = a[0:2]`` share ``a``'s memory: a write into ``a`` after them
changes what they hold too. The forward has read them already, but the backward reads them again
(the adjoint of ``sin(v)`` reads ``v``), after the whole forward: it must see what they held when
the forward read them. Generated programs (a view of each kind, each kind of write) are checked
against central finite differences (``tests/oracle.py``), specialized and general.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import sourcegrad as sg

from .fuzz.check import load
from .oracle import assert_close, fd_grad

VIEWS = {
    "transpose": "a.T",
    "row": "a[1]",
    "rows": "a[0:2]",
    "strided": "a[::2]",
    "reshape": "a.reshape(-1)",
    "np.transpose": "np.transpose(a)",
    "alias": "a",
}

READS = {  # how the forward uses the view (each adjoint reads it)
    "sin": "np.sum(np.sin(v) * v)",
    "square": "np.sum(v * v)",
    "matmul": "np.sum(np.tanh(np.sum(a, axis=0)) @ a.T * np.sum(v))",
}

WRITES = {
    "row": "a[1] = x[0] * 3.0",
    "repeated rows": "a[[0, 1, 1, 0]] = np.stack([x, x * 2.0, x * 3.0, x * 4.0])",
    "mask": "a[a > 0.1] = 0.5",
    "slice update": "a[0:2] *= 2.0",
    "entry": "a[0, 1] = np.sum(x)",
}


@settings(max_examples=40, deadline=None)
@given(
    view=st.sampled_from(sorted(VIEWS)),
    read=st.sampled_from(sorted(READS)),
    write=st.sampled_from(sorted(WRITES)),
    specialize=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_view_read_by_the_backward_keeps_what_the_forward_read(
    view, read, write, specialize, seed
):
    text = (
        "import numpy as np\n\n\n"
        "def f(x, w):\n"
        "    a = np.ones((4, 2)) * x + w[:, None]\n"
        f"    v = {VIEWS[view]}\n"
        f"    y = {READS[read]}\n"
        f"    {WRITES[write]}\n"
        "    return y + np.sum(a * a)\n"
    )
    f = load(text).f
    rng = np.random.default_rng(seed)
    x, w = rng.normal(size=2), rng.normal(size=4)
    got = sg.grad(f, wrt=(0, 1), specialize=specialize)(x, w)
    for i, g in enumerate(got):
        assert_close(g, fd_grad(f, (x, w), i), what=f"gradient {i} of\n{text}")
