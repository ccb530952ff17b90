"""``scipy.signal.lfilter``: a linear recursive filter, in its input and both coefficient
vectors. Registered when scipy imports, nothing otherwise. From rest only: ``zi`` (initial
conditions, which make it return a pair) is refused."""

try:
    from scipy import signal as ss
except ImportError:  # an optional dependency: no rules
    ss = None

from . import rule

if ss is not None:
    rule(
        ss.lfilter,
        "y, b, a, x, axis=-1, zi=None",
        """
d[x] += lfilter_adjoint_x(d[y], b, a, x, axis)
d[b] += lfilter_adjoint_b(d[y], b, a, x, axis)
d[a] += lfilter_adjoint_a(d[y], b, a, y, axis)
""",
        only={"zi": (None,)},
        nondiff={"zi": "initial conditions (only None)"},
        fresh=True,
    )
