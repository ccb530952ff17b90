"""Checkpointed loops on generated programs: every checkpoint mode gives the plain tape's gradient.

A program is a loop whose body hypothesis draws from the forms a checkpointed loop must run again
exactly as the forward ran it: values from before the loop that an enclosing loop sets anew each
trip (a weight, that loop's index), branches, ``break``, a Python list whose entries are replaced
and read, a dict entry, a buffer written and read by row. The backward runs the iterations again
from snapshots, so anything they read that the snapshot does not keep must still hold what the
forward's iterations read. Each program is compiled plain, with ``sg.checkpointed`` and with the
``checkpoint=`` keyword, and the gradients must agree exactly; the plain one is checked against
central finite differences (``tests/oracle.py``).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import sourcegrad as sg

from .fuzz.check import load
from .oracle import assert_close, fd_grad

K = 4  # entries of the list, rows of the buffer

BODY = {
    "step": "h = np.sin(h * {w} + {c})",
    "branch": "if np.sum(h) > 0.0:\n    h = h * 0.9\nelse:\n    h = h + 0.1 * {w}",
    "break": "if t >= {limit}:\n    break",
    "list_write": "hs[t % K] = hs[t % K] * 0.5 + h",
    "list_read": "h = h + 0.1 * np.tanh(hs[(t + 1) % K])",
    "dict": 'd["a"] = d["a"] * 0.9 + h * {w}',
    "dict_read": 'h = h * 0.8 + 0.2 * np.cos(d["a"])',
    "buffer_write": "b[t % K] = b[t % K] * 0.5 + h",
    "buffer_read": "h = h + 0.1 * np.tanh(b[(t + 1) % K])",
}


@st.composite
def programs(draw):
    """The text of ``f(x, w, n)``, and whether its loop sits in another."""
    outer = draw(st.booleans())
    kinds = draw(st.lists(st.sampled_from(sorted(BODY)), min_size=1, max_size=5))
    if "step" not in kinds:
        kinds.append("step")
    weight = "v" if outer else "w"  # v: set anew on each outer trip
    lines = []
    for kind in kinds:
        text = BODY[kind].format(
            w=draw(st.sampled_from([weight, "w"])),
            c=draw(st.sampled_from(["e", "t * 0.1", "0.1"]) if outer else st.just("t * 0.1")),
            limit=draw(st.integers(0, 12)),
        )
        lines += text.split("\n")
    body = "\n".join("        " + ln for ln in lines)
    loop = f"    for t in MARK:\n{body}\n"
    setup = (
        "    hs = [x * (k + 1.0) for k in range(K)]\n"
        '    d = {"a": x * 0.5}\n'
        "    b = np.ones((K, 3)) * x\n"
        "    h = x\n"
        "    total = 0.0\n"
    )
    if outer:
        loop = "\n".join("    " + ln if ln else ln for ln in loop.split("\n"))
        loop = (
            "    for e in range(2):\n"
            "        v = np.tanh(w * (e + 1.0)) * 0.5\n"
            f"{loop}"
            "        total = total + np.sum(h * v)\n"
            "        h = h * 0.9\n"
        )
    result = (
        '    return total + np.sum(h) + np.sum(hs[0] * hs[1]) + np.sum(d["a"]) + np.sum(b * b)\n'
    )
    return "def f(x, w, n):\n" + setup + loop + result


_LOADED = {}


def compiled(text, mark):
    """``f`` of ``text`` with its loop ``range(n)``, ``sg.checkpointed(range(n))`` or, for the
    keyword, plain."""
    key = (text, mark)
    if key not in _LOADED:
        header = f"import numpy as np\nimport sourcegrad as sg\n\nK = {K}\n\n"
        _LOADED[key] = load(header + text.replace("MARK", mark)).f
    return _LOADED[key]


@settings(max_examples=30, deadline=None)
@given(
    text=programs(),
    trips=st.integers(0, 14),
    mode=st.sampled_from(["marker", True, 1, 2, 3]),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_checkpoint_mode_gives_the_plain_tapes_gradient(text, trips, mode, seed):
    rng = np.random.default_rng(seed)
    x, w = rng.normal(size=3) * 0.5, rng.normal(size=3) * 0.5
    plain_f = compiled(text, "range(n)")
    plain = sg.value_and_grad(plain_f, wrt=(0, 1))(x, w, trips)
    if mode == "marker":
        kept = sg.value_and_grad(compiled(text, "sg.checkpointed(range(n))"), wrt=(0, 1))
    else:
        kept = sg.value_and_grad(plain_f, wrt=(0, 1), checkpoint=mode)
    value, grads = kept(x, w, trips)
    assert value == plain[0]
    for a, b in zip(plain[1], grads):
        np.testing.assert_array_equal(a, b)
    for i, g in enumerate(plain[1]):
        assert_close(g, fd_grad(plain_f, [x, w, trips], i), rtol=1e-5, atol=1e-6)
