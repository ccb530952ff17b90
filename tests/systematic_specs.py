"""The input specs of ``tests/test_systematic.py``: one line per registered function.

``SPECS`` maps each function sourcegrad knows (every key of ``rules.RULES`` and ``rules.NONDIFF``)
to a grid of ``Case``s: the call as source text over named inputs, and for each float input its
shape and the domain its values are drawn from (positive for ``log``, distinct for ``sort``,
well-conditioned for ``inv``). Integer and index arguments are literals or module constants
(``HEADER``). A factory such as ``unary(POS)`` builds a function's grid from its parameter names:
``(F, params) -> [Case]``, where ``F`` is how the module spells the function (``np.log``).

An input binds to the parameter of its name, or to ``In.param`` (a list entry of ``np.stack``'s
``arrays``). A case with ``refused="loc"`` expects sourcegrad to refuse, naming that parameter.
"""

from __future__ import annotations

import builtins
import math
import operator
from dataclasses import dataclass

import numpy as np

import sourcegrad
from sourcegrad import runtime

try:
    from scipy import linalg as sla, signal as ssig, special as sc, stats as sst
except ImportError:  # scipy's rules are registered only where scipy imports
    sc = sla = ssig = sst = None
from sourcegrad.transforms.normalize import strings as _strings
from sourcegrad.transforms.rules import indexing as _indexing

F64, F32 = np.float64, np.float32
H = 1e-6  # the finite-difference step, relative

# Module-level constants every generated case module has: integer indices, masks, knots.
HEADER = """\
import builtins
import io
import math
import operator

import numpy as np

import sourcegrad as sg

try:
    from scipy import linalg as sla, signal as ssig, special as sc, stats as sst
except ImportError:
    sc = sla = ssig = sst = None

IDX = np.array([2, 0, 2, 1])
IDX2 = np.array([[0, 1], [1, 1]])
MASK = np.array([True, False, True])
BINS = np.array([0, 2, 2, 4, 1, 0])
XP = np.array([-1.0, -0.4, 0.4, 1.0])
X = np.array([0.0, 0.5, 1.75, 2.0])  # uneven coordinates (np.gradient)
STEPS = np.array([-1.0, 0.0, 2.0, 0.0])
WIDTHS = ((1, 2), (0, 1))
AXES = ([0, 2], [1, 0])
P3 = np.array([0.5, -1.0, 2.0])
SPREAD = np.diag([1.0, 2.0, 3.0])  # distinct eigenvalues, singular values
TALL = np.eye(4, 2) * [1.0, 2.0]
WIDE = np.eye(2, 3) * [1.0, 2.0, 3.0]
SINK = io.StringIO()
C3 = np.array([1.0 + 0.5j, -0.5 + 1.0j, 0.75 - 0.25j])  # complex filters for np.fft cases
C4 = np.array([0.5 - 1.0j, 1.0 + 0.25j, -0.75 + 0.5j, 0.25 + 1.0j])
C6 = np.array([1.0 + 0.5j, -0.5 + 1.0j, 0.75 - 0.25j, 0.5 - 1.0j, 1.0 + 0.25j, -0.75 + 0.5j])
C23 = np.array([[1.0 + 0.5j, -0.5 + 1.0j, 0.75 - 0.25j], [0.5 - 1.0j, 1.0 + 0.25j, -0.75 + 0.5j]])
COUNTS = np.array([0, 2, 5])  # Poisson counts
FW = np.array([1, 3, 2, 1])  # np.cov's frequency weights
A0 = np.array([1.0, 0.0, 0.0])  # a filter's leading denominator coefficient
"""


# ---- domains and inputs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Dom:
    """Where an input's values are drawn. ``uniform`` in [lo, hi]; ``signed``: |v| in [lo, hi], either
    sign; ``distinct``: entries far apart (no ties for max/sort); ``sdistinct``: distinct magnitudes
    in [lo, hi], either sign; ``grid0``/``grid1``: near 0.2 k resp. 0.2 k + 0.1, so one from each
    never tie; ``quarter``: near k + 1/4 or k + 3/4 (off integers and halves); ``zeros``: ``signed``
    with every third entry (the first included) exactly 0; ``matrix``: 2 I plus
    noise in its last two axes; ``increasing``: distinct and sorted along the last axis."""

    lo: float = -2.0
    hi: float = 2.0
    kind: str = "uniform"


ANY = Dom()
POS = Dom(0.2, 3.0)
NONZERO = Dom(0.3, 2.0, "signed")
UNIT = Dom(-0.9, 0.9)
DISTINCT = Dom(-2.0, 2.0, "distinct")
SDISTINCT = Dom(0.3, 2.0, "sdistinct")
GRID0, GRID1 = Dom(-1.6, 1.6, "grid0"), Dom(-1.5, 1.5, "grid1")
NONINT = Dom(-3.0, 3.0, "quarter")
HALF = Dom(0.5, 1.5, "signed")  # products of these stay well scaled
MATRIX = Dom(-0.3, 0.3, "matrix")
INCREASING = Dom(-2.0, 2.0, "increasing")
MOD_X, MOD_Y = Dom(1.0, 1.15, "signed"), Dom(0.4, 0.45, "signed")  # x / y in ±(2.2, 2.9): no jumps
ZEROS = Dom(0.5, 1.5, "zeros")  # signed, with every third entry (the first included) exactly 0


@dataclass(frozen=True)
class In:
    """A float input. ``form``: ``array`` (of ``shape``), ``py`` (a Python float) or ``scalar`` (a
    numpy scalar). ``param``: the function's parameter it binds to, when not its own name."""

    shape: tuple = ()
    dom: Dom = ANY
    form: str = "array"
    param: str | None = None


def inp(s, dom=ANY, param=None):
    """``In`` from a shape, or from a form name for a 0-d value (``"py"``, ``"scalar"``)."""
    return In((), dom, s, param) if isinstance(s, str) else In(tuple(s), dom, "array", param)


@dataclass(frozen=True)
class Case:
    expr: str  # the function's result (an array, a number), as source over the inputs
    inputs: dict  # name -> In, in parameter order of the generated function
    dtypes: tuple = (F64, F32)
    h: float = H
    pre: str = ""  # statements run first, in the function's body
    refused: str | None = None  # the parameter a refusal must name (where numpy takes the value)
    stops: bool = False  # sourcegrad.stop_gradient: the gradient is 0 though FD's is not
    seeded: bool = False  # a random draw: np.random.seed(0) before every call
    reach: bool = True  # the compiler binds the function as a call (not a statement or an if test)
    bug: str | None = None  # a reported bug: the case is xfail(strict=True) with this reproducer

    def params(self):
        """The function parameters the float inputs bind to."""
        return {i.param or n for n, i in self.inputs.items()}


def lit(v):
    """Source text for a literal keyword value (``np.inf``, not ``inf``)."""
    if isinstance(v, float) and math.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(v)


def fmt(expr, F, p, **names):
    """``expr`` with ``{F}`` the function and ``{x}``, ``{y}``, ... its parameters, in order."""
    slots = dict(zip("xyzuvt", p))
    slots.update(names)
    return expr.format(F=F, **slots)


# ---- grids ----------------------------------------------------------------------------------------
SHAPES = [(), (3,), (2, 3), (1, 3), (3, 1), (2, 1, 2)]
FORMS = ["py", "scalar"]
PAIRS = [
    ((), ()),
    ((3,), (3,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    ((1, 3), (2, 1)),
    ((2, 3), (2, 1)),
    ((1, 3), (2, 3)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((2, 1, 3), (4, 1)),
    ("py", (3,)),
    ((2,), "py"),
    ("py", "py"),
    ("scalar", (2,)),
]
PY_PAIRS = [("py", "py"), ("scalar", "py"), ("py", "scalar")]
RSHAPES = [(), (4,), (2, 3), (1, 3), (3, 1), (2, 1, 3)]


def dtypes_of(inputs):
    """A case of Python floats alone has no float32 variant."""
    return (F64,) if all(i.form == "py" for i in inputs.values()) else (F64, F32)


def case(expr, inputs, **kw):
    kw.setdefault("dtypes", dtypes_of(inputs))
    return Case(expr, inputs, **kw)


def unary(dom=ANY, expr="{F}({x})", shapes=SHAPES, forms=FORMS, h=H):
    """A function of one array, over shapes and the 0-d forms."""

    def cases(F, p):
        x = p[0] if p else "x"
        e = fmt(expr, F, [x])
        return [case(e, {x: inp(s, dom)}, h=h) for s in list(shapes) + list(forms)]

    return cases


def pyunary(dom=ANY, expr="{F}({x})", forms=("py", "scalar")):
    """A ``math`` function of a Python float (or a numpy scalar)."""
    return unary(dom, expr, shapes=(), forms=forms)


def binary(dx=ANY, dy=ANY, expr="{F}({x}, {y})", pairs=PAIRS, h=H):
    """A broadcasting function of two arrays, over broadcasting pairs and 0-d forms."""

    def cases(F, p):
        x, y = (p + ["x", "y"])[:2] if len(p) >= 2 else ("x", "y")
        e = fmt(expr, F, [x, y])
        return [case(e, {x: inp(sx, dx), y: inp(sy, dy)}, h=h) for sx, sy in pairs]

    return cases


def op(symbol, dx=ANY, dy=ANY, pairs=PAIRS):
    """An operator: ``x + y``."""
    return binary(dx, dy, "({x} " + symbol + " {y})", pairs)


def powers(expr):
    """Constant exponents, at 0 too where the power is smooth there (``x ** 2`` at ``x = 0``)."""

    def cases(F, p):
        out = []
        for k, dom in [
            (2, ZEROS),
            (3, ZEROS),
            (0, ZEROS),
            (1, ZEROS),
            (-1, NONZERO),
            (0.5, POS),
            (-2, NONZERO),
            (2.0, ZEROS),
        ]:
            out += [
                case(fmt(expr, F, p[:1], k=k), {p[0]: inp(s, dom)})
                for s in [(3,), (2, 3), "py", ()]
            ]
        return out + [
            case(fmt(expr.replace("{x}", "2.0").replace("{k}", "{x}"), F, p[1:2]), {p[1]: inp(s)})
            for s in [(3,), "py"]
        ]

    return cases


def _scipy_batches():
    """Does this scipy's ``linalg`` take a stack of matrices (1.16 and later)?"""
    try:
        sla.cholesky(np.eye(2)[None])
    except ValueError:
        return False
    return True


def methods(*items):
    """The ndarray method or attribute spelling, ``{x}.sum(axis=0)`` (``{x}``: the receiver, the
    function's first parameter): items ``(expr, shape)`` or ``(expr, shape, domain)``."""

    def cases(F, p):
        x = p[0] if p else "x"
        return [
            case(e.format(x=x), {x: inp(s, d)})
            for e, s, d in (tuple(i) + (ANY,) * (3 - len(i)) for i in items)
        ]

    return cases


def grid(shapes, *kws, expr="{F}({x}{kw})", dom=ANY, when=None, **options):
    """``expr`` for each shape of the first parameter ``{x}`` and each keyword text ``{kw}``
    (``", axis=0"``); ``when(shape, kw)`` leaves out a combination numpy rejects."""

    def cases(F, p):
        return [
            case(fmt(expr, F, p, kw=kw), {p[0]: inp(s, dom)}, **options)
            for s in shapes
            for kw in (kws or ("",))
            if when is None or when(s, kw)
        ]

    return cases


def each(*items, expr="{F}({x}{kw})", dom=ANY):
    """``expr`` for each ``(shape, kw)`` item: a shape with the keywords that suit it."""

    def cases(F, p):
        return [case(fmt(expr, F, p, kw=kw), {p[0]: inp(s, dom)}) for s, kw in items]

    return cases


def joined(*items, expr="{F}([x, y]{kw})"):
    """Two arrays in the list the first parameter takes (``np.concatenate([x, y])``): items
    ``(x's shape, y's shape, kw)``."""

    def cases(F, p):
        return [
            case(fmt(expr, F, p, kw=kw), {"x": inp(sx, param=p[0]), "y": inp(sy, param=p[0])})
            for sx, sy, kw in items
        ]

    return cases


def cat(*factories):
    """The union of several grids."""
    return lambda F, p: [c for f in factories for c in f(F, p)]


def cases_of(*items):
    """A grid written out: each item ``(expr, {name: In}, **options)``; ``{F}`` is the function."""

    def cases(F, p):
        out = []
        for expr, inputs, *kw in items:
            out.append(case(expr.replace("{F}", F), inputs, **(kw[0] if kw else {})))
        return out

    return cases


# ---- reductions -----------------------------------------------------------------------------------


def axes_of(shape, tuples=True, empty=True):
    nd = len(shape)
    out = [None]
    if nd:
        out += [0, -1] + ([1] if nd >= 3 else [])
    if tuples and nd >= 2:
        out.append((0, -1))
    if empty and nd:
        out.append(())
    return out


def group_size(shape, axis):
    """How many entries one output of a reduction over ``axis`` reads."""
    if axis is None:
        return int(np.prod(shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(np.prod([shape[a] for a in axes]))


def reduction(
    dom=ANY,
    keepdims=True,
    tuples=True,
    empty=True,
    min_group=1,
    shapes=RSHAPES,
    extra="",
    forms=("py",),
):
    """``F(a, axis=..., keepdims=...)`` over shapes and axes (None, ints, tuples, ``()``)."""

    def cases(F, p):
        a = p[0]
        out = [
            case(f"{F}({a}{extra})", {a: inp(s, dom)})
            for s in list(shapes[:3]) + list(forms)
            if group_size(() if isinstance(s, str) else s, None) >= min_group
        ]
        for s in shapes:
            for ax in axes_of(s, tuples, empty):
                if group_size(s, ax) < min_group:
                    continue
                for kd in (False, True) if keepdims else (False,):
                    kw = f", axis={ax!r}" + (", keepdims=True" if kd else "")
                    out.append(case(f"{F}({a}{kw}{extra})", {a: inp(s, dom)}))
        return out

    return cases


def running(dom=ANY, shapes=RSHAPES, extra=""):
    """``F(a, axis=...)``: cumulative functions (``axis=None`` flattens)."""

    def cases(F, p):
        a = p[0]
        out = []
        for s in shapes:
            for ax in [None] + list(range(-len(s), len(s))):
                kw = "" if ax is None else f", axis={ax}"
                out.append(case(f"{F}({a}{kw}{extra})", {a: inp(s, dom)}))
        return out

    return cases


def quantiles(scale):
    """``F(a, q, ...)``: distinct entries (ties share, checked once), ``q`` a number or an array."""
    qdom = Dom(0.03 * scale, 0.97 * scale)

    def cases(F, p):
        out = [
            case(f"{F}(a, {q}{kw})", {"a": inp(s, DISTINCT)})
            for s in [(5,), (2, 3), (2, 1, 3)]
            for q in (0.25 * scale, 0.5 * scale, f"[{0.1 * scale}, {0.9 * scale}]")
            for kw in ["", ", axis=0", ", axis=-1, keepdims=True", ", axis=(0, -1)"]
            if len(s) > 1 or kw in ("", ", axis=0")
        ]
        out += [
            case(f"{F}(a, q{kw})", {"a": inp(s, DISTINCT), "q": inp(sq, qdom)})
            for s, sq, kw in [
                ((5,), (), ""),
                ((2, 3), (2,), ", axis=1"),
                ((4,), "py", ""),
                ((2, 3), (2, 2), ", axis=0, keepdims=True"),
            ]
        ]
        out += [
            case(f"{F}(a, {scale}, axis=0)", {"a": inp((3, 2), DISTINCT)}),
            case(f"{F}(a, 0.0)", {"a": inp((4,), DISTINCT)}),
            case(f"{F}(a * 0.0 + 1.0, q)", {"a": inp((3,)), "q": inp((), qdom)}),
            case(
                f"{F}(a, q, method='nearest')",
                {"a": inp((4,), DISTINCT), "q": inp((), qdom)},
                refused="method",
            ),
        ]
        return out

    return cases


# ---- products -------------------------------------------------------------------------------------
SIZES = [dict(i=2, j=3, k=4, b=2, l=2), dict(i=1, j=2, k=1, b=3, l=1)]


def products(*patterns, expr="{F}({x}, {y})", dom=ANY):
    """Operands of shapes given as index patterns (``"ij,jk"``), at two sets of sizes (one with
    length-1 axes)."""

    def cases(F, p):
        out = []
        for pattern in patterns:
            names = p[: pattern.count(",") + 1]
            e = fmt(expr, F, names)
            for sizes in SIZES:
                shapes = [tuple(sizes[c] for c in part) for part in pattern.split(",")]
                out.append(case(e, {n: inp(s, dom) for n, s in zip(names, shapes)}))
        return out

    return cases


def square(expr="{F}({x})", batch=((), (2,)), sizes=(1, 2, 3), rhs=None):
    """Well-conditioned square matrices (batched too), with right-hand sides of ``rhs`` shapes."""

    def cases(F, p):
        out = []
        for lead in batch:
            for n in sizes:
                if rhs is None:
                    out.append(case(fmt(expr, F, p), {p[0]: inp(lead + (n, n), MATRIX)}))
                    continue
                for r in rhs(lead, n):
                    out.append(
                        case(fmt(expr, F, p), {p[0]: inp(lead + (n, n), MATRIX), p[1]: inp(r, ANY)})
                    )
        return out

    return cases


MATMUL = [
    "ij,jk",
    "j,jk",
    "ij,j",
    "j,j",
    "bij,jk",
    "ij,bjk",
    "bij,bjk",
    "bij,j",
    "j,bjk",
    "bij,bjk",
]
DOT = ["ij,jk", "j,jk", "ij,j", "j,j", "bij,jk", "ij,bjk", "bij,j", ",jk", "ij,", ","]


# ---- the table ------------------------------------------------------------------------------------
def elementwise_specs():
    unary_doms = {
        np.negative: ANY,
        np.positive: ANY,
        np.square: ANY,
        np.exp: ANY,
        np.exp2: ANY,
        np.expm1: ANY,
        np.sin: ANY,
        np.cos: ANY,
        np.arctan: ANY,
        np.sinh: ANY,
        np.cosh: ANY,
        np.tanh: ANY,
        np.arcsinh: ANY,
        np.deg2rad: ANY,
        np.radians: ANY,
        np.rad2deg: ANY,
        np.degrees: ANY,
        np.sinc: ANY,
        np.asarray: ANY,
        np.asanyarray: ANY,
        np.array: ANY,
        np.float64: ANY,
        np.ascontiguousarray: ANY,
        np.real: ANY,
        np.conjugate: ANY,
        np.nan_to_num: ANY,
        np.reciprocal: NONZERO,
        np.cbrt: NONZERO,
        np.absolute: NONZERO,
        np.fabs: NONZERO,
        np.sqrt: POS,
        np.log: POS,
        np.log2: POS,
        np.log10: POS,
        np.log1p: Dom(-0.7, 2.0),
        np.tan: Dom(-1.2, 1.2),
        np.arcsin: UNIT,
        np.arccos: UNIT,
        np.arctanh: UNIT,
        np.arccosh: Dom(1.2, 3.0),
    }
    specs = {k: unary(d) for k, d in unary_doms.items()}
    specs[np.float32] = unary(h=1e-3)  # rounds to float32: a step float32 resolves
    math_doms = {
        math.exp: ANY,
        math.expm1: ANY,
        math.sin: ANY,
        math.cos: ANY,
        math.atan: ANY,
        math.sinh: ANY,
        math.cosh: ANY,
        math.tanh: ANY,
        math.asinh: ANY,
        math.radians: ANY,
        math.degrees: ANY,
        math.erf: ANY,
        math.erfc: ANY,
        math.sqrt: POS,
        math.log2: POS,
        math.log10: POS,
        math.fabs: NONZERO,
        math.log1p: Dom(-0.7, 2.0),
        math.tan: Dom(-1.2, 1.2),
        math.asin: UNIT,
        math.acos: UNIT,
        math.atanh: UNIT,
        math.acosh: Dom(1.2, 3.0),
    }
    specs.update({k: pyunary(d) for k, d in math_doms.items()})
    specs.update(
        {
            math.log: cat(pyunary(POS), binary(POS, Dom(1.5, 4.0), pairs=PY_PAIRS)),
            operator.neg: unary(expr="(-{x})"),
            operator.pos: unary(expr="(+{x})"),
            builtins.abs: unary(NONZERO, expr="abs({x})"),
            builtins.float: unary(expr="float({x})", shapes=[()]),
            np.add: binary(),
            np.subtract: binary(),
            np.multiply: binary(),
            np.divide: binary(ANY, NONZERO),
            np.power: cat(binary(POS), powers("{F}({x}, {k})")),
            np.float_power: binary(POS),
            np.remainder: binary(MOD_X, MOD_Y),
            np.fmod: binary(MOD_X, MOD_Y),
            np.logaddexp: binary(),
            np.logaddexp2: binary(),
            np.arctan2: binary(NONZERO, NONZERO),
            np.hypot: binary(NONZERO, NONZERO),
            np.maximum: binary(GRID0, GRID1),
            np.minimum: binary(GRID0, GRID1),
            np.fmax: binary(GRID0, GRID1),
            np.fmin: binary(GRID0, GRID1),
            np.copysign: binary(NONZERO, NONZERO),  # y: declared piecewise constant, FD must be 0
            operator.add: op("+"),
            operator.sub: op("-"),
            operator.mul: op("*"),
            operator.truediv: op("/", ANY, NONZERO),
            operator.pow: cat(op("**", POS), powers("({x} ** {k})")),
            operator.mod: op("%", MOD_X, MOD_Y),
            builtins.pow: binary(POS, expr="pow({x}, {y})"),
            math.pow: binary(POS, pairs=PY_PAIRS),
            math.fmod: binary(MOD_X, MOD_Y, pairs=PY_PAIRS),
            math.atan2: binary(NONZERO, NONZERO, pairs=PY_PAIRS),
            math.hypot: binary(NONZERO, NONZERO, pairs=PY_PAIRS),
            builtins.max: binary(GRID0, GRID1, "max({x}, {y})", PY_PAIRS + [((), "py"), ((), ())]),
            builtins.min: binary(GRID0, GRID1, "min({x}, {y})", PY_PAIRS + [((), "py"), ((), ())]),
            # x1 generic: piecewise constant in it (FD 0); x2 is the value where x1 is 0
            np.heaviside: cat(
                binary(NONZERO, ANY),
                cases_of(
                    ("{F}(STEPS, x2)", {"x2": inp((), ANY)}),
                    ("{F}(STEPS, x2)", {"x2": inp((4,), ANY)}),
                    ("{F}(STEPS, x2)", {"x2": inp("py", ANY)}),
                    ("{F}(STEPS[:, None], x2)", {"x2": inp((1, 3), ANY)}),
                ),
            ),
        }
    )
    return specs


VECTOR_ORDS = [2, 1, 3, 0.5, -1, np.inf, -np.inf, 0]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
P_ORD = Dom(1.5, 3.0)  # a p-norm's order, as a float


def reduction_specs():
    spread = reduction(ANY)
    ddof = Dom(0.2, 0.8)  # a float ddof: the divisor N - ddof
    float_ddof = cases_of(
        *[
            (e, {"a": inp(s), "d": inp(sd, ddof, param="ddof")})
            for e, s, sd in [
                ("{F}(a, ddof=d)", (4,), "py"),
                ("{F}(a, axis=0, ddof=d)", (3, 2), ()),
                ("{F}(a, axis=-1, ddof=d, keepdims=True)", (2, 3), "py"),
                ("{F}(a, ddof=d)", (2, 2), "scalar"),
            ]
        ]
    )
    return {
        np.sum: reduction(),
        np.nansum: reduction(),
        np.mean: reduction(empty=False),
        np.nanmean: reduction(empty=False),
        np.prod: cat(reduction(HALF), reduction(ZEROS, keepdims=False, empty=False)),
        np.max: reduction(DISTINCT, empty=False),
        np.amax: reduction(DISTINCT, empty=False),
        np.min: reduction(DISTINCT, empty=False),
        np.amin: reduction(DISTINCT, empty=False),
        np.nanmax: reduction(DISTINCT, empty=False),
        np.nanmin: reduction(DISTINCT, empty=False),
        np.ptp: reduction(DISTINCT, empty=False),
        np.var: cat(
            spread, reduction(min_group=2, extra=", ddof=1", keepdims=False, forms=()), float_ddof
        ),
        np.std: cat(
            spread, reduction(min_group=2, extra=", ddof=1", keepdims=False, forms=()), float_ddof
        ),
        np.average: cat(
            reduction(empty=False, tuples=False),
            cases_of(
                ("{F}(a, weights=weights)", {"a": inp((3,)), "weights": inp((3,), POS)}),
                ("{F}(a, axis=0, weights=weights)", {"a": inp((3, 2)), "weights": inp((3,), POS)}),
                ("{F}(a, axis=-1, weights=weights)", {"a": inp((2, 3)), "weights": inp((3,), POS)}),
                (
                    "{F}(a, axis=1, weights=weights, keepdims=True)",
                    {"a": inp((2, 3)), "weights": inp((2, 3), POS)},
                ),
                ("{F}(a, weights=weights)", {"a": inp((2, 3)), "weights": inp((2, 3), POS)}),
                ("{F}(a, axis=0, weights=weights)", {"a": inp((1, 2)), "weights": inp((1,), POS)}),
            ),
        ),
        builtins.sum: cases_of(
            (
                "sum([x, y, x * y])",
                {"x": inp((), param="iterable"), "y": inp((), param="iterable")},
            ),
            (
                "sum([x, y], 1.0)",
                {"x": inp("py", param="iterable"), "y": inp("py", param="iterable")},
            ),
            ("sum([x, y])", {"x": inp((2, 3), param="iterable"), "y": inp((3,), param="iterable")}),
            (
                "sum((x, y), start)",
                {
                    "x": inp((3,), param="iterable"),
                    "y": inp((3,), param="iterable"),
                    "start": inp((3,)),
                },
            ),
            (
                "sum((x, y), start)",
                {
                    "x": inp((3,), param="iterable"),
                    "y": inp((3,), param="iterable"),
                    "start": inp((2, 1)),
                },
            ),
            ("sum(x)", {"x": inp((3, 2), param="iterable")}),
            ("sum(x)", {"x": inp((3,), param="iterable")}),
            ("sum(x, start)", {"x": inp((3,), param="iterable"), "start": inp("py")}),
            ("sum(x, start)", {"x": inp((1, 3), param="iterable"), "start": inp("py")}),
        ),
        np.linalg.norm: cat(
            reduction(SDISTINCT, shapes=[(4,), (2, 3)], tuples=False, empty=False, forms=()),
            grid([(4,), (1,)], *[f", ord={lit(o)}" for o in VECTOR_ORDS], dom=SDISTINCT),
            grid(
                [(2, 3), (3, 3), (2, 2, 3)],
                *[
                    f", ord={lit(o)}, axis={ax!r}, keepdims={kd}"
                    for ax in [None, (0, 1), (-1, 0)]
                    for o in MATRIX_ORDS
                    for kd in (False, True)
                ],
                dom=SDISTINCT,
                when=lambda s, kw: len(s) == 2 or "axis=None" not in kw,
            ),
            grid([(2, 3)], ", 1, 0", ", np.inf, 1", ", 2, -1", dom=SDISTINCT),
            cases_of(
                *[
                    (e, {"x": inp(s, SDISTINCT), "p": inp(sp, P_ORD, param="ord")})
                    for e, s, sp in [
                        ("{F}(x, ord=p)", (3,), "py"),
                        ("{F}(x, p, 1)", (2, 3), ()),
                        ("{F}(x, ord=p, axis=0, keepdims=True)", (3, 2), "py"),
                    ]
                ]
            ),
        ),
        np.linalg.vector_norm: cat(
            grid(
                [(4,), (2, 3), (1, 3)],
                *[
                    f", axis={ax!r}, keepdims={kd}, ord={lit(o)}"
                    for ax in [None, 0, -1, (0, -1)]
                    for o in VECTOR_ORDS
                    for kd in (False, True)
                ],
                dom=SDISTINCT,
                when=lambda s, kw: len(s) > 1 or "(0, -1)" not in kw,
            ),
            grid([(), (2, 3)], dom=SDISTINCT),
            cases_of(
                *[
                    (e, {"x": inp(s, SDISTINCT), "p": inp(sp, P_ORD, param="ord")})
                    for e, s, sp in [
                        ("{F}(x, ord=p)", (3,), ()),
                        ("{F}(x, axis=-1, ord=p)", (2, 3), "py"),
                    ]
                ]
            ),
        ),
        np.linalg.matrix_norm: cat(
            grid(
                [(2, 3), (3, 3), (2, 2, 3), (1, 3)],
                *[
                    f", keepdims={kd}, ord={lit(o)}"
                    for o in MATRIX_ORDS[1:]
                    for kd in (False, True)
                ],
                dom=SDISTINCT,
            ),
            cases_of(
                (
                    "{F}(x, ord=p)",
                    {"x": inp((2, 2), SDISTINCT), "p": inp("py", P_ORD, param="ord")},
                    {"refused": "ord"},
                )
            ),
        ),  # numpy too
        np.cumsum: running(),
        np.nancumsum: running(),
        np.cumprod: cat(running(HALF), running(ZEROS)),
        np.cumulative_sum: grid(
            [(3,), (2, 3), (1, 3), (2, 1, 2)],
            *[
                f"{ax}, include_initial={ii}"
                for ax in ["", ", axis=0", ", axis=-1"]
                for ii in (False, True)
            ],
            when=lambda s, kw: len(s) == 1 or "axis" in kw,
        ),
        np.gradient: cat(
            grid(
                [(5,), (3,), (2,)],
                "",
                ", 0.5",
                ", edge_order=2",
                ", 2.0, edge_order=2",
                when=lambda s, kw: s[0] > 2 or "edge_order=2" not in kw,
            ),
            grid(
                [(4, 3), (3, 3, 4)],
                ", axis=0",
                ", axis=-1",
                ", 0.5, axis=1",
                ", axis=1, edge_order=2",
            ),
            cases_of(
                ("{F}(f, X)", {"f": inp((4,))}),
                ("{F}(f, X, edge_order=2)", {"f": inp((4,))}),
                ("{F}(f, X, axis=1)", {"f": inp((2, 4))}),
                ("{F}(f, h)", {"f": inp((4,)), "h": inp("py", POS, "spacing")}),
                ("{F}(f, h, axis=0)", {"f": inp((3, 2)), "h": inp((), POS, "spacing")}),
            ),
        ),
        np.diff: cat(
            each(
                *[
                    (s, f", {n}, {ax}")
                    for s in [(4,), (3, 4), (4, 1), (1, 3, 4)]
                    for n in (1, 2)
                    for ax in (0, -1)
                    if s[ax] > n
                ],
                ((4,), ""),
                ((2, 3), ", n=3, axis=-1"),
                ((3,), ", prepend=0.5, append=-1.0"),
            ),
            cases_of(
                *[
                    (e, {"a": inp(sa)} | {n: inp(sv) for n, sv in ends})
                    for e, sa, ends in [
                        ("{F}(a, prepend=prepend)", (3,), [("prepend", ())]),
                        ("{F}(a, prepend=prepend)", (2, 3), [("prepend", (2, 1))]),
                        ("{F}(a, append=append)", (2, 3), [("append", "py")]),
                        (
                            "{F}(a, 2, axis=0, prepend=prepend, append=append)",
                            (3, 2),
                            [("prepend", (1, 2)), ("append", (2, 2))],
                        ),
                        (
                            "{F}(a, 1, 0, prepend, append)",
                            (2,),
                            [("prepend", ()), ("append", (1,))],
                        ),
                    ]
                ]
            ),
        ),
        np.median: cat(
            reduction(DISTINCT, empty=False, forms=()),
            grid([(2, 3)], expr="{F}({x} * 0.0 + 1.0, axis=0)"),
        ),  # ties share
        np.quantile: quantiles(1.0),
        np.percentile: quantiles(100.0),
        np.cov: cat(
            grid(
                [(3,), (2, 3), (3, 4), (1, 3)],
                "",
                ", bias=True",
                ", ddof=0",
                ", rowvar=False",
                ", ddof=2",
                when=lambda s, kw: (
                    not ("rowvar" in kw and s[0] < 2)
                    and not ("ddof=2" in kw and len(s) > 1 and s[-1] < 3)
                ),
            ),
            cases_of(
                *[
                    (f"{{F}}(m, y{kw})", {"m": inp(sm), "y": inp(sy)})
                    for sm, sy, kw in [
                        ((3,), (3,), ""),
                        ((2, 3), (3,), ""),
                        ((3, 2), (3,), ", rowvar=False"),
                        ((3, 2), (3, 1), ", rowvar=False, bias=True"),
                    ]
                ]
            ),
            # observation weights: aweights (any positive numbers) have an adjoint, fweights
            # (integer counts) none
            cases_of(
                *[
                    (f"{{F}}(m{kw})", {"m": inp(sm), "a": inp((4,), POS, param="aweights")})
                    for sm, kw in [
                        ((2, 4), ", aweights=a"),
                        ((4,), ", aweights=a, ddof=0"),
                        ((3, 4), ", fweights=FW, aweights=a"),
                        ((4, 2), ".T, aweights=a, bias=True"),
                        ((2, 4), ", m[::-1] * 0.5, aweights=a, ddof=2"),
                    ]
                ],
                ("{F}(m, fweights=FW)", {"m": inp((2, 4))}),
                ("{F}(m, fweights=FW, ddof=0)", {"m": inp((4,))}),
            ),
        ),
        np.corrcoef: cat(
            grid(
                [(2, 3), (3, 4), (3,)],
                "",
                ", rowvar=False",
                when=lambda s, kw: not ("rowvar" in kw and len(s) == 1),
            ),
            cases_of(
                *[
                    (f"{{F}}(x, y{kw})", {"x": inp(sx), "y": inp(sy)})
                    for sx, sy, kw in [
                        ((3,), (3,), ""),
                        ((2, 3), (3,), ""),
                        ((3, 2), (3,), ", rowvar=False"),
                    ]
                ]
            ),
        ),
        np.polyval: cases_of(
            *[
                ("{F}(p, x)", {"p": inp(sp), "x": inp(sx)})
                for sp, sx in [
                    ((3,), ()),
                    ((4,), (3,)),
                    ((1,), (2, 2)),
                    ((3, 2), (2,)),
                    ((2,), "py"),
                    ((3,), (2, 3)),
                ]
            ]
            + [
                ("{F}([1.0, p, 2.0], x)", {"p": inp("py"), "x": inp((3,))}),
                ("{F}(P3, x)", {"x": inp((2, 3), ZEROS)}),
            ]
        ),
        np.trapezoid: cases_of(
            ("{F}(y)", {"y": inp((4,))}),
            ("{F}(y, axis=0)", {"y": inp((3, 2))}),
            ("{F}(y)", {"y": inp((2, 1, 3))}),
            ("{F}(y, dx=0.5, axis=0)", {"y": inp((3, 2))}),
            ("{F}(y, dx=dx, axis=0)", {"y": inp((3, 2)), "dx": inp("py", POS)}),
            ("{F}(y, dx=dx)", {"y": inp((2, 3)), "dx": inp((), POS)}),
            ("{F}(y, x)", {"y": inp((3,)), "x": inp((3,), INCREASING)}),
            ("{F}(y, x)", {"y": inp((2, 3)), "x": inp((3,), INCREASING)}),
            ("{F}(y, x, axis=0)", {"y": inp((3, 2)), "x": inp((3, 2))}),
            ("{F}(y, x)", {"y": inp((2, 3)), "x": inp((2, 3))}),
        ),
    }


def linalg_specs():
    LA = np.linalg
    ein = [
        ("ij,jk->ik", "ij,jk"),
        ("ij,jk", "ij,jk"),
        ("bij,bjk->bik", "bij,bjk"),
        ("ii->i", "jj"),
        ("ij->", "ij"),
        ("ij->ji", "ij"),
        ("i,i->", "j,j"),
        ("i,j->ij", "i,j"),
        ("ij,ij->ij", "ij,ij"),
        ("...ij,...jk->...ik", "ij,jk"),
        ("...ij,...jk->...ik", "bij,jk"),
        ("...ij,...jk->...ik", "ij,bjk"),
        ("...ij,...jk->...ik", "bij,bjk"),
        ("...i,...i", "bi,i"),
        ("...ii->...i", "bjj"),
        ("jk...,lj...->lk...", "jkb,ljb"),
        ("...i,ij->...j", "bi,ij"),
        ("ij,jk,kl->il", "ij,jk,kl"),
        ("i,i,i->", "j,j,j"),
        ("bi,bi->b", "bi,bi"),
    ]
    einsum_cases = []
    for sub, pattern in ein:
        for sizes in SIZES:
            names = ["a", "b", "c"][: pattern.count(",") + 1]
            shapes = [tuple(sizes[c] for c in part) for part in pattern.split(",")]
            einsum_cases.append(
                (f"{{F}}({sub!r}, {', '.join(names)})", {n: inp(s) for n, s in zip(names, shapes)})
            )
    many = "abcefhpq"  # the template's operand names (up to eight)
    einsum_cases += [
        ("{F}('ij,jk,kl,lm->im', a, b, c, e)", {n: inp((2, 2)) for n in "abce"}),
        ("{F}('ij,jk,kl,lm->im', a, b, c, e, optimize=True)", {n: inp((2, 2)) for n in "abce"}),
        ("{F}('ij,jk,kl->il', a, b, c, optimize='greedy')", {n: inp((2, 2)) for n in "abc"}),
        (f"{{F}}('i,i,i,i,i,i,i,i->', {', '.join(many)})", {n: inp((3,), HALF) for n in many}),
        (
            f"{{F}}('i,ij,j,jk,k,kl,l,lm->im', {', '.join(many)}, optimize=True)",
            {n: inp((2,) * (1 + k % 2), HALF) for k, n in enumerate(many)},
        ),
    ]
    # the interleaved form: the first operand binds to the template's ``subscripts``
    einsum_cases += [
        ("{F}(a, [0, 1], [1, 0])", {"a": inp((2, 3), param="subscripts")}),
        (
            "{F}(a, [0, 1], b, [1, 2], [0, 2])",
            {"a": inp((2, 3), param="subscripts"), "b": inp((3, 2), param="b")},
        ),
    ]
    diag_shapes = [(3,), (1,), (3, 3), (2, 3), (3, 1)]
    return {
        np.dot: products(*DOT),
        np.matmul: products(*MATMUL),
        operator.matmul: products(*MATMUL, expr="({x} @ {y})"),
        LA.matmul: products(*MATMUL),
        np.inner: products("j,j", "ij,kj", "bij,j", "j,kj", ",ij", "ij,"),
        np.outer: products("i,j", "ij,k", ",j", "bi,jk"),
        LA.outer: products("i,j"),
        np.vdot: products("i,i", "ij,ji", "ij,ij"),
        np.vecdot: cat(
            products("j,j", "ij,j", "bij,ij", "j,bij", "ij,bj"),
            products("ji,j", "jb,jb", "jbi,ji", expr="{F}({x}, {y}, axis=0)"),
        ),
        LA.vecdot: cat(products("ij,j", "j,j"), products("ji,j", expr="{F}({x}, {y}, axis=0)")),
        np.matvec: products("ij,j", "bij,j", "ij,bj", "bij,bj"),
        np.vecmat: products("i,ij", "bi,ij", "i,bij", "bi,bij"),
        np.tensordot: cat(
            products("ij,jk", "bij,jk", "j,j", "j,jk", expr="{F}({x}, {y}, 1)"),
            products("ij,k", ",j", expr="{F}({x}, {y}, axes=0)"),
            products("bij,ijk", "ij,ij", expr="{F}({x}, {y})"),
            products("ikb,bij", expr="{F}({x}, {y}, axes=AXES)"),
        ),
        LA.tensordot: cat(
            products("ij,jk", "j,jk", expr="{F}({x}, {y}, axes=1)"), products("bij,ijk")
        ),
        np.einsum: cases_of(*einsum_cases),
        np.kron: products("i,j", "ij,kb", "i,jk", "bij,kl", "bij,ijk"),
        np.cross: cases_of(
            *[
                ("{F}(a, b)", {"a": inp(sa), "b": inp(sb)})
                for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1, 3), (4, 3))]
            ],
            # (2-vectors: deprecated by numpy 2.0 and refused by newer numpy itself)
            *[
                (f"{{F}}(a, b, {kw})", {"a": inp(sa), "b": inp(sb)})
                for sa, sb, kw in [
                    ((3, 4), (4, 3), "axisa=0"),
                    ((2, 3), (3, 2), "axisa=-1, axisb=0, axisc=0"),
                    ((3, 2), (3, 2), "axis=0"),
                    ((3, 4), (4, 3), "axisa=0, axisb=1"),
                    ((2, 2, 3), (3, 2), "axisb=0, axisc=1"),
                ]
            ],
        ),
        LA.cross: cases_of(
            ("{F}(a, b)", {"a": inp((3,)), "b": inp((3,))}),
            ("{F}(a, b)", {"a": inp((2, 3)), "b": inp((2, 3))}),
            ("{F}(a, b, axis=0)", {"a": inp((3, 2)), "b": inp((3, 2))}),
        ),
        np.trace: grid(
            [(3, 3), (2, 3), (3, 1), (2, 3, 2)],
            "",
            ", 1",
            ", offset=-1",
            ", 0, 1, 2",
            ", axis1=-1, axis2=0",
            when=lambda s, kw: len(s) == 3 or "2" not in kw,
        ),
        LA.trace: grid([(3, 3), (2, 3), (2, 2, 3)], "", ", offset=1", ", offset=-1"),
        np.diag: grid([(3,), (1,), (3, 3), (2, 3), (3, 1)], "", ", 1", ", k=-1"),
        np.diagflat: grid([(3,), (2, 2), (1,), ()], "", ", 1", ", k=-2"),
        np.diagonal: grid(
            [(3, 3), (2, 3), (3, 2, 2)], "", ", 1", ", -1, 1, 0", ", offset=0, axis1=-2, axis2=-1"
        ),
        LA.diagonal: grid([(3, 3), (2, 3), (2, 2, 3)], "", ", offset=1"),
        np.tril: cat(
            grid([(3, 3), (2, 3), (2, 3, 3)], "", ", -1", ", k=1"), grid([(4,)], "", ", -1")
        ),
        np.triu: cat(
            grid([(3, 3), (2, 3), (2, 3, 3)], "", ", -1", ", k=1"), grid([(4,)], "", ", k=1")
        ),
        LA.inv: square(),
        LA.det: square(),
        LA.slogdet: square("{F}({x})[1]"),
        LA.solve: square(
            "{F}({x}, {y})",
            rhs=lambda lead, n: [lead + (n, 2), lead + (n, 1)] + ([(n,)] if not lead else []),
        ),
        LA.matrix_power: cat(
            *[square(f"{{F}}({{x}}, {k})", sizes=(1, 3)) for k in (-2, -1, 0, 1, 2, 3)]
        ),
        LA.cholesky: cat(square(), square("{F}({x}, upper=True)")),
        # np.fill_diagonal(b, v) on a buffer the function allocated: b = filled_diagonal(b, v)
        runtime.filled_diagonal: cases_of(
            *[
                ("b", {"a": inp(sa), "v": inp(sv, param="val")}, {"pre": f"b = a * 1.0\n{call}"})
                for sa, sv, call in [
                    ((3, 3), "py", "np.fill_diagonal(b, v)"),
                    ((4, 3), (3,), "np.fill_diagonal(b, v)"),
                    ((2, 4), (), "np.fill_diagonal(b, v)"),
                    ((3, 3), (2,), "np.fill_diagonal(b, v)"),
                    ((2, 2, 2), (2,), "np.fill_diagonal(b, v)"),
                    ((7, 3), (3,), "np.fill_diagonal(b, v, wrap=True)"),
                    ((7, 3), "scalar", "np.fill_diagonal(b, val=v, wrap=False)"),
                ]
            ]
        ),
        LA.eigh: cat(
            *[
                cases_of(*[(e, {"a": inp(sh, SMALL)}) for sh in [(3, 3), (2, 3, 3)]])
                for e in [
                    "{F}(a + SPREAD)[0]",
                    "{F}(a + SPREAD)[1] ** 2",
                    "{F}(a + SPREAD, UPLO='U')[1] ** 2",
                    "{F}(a + SPREAD, 'U')[0]",
                ]
            ],
            square("{F}({x})[0]", sizes=(1, 2)),
        ),
        LA.eigvalsh: cat(
            cases_of(
                ("{F}(a + SPREAD)", {"a": inp((2, 3, 3), SMALL)}),
                ("{F}(a + SPREAD, UPLO='U')", {"a": inp((3, 3), SMALL)}),
            ),
            square(sizes=(1,)),
        ),
        LA.svd: cases_of(
            *[
                (e, {"a": inp(sh, SMALL)})
                for e, sh in ranked_shapes(
                    "{F}(a + {M}, compute_uv=False)",
                    "{F}(a + {M}, full_matrices=False)[0] ** 2",
                    "{F}(a + {M}, False)[2] ** 2",
                    "{F}(a + {M}, full_matrices=False)[1]",
                )
            ]
            + [
                ("{F}(a + SPREAD)[0] @ {F}(a + SPREAD)[2]", {"a": inp((2, 3, 3), SMALL)}),
                ("{F}(a + TALL)[1]", {"a": inp((4, 2), SMALL)}),
                # full_matrices=True on a matrix that is not square: the extra columns of u (rows of vh) are
                # one basis of the complement; a loss reading them through their span has a gradient
                ("{F}(a + TALL)[0][:, :2] ** 2", {"a": inp((4, 2), SMALL)}),
                (
                    "u[:, 2:] @ u[:, 2:].T + u[:, :1] ** 3",
                    {"a": inp((4, 2), SMALL)},
                    {"pre": "u = np.linalg.svd(a + TALL)[0]"},
                ),
                (
                    "vh[2:].T @ vh[2:] + np.sum(u ** 3)",
                    {"a": inp((2, 3), SMALL)},
                    {"pre": "u, s, vh = np.linalg.svd(a + WIDE)"},
                ),
                (
                    "u[..., 2:] @ np.swapaxes(u[..., 2:], -1, -2)",
                    {"a": inp((2, 4, 2), SMALL)},
                    {"pre": "u = np.linalg.svd(a + TALL)[0]"},
                ),
            ]
        ),
        **(
            {
                LA.svdvals: cases_of(
                    *[(e, {"x": inp(sh, SMALL)}) for e, sh in ranked_shapes("{F}(x + {M})")]
                )
            }
            if hasattr(LA, "svdvals")
            else {}
        ),
        LA.qr: cases_of(
            *[
                (e, {"a": inp(sh, SMALL)})
                for e, sh in ranked_shapes(
                    "{F}(a + {M})[0]", "{F}(a + {M})[1]", "{F}(a + {M}, mode='r')"
                )
            ]
        ),  # wide too
        LA.pinv: cases_of(
            *[
                (e, {"a": inp(sh, SMALL)})
                for e, sh in ranked_shapes("{F}(a + {M})", "{F}(a + {M}, rcond=1e-10)")
            ]
        ),
        np.convolve: convolutions("full", True),
        np.correlate: convolutions("valid", False),
        LA.lstsq: cases_of(
            *[
                (f"{{F}}(a + {m}, b)[{k}]", {"a": inp(sa, SMALL), "b": inp(sb)})
                for m, sa, sb in [
                    ("SPREAD", (3, 3), (3,)),
                    ("TALL", (4, 2), (4,)),
                    ("TALL", (4, 2), (4, 3)),
                ]
                for k in (0, 1, 3)
                if k != 1 or m == "TALL"
            ]
        ),
    }


SMALL = Dom(-0.3, 0.3)


def convolutions(default, scalars):
    """Two vectors of every length order (and a 0-d operand where numpy reads it as one entry), each mode."""
    pairs = [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((2,), (5,)), ((1,), (3,))] + (
        [((), (3,)), ((4,), "py")] if scalars else []
    )

    def cases(F, p):
        return [
            case(f"{F}(a, v{kw})", {"a": inp(sa), "v": inp(sv)})
            for sa, sv in pairs
            for kw in ["", ", 'full'", ", mode='same'", ", 'valid'"]
            if not (kw == "" and default == "full")
        ]

    return cases


def ranked_shapes(*exprs, tall=False):
    """``(expr, shape)`` pairs: ``a`` plus a constant of full rank (``{M}``) with distinct singular
    values, square (batched too), tall and (unless ``tall``) wide."""
    shapes = [("SPREAD", (3, 3)), ("SPREAD", (2, 3, 3)), ("TALL", (4, 2))] + (
        [] if tall else [("WIDE", (2, 3))]
    )
    return [(e.replace("{M}", m), sh) for e in exprs for m, sh in shapes]


def shape_specs():
    return {
        np.atleast_1d: unary(),
        np.atleast_2d: unary(),
        np.atleast_3d: unary(),
        np.reshape: cat(
            grid(
                [(2, 3)], ", (3, 2)", ", -1", ", shape=(1, 6)", ", (3, 2), order='F'", ", -1, 'F'"
            ),
            each(((4,), ", (2, 1, 2)"), ((), ", (1,)"), ((1, 3), ", (3,)")),
            # the operand's memory layout decides: refused
            grid([(2, 3)], ", -1, order='A'", ", (3, 2), 'K'", refused="order"),
        ),
        np.ravel: cat(
            grid([(), (3,), (2, 3), (2, 1, 2)], "", ", order='F'"),
            grid([(2, 3)], ", order='A'", ", 'K'", refused="order"),
        ),
        np.squeeze: each(
            ((1, 3, 1), ""),
            ((1, 3, 1), ", axis=0"),
            ((1, 3, 1), ", axis=(0, 2)"),
            ((2, 1), ", axis=-1"),
            ((1,), ""),
            ((), ""),
            ((3,), ""),
        ),
        np.expand_dims: each(
            *[(s, f", {ax}") for s in [(), (3,), (2, 3)] for ax in range(-len(s) - 1, len(s) + 1)],
            ((3,), ", (0, 2)"),
        ),
        np.broadcast_to: each(
            ((), ", (3,)"),
            ((3,), ", (2, 3)"),
            ((2, 1), ", (2, 3)"),
            ((1, 3), ", (2, 2, 3)"),
            ((2, 3), ", (2, 3)"),
            ("py", ", (2,)"),
        ),
        np.copy: unary(),
        np.transpose: each(
            ((2, 3), ""),
            ((2, 3, 4), ""),
            ((2, 3, 4), ", (1, 0, 2)"),
            ((2, 3, 4), ", axes=(2, 0, 1)"),
            ((3,), ""),
            ((), ""),
            ((1, 3), ", (1, 0)"),
        ),
        np.swapaxes: grid([(2, 3), (2, 1, 3)], ", 0, 1", ", -1, 0", ", 0, 0"),
        np.moveaxis: grid([(2, 3), (2, 1, 3)], ", 0, -1", ", -1, 0", ", (0, 1), (1, 0)"),
        np.matrix_transpose: unary(shapes=[(2, 3), (2, 1, 3)], forms=()),
        np.linalg.matrix_transpose: unary(shapes=[(2, 3), (1, 3)], forms=()),
        np.flip: grid(
            [(), (3,), (2, 3), (2, 1, 3)],
            "",
            ", 0",
            ", axis=-1",
            ", (0, 1)",
            when=lambda s, kw: len(s) > ("(" in kw) or kw == "",
        ),
        np.fliplr: unary(shapes=[(2, 3), (2, 3, 2)], forms=()),
        np.flipud: unary(shapes=[(3,), (2, 3)], forms=()),
        np.roll: grid(
            [(4,), (2, 3), (3, 1)],
            ", 1",
            ", -2, 0",
            ", 5, axis=-1",
            ", (1, -2), (0, 1)",
            when=lambda s, kw: len(s) > 1 or "(" not in kw,
        ),
        np.rot90: cat(
            grid([(2, 3), (2, 3, 2)], "", ", 2", ", -1", ", 3, (1, 0)"),
            each(((2, 3, 2), ", 1, (1, 2)")),
        ),
        np.tile: grid([(), (3,), (2, 3)], ", 2", ", (2, 1)", ", (1, 2, 2)", ", 1"),
        np.repeat: cat(
            grid(
                [(3,), (3, 2)],
                ", 2",
                ", 0",
                ", 3, axis=0",
                ", 2, axis=-1",
                ", np.array([2, 0, 1]), axis=0",
            ),
            each(((), ", 2")),
        ),
        np.pad: cat(
            grid(
                [(3,), (2, 3)],
                ", 1",
                ", (2, 1)",
                ", 2, mode='edge'",
                ", 2, mode='reflect'",
                ", 2, mode='symmetric'",
                ", (1, 2), mode='wrap'",
                ", 1, 'constant', constant_values=3.0",
            ),
            each(((2, 3), ", WIDTHS"), ((), ", 0")),
            cases_of(
                (
                    "{F}(array, (1, 2), constant_values=c)",
                    {"array": inp((2, 3)), "c": inp((), param="constant_values")},
                ),
                (
                    "{F}(array, 1, constant_values=c)",
                    {"array": inp((3,)), "c": inp("py", param="constant_values")},
                ),
                ("{F}(array, 1, mode='mean')", {"array": inp((3,))}, {"refused": "mode"}),
            ),
        ),
        np.delete: grid(
            [(4,), (3, 3)],
            ", 1",
            ", [0, 2], axis=0",
            ", np.array([0, 2]), axis=-1",
            ", slice(0, 2), axis=0",
        ),
        np.insert: cases_of(
            *[
                (f"{{F}}(arr, {obj}, values{kw})", {"arr": inp(sa), "values": inp(sv)})
                for sa, obj, sv, kw in [
                    ((4,), "1", "py", ""),
                    ((4,), "[3, 0, 1]", (3,), ""),
                    ((2, 2), "[1, 1]", (1,), ""),
                    ((2, 3), "1", (2,), ", axis=1"),
                    ((3, 2), "IDX", (2,), ", axis=0"),
                    ((2, 3), "0", (), ", axis=-1"),
                    ((3,), "slice(0, 2)", "scalar", ""),
                ]
            ]
        ),
        np.concatenate: cat(
            joined(
                ((3,), (2,), ""),
                ((2, 3), (1, 3), ""),
                ((2, 3), (2, 1), ", axis=1"),
                ((2, 3), (2, 2), ", axis=-1"),
                ((2, 3), (3,), ", axis=None"),
                ((1, 2), (1, 2), ", axis=0"),
            ),
            joined(((3,), (2, 2), ""), expr="{F}((x, y * 2.0, x), axis=None)"),
        ),
        np.stack: joined(
            *[
                (s, s, kw)
                for s in [(), (3,), (2, 3)]
                for kw in ["", ", 1", ", axis=-1"]
                if s or not kw
            ]
        ),
        np.hstack: joined(((3,), (2,), ""), ((2, 3), (2, 1), ""), ((), (), ""), ((1,), (3,), "")),
        np.vstack: joined(((3,), (3,), ""), ((2, 3), (1, 3), ""), ((2, 3), (3,), ""), ((), (), "")),
        **(
            {np.row_stack: joined(((3,), (2, 3), ""), expr="{F}((x, y))")}
            if hasattr(np, "row_stack")
            else {}
        ),
        np.dstack: joined(*[(s, s, "") for s in [(3,), (2, 3), (2, 3, 2)]]),
        np.column_stack: joined(((3,), (3,), ""), ((3, 2), (3,), ""), ((3, 2), (3, 1), "")),
        np.append: cases_of(
            *[
                (f"{{F}}(arr, values{kw})", {"arr": inp(sa), "values": inp(sv)})
                for sa, sv, kw in [
                    ((3,), (2,), ""),
                    ((2, 3), (), ""),
                    ((), (2, 2), ""),
                    ("py", (2,), ""),
                    ((2, 3), (1, 3), ", axis=0"),
                    ((2, 3), (2, 2), ", axis=-1"),
                ]
            ]
        ),
        np.split: cat(
            *[
                each(
                    ((4,), ", 2"),
                    ((4, 2), ", [1, 3]"),
                    ((2, 4), ", 2, axis=1"),
                    ((3, 2), ", [1], axis=0"),
                    expr="{F}({x}{kw})" + k,
                )
                for k in ("[0]", "[1]")
            ]
        ),
        np.array_split: cat(
            *[
                each(
                    ((5,), ", 2"),
                    ((3, 2), ", [1]"),
                    ((2, 5), ", 3, axis=-1"),
                    expr="{F}({x}{kw})" + k,
                )
                for k in ("[0]", "[1]")
            ]
        ),
        np.hsplit: cat(
            *[
                each(
                    ((4,), ", 2"), ((2, 4), ", [1, 3]"), ((2, 2, 3), ", 2"), expr="{F}({x}{kw})" + k
                )
                for k in ("[0]", "[1]")
            ]
        ),
        np.vsplit: cat(
            *[
                each(((4, 2), ", 2"), ((3, 2, 2), ", [1]"), expr="{F}({x}{kw})" + k)
                for k in ("[0]", "[-1]")
            ]
        ),
        np.dsplit: cat(
            *[
                each(((1, 2, 4), ", 2"), ((2, 1, 3), ", [1, 2]"), expr="{F}({x}{kw})" + k)
                for k in ("[0]", "[1]")
            ]
        ),
        np.rollaxis: grid(
            [(2, 3, 4), (2, 3)],
            ", 1",
            ", -1",
            ", 2, 0",
            ", 0, 3",
            ", axis=0, start=-1",
            ", 1, start=1",
            when=lambda s, kw: not (len(s) == 2 and ("2" in kw or "3" in kw)),
        ),
        np.partition: cat(
            grid(
                [(4,), (3, 2), (2, 4)],
                ", 1",
                ", -1",
                ", (0, 2)",
                ", 1, axis=0",
                ", 0, axis=None",
                when=lambda s, kw: "axis" in kw or s[-1] > 2,
                dom=DISTINCT,
            ),
            grid([(4,)], expr="{F}({x} * 0.0 + 1.0, 1)"),
        ),  # equal entries: any match is exact
        np.select: cases_of(
            *[
                (
                    "{F}([x > 0, y > 0], [x, y * 2.0], d)",
                    {
                        "x": inp(s, NONZERO, param="choicelist"),
                        "y": inp(s, NONZERO, param="choicelist"),
                        "d": inp(sd, param="default"),
                    },
                )
                for s, sd in [((3,), ()), ((2, 3), (3,)), ((2, 3), "py")]
            ]
            + [
                ("{F}([x > 0], [x])", {"x": inp((3,), NONZERO, param="choicelist")}),
                (
                    "{F}([MASK, x < 0], [x, x * x], 0.5)",
                    {"x": inp((3,), NONZERO, param="choicelist")},
                ),
            ]
        ),
        np.lib.stride_tricks.sliding_window_view: cases_of(
            *[
                (f"np.lib.stride_tricks.sliding_window_view(x, {kw})", {"x": inp(sh)})
                for sh, kw in [
                    ((4,), "2"),
                    ((3,), "3"),
                    ((3, 4), "(2, 3)"),
                    ((3, 4), "2, axis=0"),
                    ((2, 3, 4), "(2, 2), axis=(-1, 0)"),
                    ((3, 2), "2, 0"),
                    ((3, 4), "2, axis=1, writeable=False"),
                ]
            ]
        ),
        np.unstack: cat(
            *[
                each(
                    ((2,), ""),
                    ((2, 3), ""),
                    ((3, 2), ", axis=-1"),
                    ((2, 1, 3), ", axis=1"),
                    expr="{F}({x}{kw})" + k,
                )
                for k in ("[0]", "[-1]")
            ]
        ),
    }


def indexing_specs():
    clip_triples = [
        ((3,), (), ()),
        ((2, 3), (3,), (2, 1)),
        ((), (2, 1), (3,)),
        ((2, 3), (2, 3), (2, 3)),
        ((1, 3), (), (2, 1)),
    ]
    return {
        operator.getitem: cat(
            each(
                ((3,), "1"),
                ((3,), "-1"),
                ((4,), "1:"),
                ((4,), "::-1"),
                ((5,), "::-2"),
                ((3, 4), "-1:0:-1, 1"),
                ((3,), "None"),
                ((2, 3), "..., 0"),
                ((3, 4), ":, None, 1"),
                ((3, 3), "1, 2"),
                ((4,), "IDX"),
                ((3, 4), "IDX2"),
                ((3, 4), "IDX[:2], 1:"),
                ((3, 4), "IDX2, IDX2"),
                ((3,), "MASK"),
                ((2, 3), ":, MASK"),
                ((), "None"),
                ((2, 3), "1"),
                ((3, 1), "[0, 2, 2]"),
                expr="{x}[{kw}]",
            ),
            each(((2, 3), "x > 0"), expr="{x}[{kw}]", dom=NONZERO),
        ),
        np.take: each(
            ((4,), ", IDX"),
            ((2, 3), ", IDX, axis=1"),
            ((2, 3), ", IDX2, axis=-1"),
            ((3, 2), ", 1, axis=0"),
            ((2, 3), ", [0, 2]"),
            ((3,), ", IDX2"),
        ),
        np.take_along_axis: cases_of(
            ("{F}(arr, np.argsort(arr, axis=0), axis=0)", {"arr": inp((3, 2), DISTINCT)}),
            ("{F}(arr, IDX2, axis=1)", {"arr": inp((2, 3))}),
            ("{F}(arr, IDX2, -1)", {"arr": inp((2, 2))}),
            ("{F}(arr, IDX, axis=None)", {"arr": inp((2, 2))}),
            ("{F}(arr, IDX, axis=0)", {"arr": inp((3,))}),
        ),
        np.where: cases_of(
            *[
                (
                    "{F}(condition, x, y)",
                    {"condition": inp(sc, NONZERO), "x": inp(sx), "y": inp(sy)},
                )
                for sc, sx, sy in [
                    ((3,), (3,), (3,)),
                    ((2, 3), (3,), ()),
                    ((2, 1), (1, 3), (2, 3)),
                    ((), (2,), "py"),
                ]
            ]
            + [
                (
                    "{F}(condition > 0, x, y)",
                    {"condition": inp((2, 3), NONZERO), "x": inp((2, 3)), "y": inp((1, 3))},
                ),
                ("{F}(MASK, x, y)", {"x": inp((3,)), "y": inp((2, 3))}),
                ("{F}(x > 0, x, 0.5)", {"x": inp((2, 3), NONZERO)}),
                ("{F}(x > 0, 0.0, x * x)", {"x": inp((), NONZERO)}),
            ]
        ),
        np.clip: cases_of(
            *[
                (
                    "{F}(a, a_min, a_max)",
                    {
                        "a": inp(s, GRID0),
                        "a_min": inp(lo, Dom(-1.5, -0.3, "grid1")),
                        "a_max": inp(hi, Dom(0.3, 1.5, "grid1")),
                    },
                )
                for s, lo, hi in clip_triples
            ]
            + [
                ("{F}(a, -0.5, 0.7)", {"a": inp((2, 3), GRID0)}),
                ("{F}(a, None, 0.7)", {"a": inp((3,), GRID0)}),
                (
                    "{F}(a, a_min, None)",
                    {"a": inp((2, 3), GRID0), "a_min": inp((3,), Dom(-1.5, -0.3, "grid1"))},
                ),
                (
                    "{F}(a, None, a_max)",
                    {"a": inp("py", GRID0), "a_max": inp("py", Dom(0.3, 1.5, "grid1"))},
                ),
                # numpy 2.1+ spells the bounds min= and max= too
                (
                    "{F}(a, min=lo, max=hi)",
                    {
                        "a": inp((2, 3), GRID0),
                        "lo": inp((3,), Dom(-1.5, -0.3, "grid1"), param="min"),
                        "hi": inp((), Dom(0.3, 1.5, "grid1"), param="max"),
                    },
                ),
                (
                    "{F}(a, min=lo)",
                    {"a": inp((3,), GRID0), "lo": inp("py", Dom(-1.5, -0.3, "grid1"), param="min")},
                ),
                ("{F}(a, max=0.7)", {"a": inp((2, 3), GRID0)}),
                (
                    "{F}(a, a_min=-0.5, a_max=hi)",
                    {"a": inp((3,), GRID0), "hi": inp((3,), Dom(0.3, 1.5, "grid1"), param="a_max")},
                ),
            ]
        ),
        np.sort: grid(
            [(4,), (2, 3), (3, 1), (2, 1, 3)], "", ", 0", ", axis=-1", ", axis=None", dom=DISTINCT
        ),
        np.interp: cases_of(
            *[
                (e, {"x": inp(s, GRID1)} | extra)
                for s in [(), (5,), (2, 3), "py"]
                for e, extra in [
                    ("{F}(x, XP, fp)", {"fp": inp((4,))}),
                    (
                        "{F}(x, xp, fp)",
                        {"xp": inp((4,), Dom(-0.05, 0.05, "knots")), "fp": inp((4,))},
                    ),
                    (
                        "{F}(x, XP, fp, left=lo, right=hi)",
                        {
                            "fp": inp((4,)),
                            "lo": inp((), param="left"),
                            "hi": inp("py", param="right"),
                        },
                    ),
                    ("{F}(x, XP, fp, -1.0, 2.0)", {"fp": inp((4,))}),
                ]
            ]
            + [
                (
                    "{F}(x, XP, fp, period=2.0)",
                    {"x": inp((3,), GRID1), "fp": inp((4,))},
                    {"refused": "period"},
                ),
                (
                    "{F}(x, XP, fp, period=p)",
                    {
                        "x": inp((3,), GRID1),
                        "fp": inp((4,)),
                        "p": inp("py", Dom(2.5, 3.0), param="period"),
                    },
                    {"refused": "period"},
                ),
            ]
        ),
        # x.conj(), x.conjugate(): x itself where it is real (np.conjugate makes a copy)
        _indexing._conj_method: methods(
            ("{x}.conj()", M), ("{x}.conjugate()", M), ("{x}.conj()", ())
        ),
        _indexing._astype: cases_of(
            *[
                (
                    f"x.astype({t})",
                    {"x": inp(s, NONINT if "int" in t else ANY)},
                    {"h": 1e-3 if "32" in t else H},
                )
                for s in [(2, 3), (), "scalar"]
                for t in ["np.float64", "np.float32", "'float64'", "np.int64"]
            ]
        ),
        _indexing._as_dtype: cases_of(
            *[
                (
                    f"{f}(x, dtype={t})",
                    {"x": inp(s, NONINT if "int" in t else ANY)},
                    {"h": 1e-3 if "32" in t else H},
                )
                for s in [(2, 3), (), "scalar"]
                for f in ["np.array", "np.asarray"]
                for t in ["float", "np.float32", "'float64'", "np.int64"]
            ]
        ),
        _indexing._flatten: cases_of(
            *[
                (f"x.flatten({o})", {"x": inp(sh)})
                for sh in [(2, 3), (3,), ()]
                for o in ["", "'F'"]
            ],
            *[
                (f"x.T.flatten({o})", {"x": inp((2, 3))}, {"refused": "order"})
                for o in ["'A'", "order='K'"]
            ],
        ),
        _indexing._item: cases_of(
            *[("x.item()", {"x": inp(s)}) for s in [(), (1,), (1, 1), "scalar"]]
        ),
        np.full: cases_of(
            *[
                (f"{{F}}({sh}, fill_value{kw})", {"fill_value": inp(s)})
                for sh, s, kw in [
                    ("(2, 3)", (), ""),
                    ("(2, 3)", (3,), ""),
                    ("(2, 3)", (2, 1), ""),
                    ("3", "py", ""),
                    ("(2,)", (), ", dtype=np.float64"),
                    ("()", (), ""),
                ]
            ],
            # a cast to integers or booleans: no gradient
            *[
                (f"{{F}}((2,), fill_value, dtype={t})", {"fill_value": inp((), NONINT)})
                for t in ["np.int64", "bool", "'int8'"]
            ],
        ),
        np.full_like: cases_of(
            *[
                (f"{{F}}(a, fill_value{kw})", {"a": inp(sa), "fill_value": inp(sv)})
                for sa, sv, kw in [
                    ((2, 3), (), ""),
                    ((2, 3), (3,), ""),
                    ((3,), "py", ""),
                    ((2, 3), (), ", shape=(4,)"),
                    ((), (), ""),
                ]
            ],
            # the dtype of an array of integers: no gradient
            ("{F}(np.arange(6), fill_value)", {"fill_value": inp((), NONINT)}),
        ),
        np.linspace: cases_of(
            *[
                (f"{{F}}(start, stop{kw})", {"start": inp(s0), "stop": inp(s1)})
                for s0, s1, kw in [
                    ((), (), ""),
                    ("py", "py", ", 5"),
                    ((), "py", ", 4, endpoint=False"),
                    ((2,), (2,), ", 3"),
                    ((2,), (), ", 4, axis=-1"),
                    ((2, 1), (3,), ", num=3, axis=1"),
                    ((), (), ", 1"),
                ]
            ]
            + [
                (
                    "{F}(start, stop, 5, retstep=True)[0]",
                    {"start": inp(()), "stop": inp(())},
                    {"refused": "retstep"},
                )
            ]
        ),
        np.arange: cases_of(
            ("{F}(start, 2.9, 0.5)", {"start": inp("py", Dom(-1.0, -0.8))}),
            ("{F}(start, 2.9, 0.5)", {"start": inp((), Dom(-1.0, -0.8))}),
            ("{F}(0.25, 2.0, step)", {"step": inp("py", Dom(0.3, 0.32))}),
            ("{F}(0.25, 2.0, step)", {"step": inp((), Dom(0.3, 0.32))}),
            (
                "{F}(start, 2.0, step)",
                {"start": inp("py", Dom(0.1, 0.2)), "step": inp("py", Dom(0.4, 0.42))},
            ),
            (
                "{F}(0.0, stop, 0.5)",
                {"stop": inp("py", Dom(2.1, 2.4))},
            ),  # declared piecewise constant: FD 0
            ("{F}(start)", {"start": inp("py", Dom(3.2, 3.8))}),  # one argument is the stop
            ("{F}(start, stop)", {"start": inp((), Dom(0.1, 0.4)), "stop": inp((), Dom(3.2, 3.8))}),
        ),
        np.meshgrid: cases_of(
            *[
                (f"{{F}}(x1, x2{kw})[{k}]", {"x1": inp((3,)), "x2": inp(s2)})
                for s2 in [(2,), (1,), (2, 2)]
                for kw in ["", ", indexing='ij'", ", sparse=True"]
                for k in (0, 1)
            ]
            + [
                (
                    "{F}(x1, x2, x3, indexing='ij')[2]",
                    {"x1": inp((2,)), "x2": inp((3,)), "x3": inp((2,))},
                ),
                ("{F}(x1, x2, x3)[0]", {"x1": inp((2,)), "x2": inp((3,)), "x3": inp((2,))}),
                ("{F}(x1)[0]", {"x1": inp((3,))}),
                ("{F}(x1, x2)[0]", {"x1": inp(()), "x2": inp((2,))}),
                ("np.stack({F}(x1, x2))", {"x1": inp((3,)), "x2": inp((2,))}),
            ]
        ),
        np.bincount: cases_of(
            ("{F}(BINS, weights=weights, minlength=6)", {"weights": inp((6,))}),
            ("{F}(BINS, weights)", {"weights": inp((6,))}),
        ),
        np.unique: cat(
            grid([(4,), (2, 3), (), (1,)], dom=DISTINCT),
            grid(
                [(3,)],
                expr="{F}({x}, return_counts=True)[0]",
                dom=DISTINCT,
                refused="return_counts",
            ),
        ),
        runtime.index_join: cases_of(
            ("np.r_[x, y]", {"x": inp((3,), param="x1"), "y": inp((2,), param="x2")}),
            ("np.r_[x, 2.0, y]", {"x": inp((3,), param="x1"), "y": inp((), param="x3")}),
            ("np.r_[x, y, x]", {"x": inp("py", param="x1"), "y": inp((2,), param="x2")}),
            ("np.r_[x, y]", {"x": inp((2, 3), param="x1"), "y": inp((1, 3), param="x2")}),
            ("np.c_[x, y]", {"x": inp((3,), param="x1"), "y": inp((3,), param="x2")}),
            ("np.c_[x, y, x * y]", {"x": inp((2, 2), param="x1"), "y": inp((2, 2), param="x2")}),
            (
                "np.r_[a, b, c, d, e, g]",
                {n: inp((1,), param=f"x{i + 1}") for i, n in enumerate("abcdeg")},
            ),
        ),
        # ufunc.outer(a, b) is ufunc(outer_operand(a, b), b); b's gradient is the ufunc's (the
        # rule table's rows f_subtract_outer and the like check it), so b is a constant here
        runtime.outer_operand: cases_of(
            *[
                (f"np.{u}.outer(x, {b})", {"x": inp(sx, param="a")})
                for u in ["subtract", "multiply", "divide", "maximum", "arctan2"]
                for b in ["P3", "2.5"] + ([] if u == "divide" else ["SPREAD"])
                for sx in [(3,), (2, 2), (), "py"]
            ]
        ),
    }


def sequence_specs():
    return {
        runtime.concat_sequences: cases_of(
            ("np.stack([x] + [y])", {"x": inp((3,), param="a"), "y": inp((3,), param="b")}),
            ("np.stack((x,) + (y, x))", {"x": inp((2, 2), param="a"), "y": inp((2, 2), param="b")}),
            ("sum([x, y] + [x * y])", {"x": inp("py", param="a"), "y": inp((), param="b")}),
        ),
        runtime.repeat_sequence: cases_of(
            ("np.stack([x, y] * 2)", {"x": inp((3,), param="x"), "y": inp((3,), param="x")}),
            ("np.stack(2 * [x])", {"x": inp((2, 3), param="y")}),
            ("sum((x,) * 3)", {"x": inp("py", param="x")}),
        ),
        runtime.max_of_sequence: cases_of(
            *[
                (e, {"x": inp(s, GRID0, param="xs"), "y": inp(s, GRID1, param="xs")})
                for s in ["py", (), "scalar"]
                for e in ["max([x, y, x * 0.5])", "max((x, y))"]
            ]
        ),
        runtime.min_of_sequence: cases_of(
            *[
                (e, {"x": inp(s, GRID0, param="xs"), "y": inp(s, GRID1, param="xs")})
                for s in ["py", (), "scalar"]
                for e in ["min([x, y, x * 0.5])", "min((x, y))"]
            ]
        ),
        runtime.stack_entries: cases_of(
            ("np.mean([x, y], axis=0)", {"x": inp((3,), param="xs"), "y": inp((3,), param="xs")}),
            ("np.sum([1.0, x * x, 2.0])", {"x": inp("py", param="xs")}),
            ("np.max([x, y])", {"x": inp((), GRID0, param="xs"), "y": inp((), GRID1, param="xs")}),
            ("np.std([x, y, x * y])", {"x": inp("py", param="xs"), "y": inp("py", param="xs")}),
        ),
        list: cases_of(
            (
                "np.stack(list((x, y)))",
                {"x": inp((3,), param="iterable"), "y": inp((3,), param="iterable")},
            ),
            ("np.stack(list(x))", {"x": inp((2, 3), param="iterable")}),
        ),
        # a dict comprehension: each value gets its key's entry, none a later equal key replaced
        runtime.dict_from: cases_of(
            (
                "d['a'] * d['b']",
                {"x": inp((3,), param="values"), "y": inp((3,), param="values")},
                {"pre": "d = {k: v for k, v in zip(['a', 'b'], [x, y])}"},
            ),
            (
                "d['a'] + np.sin(d['b'])",
                {"x": inp((2, 2), param="values"), "y": inp((2, 2), param="values")},
                {"pre": "d = {k: v * 2.0 for k, v in zip('aab', [x, y, x * y])}"},
            ),
        ),
        tuple: cases_of(
            (
                "np.stack(tuple([x, y]))",
                {"x": inp((2,), param="iterable"), "y": inp((2,), param="iterable")},
            ),
            ("np.stack(tuple(x))", {"x": inp((3, 2), param="iterable")}),
        ),
    }


def special_specs():
    """``scipy.special``, spelled ``sc.expit`` (the generated modules import it as ``sc``)."""
    if sc is None:
        return {}
    lse = [
        ("", (2, 3)),
        (", axis=0", (2, 3)),
        (", axis=-1, keepdims=True", (2, 3)),
        (", axis=(0, 1)", (2, 1, 3)),
        ("", (3,)),
        ("", ()),
    ]
    return {
        sc.expit: unary(expr="sc.expit({x})"),
        sc.logit: unary(Dom(0.05, 0.95), "sc.logit({x})"),
        sc.erf: unary(expr="sc.erf({x})"),
        sc.erfc: unary(expr="sc.erfc({x})"),
        sc.gammaln: unary(POS, "sc.gammaln({x})"),
        sc.digamma: unary(POS, "sc.digamma({x})"),
        sc.xlogy: cat(
            binary(ANY, POS, "sc.xlogy({x}, {y})"),
            cases_of(("sc.xlogy(x * 0.0, y)", {"x": inp((3,)), "y": inp((3,), POS)})),
        ),
        sc.xlog1py: binary(ANY, Dom(-0.5, 2.0), "sc.xlog1py({x}, {y})"),
        sc.ndtr: unary(expr="sc.ndtr({x})"),
        sc.log_ndtr: unary(Dom(-8.0, 3.0), "sc.log_ndtr({x})"),
        sc.ndtri: unary(Dom(0.05, 0.95), "sc.ndtri({x})"),
        sc.gamma: unary(POS, "sc.gamma({x})"),
        sc.beta: binary(POS, POS, "sc.beta({x}, {y})"),
        sc.betaln: binary(POS, POS, "sc.betaln({x}, {y})"),
        sc.entr: unary(POS, "sc.entr({x})"),
        sc.rel_entr: binary(POS, POS, "sc.rel_entr({x}, {y})"),
        sc.kl_div: binary(POS, POS, "sc.kl_div({x}, {y})"),
        sc.huber: binary(POS, ANY, "sc.huber({x}, {y})"),
        sc.pseudo_huber: binary(POS, ANY, "sc.pseudo_huber({x}, {y})"),
        sc.logsumexp: cases_of(
            *[(f"sc.logsumexp(a{kw})", {"a": inp(sh)}) for kw, sh in lse]
            + [
                ("sc.logsumexp(a, axis=-1, b=b)", {"a": inp(sa), "b": inp(sb, POS)})
                for sa, sb in [((2, 3), (3,)), ((3,), (3,)), ((2, 3), (2, 3)), ((3,), "py")]
            ]
            + [
                (
                    "sc.logsumexp(a, b=b, return_sign=True)[0]",
                    {"a": inp((3,)), "b": inp((3,), POS)},
                    {"refused": "return_sign"},
                )
            ]
        ),
        sc.softmax: grid(
            [(3,), (2, 3), (2, 1, 3)],
            "",
            ", axis=0",
            ", axis=-1",
            ", axis=(0, 1)",
            expr="sc.softmax({x}{kw})",
            when=lambda s, kw: len(s) > 1 or "(" not in kw,
        ),
        sc.log_softmax: grid(
            [(3,), (2, 3)], "", ", axis=0", ", axis=-1", expr="sc.log_softmax({x}{kw})"
        ),
    }


def stats_grid(expr, names, doms, shapes):
    """``expr`` over named inputs in ``doms``, one case per tuple of their shapes (or forms)."""
    return cases_of(
        *[(expr, {n: inp(s, d) for n, s, d in zip(names, row, doms)}) for row in shapes]
    )


# shapes of (x, loc, scale) that broadcast, with Python floats and numpy scalars among them
THREE = [
    ((3,), (), "py"),
    ((2, 3), (3,), (2, 1)),
    ((), "py", (3,)),
    ("scalar", (2,), "py"),
    ((3,), (3,), (3,)),
]


def scipy_specs():
    """``scipy.stats`` (``sst.norm.logpdf``), ``scipy.linalg`` (``sla``), ``scipy.signal``
    (``ssig``), as the generated modules import them."""
    if sst is None:
        return {}
    specs = {}
    pos = Dom(0.5, 2.0)
    for name in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        F = f"sst.norm.{name}"
        specs[getattr(sst.norm, name)] = cat(
            stats_grid(f"{F}(x, loc, scale)", ("x", "loc", "scale"), (ANY, ANY, pos), THREE),
            cases_of(
                (f"{F}(x, scale=scale)", {"x": inp((3,)), "scale": inp("py", pos)}),
                (f"{F}(x)", {"x": inp((2, 3))}),
            ),
        )
    specs[sst.norm.logcdf] = cat(
        specs[sst.norm.logcdf],
        cases_of(("sst.norm.logcdf(x * 10.0 - 25.0)", {"x": inp((3,))})),  # far in the left tail
    )
    specs[sst.t.logpdf] = cat(
        stats_grid(
            "sst.t.logpdf(x, df, loc, scale)",
            ("x", "df", "loc", "scale"),
            (ANY, Dom(1.0, 6.0), ANY, pos),
            [((3,), "py", (), "py"), ((2, 3), (3,), "py", (2, 1)), ("scalar", (2,), (2,), ())],
        ),
        cases_of(("sst.t.logpdf(x, df)", {"x": inp((3,)), "df": inp((3,), Dom(1.0, 6.0))})),
    )
    specs[sst.gamma.logpdf] = stats_grid(
        "sst.gamma.logpdf(x, a, loc, scale)",
        ("x", "a", "loc", "scale"),
        (Dom(1.0, 3.0), Dom(1.5, 4.0), UNIT, pos),
        [((3,), "py", (), "py"), ((2, 3), (3,), "py", (2, 1)), ("scalar", (2,), (2,), ())],
    )
    specs[sst.beta.logpdf] = stats_grid(
        "sst.beta.logpdf(x, a, b, loc, scale)",
        ("x", "a", "b", "loc", "scale"),
        (Dom(0.3, 0.7), Dom(1.5, 4.0), Dom(1.5, 4.0), Dom(-0.1, 0.1), Dom(1.0, 1.2)),
        [((3,), "py", (3,), (), "py"), ((2, 3), (3,), "py", (2, 1), ())],
    )
    specs[sst.expon.logpdf] = stats_grid(
        "sst.expon.logpdf(x, loc, scale)",
        ("x", "loc", "scale"),
        (Dom(1.0, 3.0), UNIT, pos),
        THREE,
    )
    specs[sst.laplace.logpdf] = stats_grid(
        "sst.laplace.logpdf(x, loc, scale)", ("x", "loc", "scale"), (GRID0, GRID1, pos), THREE
    )
    specs[sst.poisson.logpmf] = cases_of(
        *[("sst.poisson.logpmf(COUNTS, mu)", {"mu": inp(s, pos)}) for s in ["py", (3,), (2, 3)]],
        ("sst.poisson.logpmf(2, mu)", {"mu": inp((2,), pos)}),
    )
    mvn = "sst.multivariate_normal.logpdf"
    specs[sst.multivariate_normal.logpdf] = cases_of(
        *[
            (f"{mvn}(x, mean, cov{kw})", {"x": inp(sx), "mean": inp(sm), "cov": inp(sc_, dc)})
            for sx, sm, sc_, dc, kw in [
                ((3,), (3,), (3, 3), MATRIX, ""),
                ((2, 3), (3,), (3, 3), MATRIX, ""),
                ((2, 2, 2), (2,), (2, 2), MATRIX, ""),
                ((4, 3), (3,), (3,), pos, ""),
                ((3,), (3,), "py", pos, ""),
                ((4,), "py", "py", pos, ""),
                ((1, 2), (2,), (2, 2), MATRIX, ", allow_singular=False"),
            ]
        ],
        (f"{mvn}(x, cov=cov)", {"x": inp((2, 2)), "cov": inp((2, 2), MATRIX)}),
        (f"{mvn}(x, mean)", {"x": inp((2, 3)), "mean": inp((3,))}),
        (
            f"{mvn}(x, mean, cov, allow_singular=True)",
            {"x": inp((2,)), "mean": inp((2,)), "cov": inp((2, 2), MATRIX)},
            {"refused": "allow_singular"},
        ),
    )
    # ---- scipy.linalg: triangles read of a well-conditioned matrix (2 I plus noise)
    st_cases = []
    for kw in [", lower=True", "", ", trans='T'", ", trans=1, lower=True, unit_diagonal=True"]:
        for sa, sb in [((3, 3), (3,)), ((3, 3), (3, 2)), ((1, 1), (1,)), ((2, 3, 3), (3,))]:
            st_cases.append(
                (f"sla.solve_triangular(a, b{kw})", {"a": inp(sa, MATRIX), "b": inp(sb)})
            )
    specs[sla.solve_triangular] = cases_of(*st_cases)
    specs[sla.cholesky] = cat(
        # (scipy before 1.16 takes one matrix only)
        square("sla.cholesky({x})", **({} if _scipy_batches() else {"batch": ((),)})),
        square("sla.cholesky({x}, lower=True)", batch=((),)),
    )
    specs[sla.cho_factor] = cat(
        square("sla.cho_factor({x})[0]", batch=((),)),
        square("sla.cho_factor({x}, lower=True)[0]", batch=((),)),
    )
    specs[sla.cho_solve] = cases_of(
        *[
            (
                expr,
                {"a": inp(sa, MATRIX, param="c_and_lower"), "b": inp(sb)},
                {"pre": pre} if pre else {},
            )
            for expr, pre in [
                ("sla.cho_solve(sla.cho_factor(a), b)", ""),
                ("sla.cho_solve((c, low), b)", "c, low = sla.cho_factor(a, lower=True)"),
            ]
            for sa, sb in [((3, 3), (3,)), ((2, 2), (2, 3)), ((1, 1), (1,))]
        ]
    )
    specs[sla.expm] = cases_of(
        *[
            ("sla.expm(A)", {"A": inp(s, Dom(-0.6, 0.6))})
            for s in [(1, 1), (2, 2), (3, 3), (2, 2, 2)]
        ]
    )
    # ---- scipy.signal: a stable filter, a[0] = 1 + a small number
    specs[ssig.lfilter] = cases_of(
        *[
            (
                f"ssig.lfilter(b, a + A0[:{na}], x{kw})",
                {"b": inp((nb,)), "a": inp((na,), SMALL), "x": inp(sx)},
            )
            for nb, na, sx, kw in [
                (2, 2, (5,), ""),
                (3, 1, (4,), ""),
                (1, 3, (2, 5), ""),
                (2, 3, (5, 2), ", axis=0"),
                (3, 2, (2,), ""),
            ]
        ]
    )
    return specs


# ---- functions declared as carrying no gradient ----------------------------------------------------
def nondiff_specs():
    cmp = binary(GRID0, GRID1, pairs=[((3,), (3,)), ((2, 3), (3,)), ((), "py"), ("py", "py")])
    ops = {
        operator.lt: "<",
        operator.le: "<=",
        operator.gt: ">",
        operator.ge: ">=",
        operator.eq: "==",
        operator.ne: "!=",
    }
    specs = {
        k: unary(NONINT)
        for k in (np.floor, np.ceil, np.round, np.around, np.rint, np.trunc, np.fix)
    }
    specs.update({k: pyunary(NONINT) for k in (math.floor, math.ceil)})
    specs[math.trunc] = pyunary(NONINT, forms=("py",))  # numpy scalars have no __trunc__
    specs.update(
        {
            k: unary(expr="{F}({x})")
            for k in (
                np.isfinite,
                np.isnan,
                np.isinf,
                np.isposinf,
                np.isneginf,
                np.isreal,
                np.iscomplex,
                np.signbit,
                np.iscomplexobj,
                np.isrealobj,
                np.isscalar,
            )
        }
    )
    specs.update({k: pyunary() for k in (math.isfinite, math.isnan, math.isinf)})
    specs.update(
        {
            k: cmp
            for k in (
                np.less,
                np.less_equal,
                np.greater,
                np.greater_equal,
                np.equal,
                np.not_equal,
                np.logical_and,
                np.logical_or,
                np.logical_xor,
                np.isclose,
                np.allclose,
                np.array_equal,
                np.array_equiv,
            )
        }
    )
    specs.update(
        {
            k: op(s, GRID0, GRID1, pairs=[((3,), (3,)), ((2, 3), (3,)), ("py", "py")])
            for k, s in ops.items()
        }
    )
    specs.update(
        {
            np.sign: unary(NONZERO),
            builtins.round: pyunary(NONINT, "round({x})"),
            builtins.int: pyunary(NONINT, "int({x})"),
            np.floor_divide: binary(MOD_X, MOD_Y),
            operator.floordiv: op("//", MOD_X, MOD_Y),
            np.logical_not: unary(NONZERO),
            builtins.bool: pyunary(NONZERO, "bool({x})"),
            operator.not_: pyunary(NONZERO, "(not {x})"),
            operator.is_: unary(expr="({x} is None)", shapes=[(3,)]),
            operator.is_not: unary(expr="({x} is not None)", shapes=[(3,)]),
            # ``in`` is allowed in if and while tests only, which the compiler does not bind as calls
            operator.contains: cases_of(
                *[
                    (
                        "s",
                        {"x": inp(s)},
                        {"pre": "s = 2.0\nif 0.5 in x:\n    s = 3.0", "reach": False},
                    )
                    for s in [(3,), (2, 3)]
                ]
            ),
            # bitwise functions take no floats: their operands are masks made from the inputs
            operator.and_: binary(
                NONZERO, NONZERO, "(({x} > 0) & ({y} > 0))", pairs=[((3,), (3,))]
            ),
            operator.or_: binary(NONZERO, NONZERO, "(({x} > 0) | ({y} > 0))", pairs=[((3,), (3,))]),
            operator.xor: binary(NONZERO, NONZERO, "(({x} > 0) ^ ({y} > 0))", pairs=[((3,), (3,))]),
            operator.invert: unary(NONZERO, "(~({x} > 0))", shapes=[(3,)], forms=()),
            np.bitwise_and: binary(NONZERO, NONZERO, "{F}({x} > 0, {y} > 0)", pairs=[((3,), (3,))]),
            np.bitwise_or: binary(NONZERO, NONZERO, "{F}({x} > 0, {y} > 0)", pairs=[((3,), (3,))]),
            np.invert: unary(NONZERO, "{F}({x} > 0)", shapes=[(3,)], forms=()),
            builtins.len: unary(expr="len({x})", shapes=[(3,), (2, 3)], forms=()),
            builtins.range: unary(expr="np.array(range(len({x})))", shapes=[(3,)], forms=()),
            np.ndim: unary(),
            np.size: unary(),
            np.shape: unary(expr="np.array({F}({x}))", shapes=[(3,), (2, 3)], forms=()),
            builtins.isinstance: unary(expr="isinstance({x}, float)"),
            # strings carry no gradient: a differentiated value formatted into one is refused
            _strings.formatted: cases_of(
                ("x * len(f'{3:>4}')", {"x": inp((3,))}),
                ("float(f'{x}')", {"x": inp(())}, {"refused": "values"}),
                ("float('%s' % x)", {"x": inp("py")}, {"refused": "values"}),
            ),
            _strings.string_method: cases_of(
                ("x * len('ab'.upper())", {"x": inp((3,))}),
                ("float('{}'.format(x))", {"x": inp(())}, {"refused": "args"}),
            ),
            builtins.print: cases_of(
                ("x * 2.0", {"x": inp((3,))}, {"pre": "print(x, file=SINK)", "reach": False})
            ),
            sourcegrad.stop_gradient: cases_of(
                *[("sg.stop_gradient(x)", {"x": inp(s)}, {"stops": True}) for s in [(3,), (), "py"]]
            ),
            np.argmax: unary(DISTINCT, shapes=[(4,), (2, 3)], forms=()),
            np.argmin: unary(DISTINCT, shapes=[(4,), (2, 3)], forms=()),
            np.argsort: unary(DISTINCT, shapes=[(4,), (2, 3)], forms=()),
            np.argpartition: unary(DISTINCT, "{F}({x}, 1)", shapes=[(4,), (2, 3)], forms=()),
            np.argwhere: unary(NONZERO, shapes=[(3,), (2, 3)], forms=()),
            np.nonzero: unary(NONZERO, "{F}({x})[0]", shapes=[(3,), (2, 3)], forms=()),
            np.flatnonzero: unary(NONZERO, shapes=[(3,), (2, 3)], forms=()),
            np.count_nonzero: unary(NONZERO),
            np.any: unary(NONZERO),
            np.all: unary(NONZERO),
            np.searchsorted: cases_of(
                ("{F}(a, v)", {"a": inp((5,), INCREASING), "v": inp((3,), NONINT)})
            ),
            np.digitize: cases_of(
                ("{F}(x, bins)", {"x": inp((2, 3), NONINT), "bins": inp((4,), INCREASING)})
            ),
            np.zeros_like: unary(),
            np.ones_like: unary(),
            np.empty_like: unary(expr="np.size({F}({x}))"),
            # the input reaches the result only through the function (its finite differences must be 0)
            np.zeros: unary(expr="{F}(np.shape({x}))", shapes=[(3,), (2, 3)], forms=()),
            np.ones: unary(expr="{F}(len({x}))", shapes=[(3,)], forms=()),
            np.empty: unary(expr="np.size({F}(np.shape({x})))", shapes=[(3,)], forms=()),
            np.eye: unary(expr="{F}(len({x}))", shapes=[(3,), (3, 2)], forms=()),
            np.identity: unary(expr="{F}(len({x}))", shapes=[(3,)], forms=()),
            np.tri: unary(expr="{F}(len({x}))", shapes=[(3,), (3, 2)], forms=()),
            np.indices: unary(expr="{F}(np.shape({x}))", shapes=[(3,), (2, 3)], forms=()),
            np.result_type: unary(expr="np.ones(2, dtype={F}({x}, 1.0))", shapes=[(3,)], forms=()),
            # the input reaches the result only through the function (its finite differences must be 0)
            np.finfo: cases_of(
                ("np.ones(2) * {F}(x.dtype).eps", {"x": inp((3,))}),
                ("{F}(x.dtype).tiny * np.ones(3)", {"x": inp((2,))}),
            ),
            np.iinfo: cases_of(
                ("np.ones(2) * {F}(np.argmax(x).dtype).bits", {"x": inp((3,), DISTINCT)})
            ),
        }
    )
    seeded = {"seeded": True}
    specs.update(
        {
            np.random.randn: cases_of(
                ("{F}(len(x))", {"x": inp((3,))}, seeded),
                ("{F}(2, len(x))", {"x": inp((3,))}, seeded),
            ),
            np.random.rand: cases_of(("{F}(len(x))", {"x": inp((3,))}, seeded)),
            np.random.normal: cases_of(
                ("{F}(size=np.shape(x))", {"x": inp((3,))}, seeded),
                ("{F}(loc, 1.0, size=(2,))", {"loc": inp(())}, {**seeded, "refused": "loc"}),
                (
                    "{F}(0.0, scale, size=(2,))",
                    {"scale": inp((), POS)},
                    {**seeded, "refused": "scale"},
                ),
            ),
            np.random.uniform: cases_of(
                ("{F}(size=np.shape(x))", {"x": inp((2, 3))}, seeded),
                (
                    "{F}(low, 1.0, 3)",
                    {"low": inp((), Dom(-1.0, 0.5))},
                    {**seeded, "refused": "low"},
                ),
                ("{F}(0.0, high)", {"high": inp((3,), POS)}, {**seeded, "refused": "high"}),
            ),
            np.random.standard_normal: cases_of(("{F}(np.shape(x))", {"x": inp((3,))}, seeded)),
            np.random.random: cases_of(("{F}(np.shape(x))", {"x": inp((2, 2))}, seeded)),
            np.random.randint: cases_of(
                ("{F}(3, size=np.shape(x))", {"x": inp((3,))}, seeded),
                (
                    "{F}(low, high, size=4)",
                    {"low": inp("py", Dom(0.2, 0.8)), "high": inp("py", Dom(3.2, 3.8))},
                    seeded,
                ),
            ),
            np.random.choice: cases_of(
                ("{F}(3, size=np.shape(x))", {"x": inp((3,))}, seeded),
                ("{F}(a, 4)", {"a": inp((3,))}, {**seeded, "refused": "a"}),
                ("{F}(3, 2, p=p)", {"p": inp((3,), Dom(0.3, 0.36))}, {**seeded, "refused": "p"}),
                ("{F}(3, 2, replace=r)", {"r": inp("py", POS, param="replace")}, seeded),
            ),
            np.random.permutation: cases_of(
                ("{F}(len(x))", {"x": inp((3,))}, seeded),
                ("{F}(x)", {"x": inp((4,))}, {**seeded, "refused": "x"}),
            ),
            np.random.default_rng: cases_of(
                ("x * {F}(0).random(len(x))", {"x": inp((3,))}),
                ("x * {F}(seed=1).normal(size=np.shape(x))", {"x": inp((2, 3))}),
            ),
        }
    )
    # a local Generator's draws: constants, whose distribution parameters are refused when active
    G = np.random.Generator
    rng = {"pre": "rng = np.random.default_rng(0)"}
    specs.update(
        {
            G.normal: cases_of(
                ("x * rng.normal(size=np.shape(x))", {"x": inp((3,))}, rng),
                ("x + rng.normal(0.5, 2.0, 3)", {"x": inp((3,))}, rng),
                ("rng.normal(loc, size=2)", {"loc": inp(())}, {**rng, "refused": "loc"}),
                ("rng.normal(0.0, scale)", {"scale": inp((3,), POS)}, {**rng, "refused": "scale"}),
            ),
            G.standard_normal: cases_of(
                ("x * rng.standard_normal(np.shape(x))", {"x": inp((2, 3))}, rng)
            ),
            G.uniform: cases_of(
                ("x * rng.uniform(-1.0, 1.0, size=np.shape(x))", {"x": inp((3,))}, rng),
                (
                    "rng.uniform(low, 2.0)",
                    {"low": inp((), Dom(-1.0, 0.5))},
                    {**rng, "refused": "low"},
                ),
                ("rng.uniform(high=high)", {"high": inp((3,), POS)}, {**rng, "refused": "high"}),
            ),
            G.random: cases_of(("x * rng.random(len(x))", {"x": inp((3,))}, rng)),
            G.integers: cases_of(
                ("x * rng.integers(0, 5, size=np.shape(x))", {"x": inp((3,))}, rng)
            ),
            G.exponential: cases_of(
                ("x * rng.exponential(2.0, np.shape(x))", {"x": inp((3,))}, rng),
                ("rng.exponential(scale)", {"scale": inp((3,), POS)}, {**rng, "refused": "scale"}),
            ),
            G.choice: cases_of(
                ("x * rng.choice(3, size=np.shape(x))", {"x": inp((3,))}, rng),
                ("rng.choice(a, 2)", {"a": inp((3,))}, {**rng, "refused": "a"}),
                (
                    "rng.choice(3, 2, p=p)",
                    {"p": inp((3,), Dom(0.3, 0.36))},
                    {**rng, "refused": "p"},
                ),
            ),
            G.permutation: cases_of(
                ("x * rng.permutation(len(x))", {"x": inp((3,))}, rng),
                ("rng.permutation(x)", {"x": inp((4,))}, {**rng, "refused": "x"}),
            ),
        }
    )
    return specs


# ---- masked reductions, ufunc methods, np.fft, np.block, ufunc.at ----------------------------------
def library_specs():
    from sourcegrad.transforms.rules import reductions as red

    FFT = np.fft
    lo, hi = Dom(-3.0, -2.5), Dom(2.5, 3.0)  # an initial= below or above every entry
    half = {"a": inp((4,))}
    specs = {
        red.sum_where: cases_of(
            ("np.sum(a, where=MASK)", {"a": inp((3,))}),
            ("np.sum(a, axis=0, where=MASK)", {"a": inp((2, 3))}),
            ("a.sum(axis=-1, where=MASK, keepdims=True)", {"a": inp((2, 3))}),
            ("np.sum(a, initial=i)", {"a": inp((2, 3)), "i": inp("py", param="initial")}),
            (
                "np.sum(a, axis=1, initial=i, where=MASK)",
                {"a": inp((2, 3)), "i": inp((), param="initial")},
            ),
        ),
        red.mean_where: cases_of(
            ("np.mean(a, where=MASK)", {"a": inp((3,))}),
            ("np.mean(a, axis=-1, where=MASK, keepdims=True)", {"a": inp((2, 3))}),
            ("a.mean(axis=0, where=MASK[:, None])", {"a": inp((3, 2))}),
        ),
        red.max_where: cases_of(
            (
                "np.max(a, initial=i)",
                {"a": inp((4,), DISTINCT), "i": inp("py", hi, param="initial")},
            ),
            (
                "np.max(a, axis=0, initial=i)",
                {"a": inp((2, 3), DISTINCT), "i": inp((), lo, param="initial")},
            ),
            (
                "np.min(a, axis=-1, where=MASK, initial=i)",
                {"a": inp((2, 3), DISTINCT), "i": inp("py", hi, param="initial")},
            ),
            ("np.amax(a, where=MASK, initial=-5.0, keepdims=True)", {"a": inp((2, 3), DISTINCT)}),
            ("a.max(axis=1, initial=-5.0)", {"a": inp((2, 3), DISTINCT)}),
            (
                "np.amin(a * 0.0 + 1.0, initial=i)",
                {"a": inp((3,)), "i": inp("py", Dom(0.9, 1.1), param="initial")},
            ),
        ),
        np.add.reduce: cases_of(
            ("np.add.reduce(array)", {"array": inp((2, 3))}),
            ("np.add.reduce(array, axis=None, keepdims=True)", {"array": inp((2, 3))}),
            ("np.add.reduce(array, 1)", {"array": inp((2, 1, 3))}),
        ),
        np.multiply.reduce: cases_of(
            ("np.multiply.reduce(array)", {"array": inp((3, 2), HALF)}),
            ("np.multiply.reduce(array, axis=-1)", {"array": inp((2, 3), ZEROS)}),
        ),
        np.maximum.reduce: cases_of(
            ("np.maximum.reduce(array)", {"array": inp((3, 2), DISTINCT)}),
            ("np.maximum.reduce(array, axis=None)", {"array": inp((2, 3), DISTINCT)}),
            ("np.maximum.reduce(array * 0.0)", {"array": inp((3,))}),
        ),
        np.minimum.reduce: cases_of(
            ("np.minimum.reduce(array, axis=1, keepdims=True)", {"array": inp((2, 3), DISTINCT)})
        ),
        np.fmax.reduce: cases_of(
            ("np.fmax.reduce(array, axis=-1)", {"array": inp((2, 3), DISTINCT)})
        ),
        np.fmin.reduce: cases_of(("np.fmin.reduce(array)", {"array": inp((4,), DISTINCT)})),
        np.logaddexp.reduce: cases_of(
            ("np.logaddexp.reduce(array)", {"array": inp((3, 2))}),
            ("np.logaddexp.reduce(array, axis=-1, keepdims=True)", {"array": inp((2, 3))}),
            ("np.logaddexp.reduce(array, axis=None)", {"array": inp((2, 3))}),
        ),
        # complex values between real inputs and a real result; their adjoints follow JAX's convention
        FFT.fft: cases_of(
            ("np.abs(np.fft.fft(a)) ** 2", half),
            ("np.real(np.fft.fft(a, 6, norm='ortho') * C6)", half),
            ("np.imag(np.fft.fft(a, n=3, axis=0) * C3[:, None])", {"a": inp((4, 2))}),
            ("np.abs(np.fft.fft(a, norm='forward'))", {"a": inp((2, 3))}),
        ),
        FFT.ifft: cases_of(
            ("np.real(np.fft.ifft(np.fft.fft(a) * C4))", half),
            ("np.imag(np.fft.ifft(a, n=6, norm='ortho'))", half),
            ("np.abs(np.fft.ifft(a, axis=0, norm='forward'))", {"a": inp((3, 2))}),
        ),
        FFT.fft2: cases_of(
            ("np.abs(np.fft.fft2(a)) ** 2", {"a": inp((2, 3))}),
            ("np.real(np.fft.fft2(a, s=(3, 3), norm='ortho') * C3)", {"a": inp((2, 2, 3))}),
        ),
        FFT.ifft2: cases_of(
            ("np.imag(np.fft.ifft2(a, axes=(0, 1)) * C23[:, :, None])", {"a": inp((2, 3, 2))}),
            ("np.real(np.fft.ifft2(np.fft.fft2(a) * C23))", {"a": inp((2, 3))}),
        ),
        FFT.fftn: cases_of(
            ("np.abs(np.fft.fftn(a))", {"a": inp((2, 3), NONZERO)}),
            (
                "np.real(np.fft.fftn(a, s=(4,), axes=(0,), norm='forward') * C4[:, None])",
                {"a": inp((3, 2))},
            ),
        ),
        FFT.ifftn: cases_of(
            ("np.real(np.fft.ifftn(np.fft.fftn(a) * C23))", {"a": inp((2, 3))}),
            ("np.imag(np.fft.ifftn(a, s=(2, 2), norm='ortho'))", {"a": inp((3, 3))}),
        ),
        FFT.rfft: cases_of(
            ("np.abs(np.fft.rfft(a)) ** 2", half),
            ("np.real(np.fft.rfft(a, n=5, norm='ortho') * C3)", half),
            ("np.imag(np.fft.rfft(a, axis=0) * C3[:, None])", {"a": inp((4, 2))}),
        ),
        FFT.irfft: cases_of(
            ("np.fft.irfft(np.fft.rfft(a) * C3)", half),
            ("np.fft.irfft(np.fft.rfft(a) * C3, n=5, norm='forward')", half),
            (
                "np.fft.irfft(np.fft.fft(a, axis=0) * C4[:, None], axis=0, norm='ortho')",
                {"a": inp((4, 2))},
            ),
            ("np.fft.irfft(np.fft.rfft(a, 6) * C4, 7)", half),
        ),
        FFT.rfft2: cases_of(
            ("np.abs(np.fft.rfft2(a)) ** 2", {"a": inp((3, 4))}),
            ("np.real(np.fft.rfft2(a, s=(2, 4), norm='ortho') * C3)", {"a": inp((3, 3))}),
        ),
        FFT.irfft2: cases_of(
            ("np.fft.irfft2(np.fft.rfft2(a) * C23)", {"a": inp((2, 4))}),
            ("np.fft.irfft2(np.fft.rfft2(a) * C23, s=(3, 3), norm='forward')", {"a": inp((2, 4))}),
        ),
        FFT.rfftn: cases_of(
            ("np.abs(np.fft.rfftn(a)) ** 2", {"a": inp((2, 2, 3))}),
            ("np.imag(np.fft.rfftn(a, s=(4,), axes=(0,)) * C3[:, None])", {"a": inp((3, 2))}),
        ),
        FFT.irfftn: cases_of(
            ("np.fft.irfftn(np.fft.rfftn(a) * C23)", {"a": inp((2, 4))}),
            (
                "np.fft.irfftn(np.fft.rfftn(a, axes=(0,)) * C3[:, None], axes=(0,), norm='ortho')",
                {"a": inp((4, 2))},
            ),
        ),
        FFT.fftshift: cases_of(
            ("np.fft.fftshift(x)", {"x": inp((5,))}),
            ("np.fft.fftshift(x, axes=0)", {"x": inp((3, 2))}),
        ),
        FFT.ifftshift: cases_of(
            ("np.fft.ifftshift(x)", {"x": inp((2, 3))}),
            ("np.fft.ifftshift(x, axes=(1,))", {"x": inp((3, 4))}),
        ),
        np.imag: cases_of(
            ("np.imag(np.fft.fft(x))", {"x": inp((4,))}),
            ("np.fft.fft(x).imag * 2.0", {"x": inp((3,))}),
            ("np.imag(x)", {"x": inp((3,))}),
            ("x.imag + x", {"x": inp((2, 3))}),
        ),
        np.angle: cases_of(
            ("np.angle(np.fft.fft(z) * C4)", {"z": inp((4,))}),
            ("np.angle(np.fft.fft(z) * C4, deg=True)", {"z": inp((4,))}),
            ("np.angle(z)", {"z": inp((3,), NONZERO)}),
        ),
        np.block: cases_of(
            (
                "np.block([[x, y], [y, x]])",
                {"x": inp((2, 2), param="arrays"), "y": inp((2, 2), param="arrays")},
            ),
            (
                "np.block([x, 2.0, y])",
                {"x": inp((2,), param="arrays"), "y": inp((3,), param="arrays")},
            ),
            (
                "np.block([[[x]], [[y * 2.0]]])",
                {"x": inp((2,), param="arrays"), "y": inp((1, 2), param="arrays")},
            ),
            (
                "np.block([[x, y[:, :1]], [np.ones((1, 2)), y[:1, 1:]]])",
                {"x": inp((2, 2), param="arrays"), "y": inp((2, 2), param="arrays")},
            ),
            ("np.block(x)", {"x": inp((2, 3), param="arrays")}),
        ),
    }
    # ufunc.at on a buffer the function allocated (the normalizer's buf = add_at(buf, indices, b))
    scatter = "buf = a * 1.0\n"
    specs.update(
        {
            runtime.add_at: cases_of(
                (
                    "buf",
                    {"a": inp((4,)), "b": inp((4,))},
                    {"pre": scatter + "np.add.at(buf, IDX, b)"},
                ),
                ("buf", {"b": inp(())}, {"pre": "buf = np.zeros((3, 2))\nnp.add.at(buf, IDX2, b)"}),
                (
                    "buf",
                    {"a": inp((3, 3)), "b": inp((2,))},
                    {"pre": scatter + "np.add.at(buf, (IDX[:2], IDX[2:]), b)"},
                ),
                (
                    "buf",
                    {"b": inp((4, 2))},
                    {"pre": "buf = np.zeros((3, 2))\nnp.add.at(buf, IDX, b)"},
                ),
            ),
            runtime.subtract_at: cases_of(
                (
                    "buf",
                    {"a": inp((3,)), "b": inp((4,))},
                    {"pre": scatter + "np.subtract.at(buf, IDX, b)"},
                ),
                (
                    "buf",
                    {"a": inp((3, 2)), "b": inp((2,))},
                    {"pre": scatter + "np.subtract.at(buf, IDX, b)"},
                ),
            ),
            runtime.multiply_at: cases_of(
                (
                    "buf",
                    {"a": inp((3,), HALF), "b": inp((4,), HALF)},
                    {"pre": scatter + "np.multiply.at(buf, IDX, b)"},
                ),
                (
                    "buf",
                    {"a": inp((3, 2), HALF), "b": inp((4, 2), ZEROS)},
                    {"pre": scatter + "np.multiply.at(buf, IDX, b)"},
                ),
                (
                    "buf",
                    {"a": inp((3,), HALF), "b": inp("py", HALF)},
                    {"pre": scatter + "np.multiply.at(buf, IDX, b)"},
                ),
            ),
            runtime.maximum_at: cases_of(
                (
                    "buf",
                    {"a": inp((3,), GRID0), "b": inp((4,), GRID1)},
                    {"pre": scatter + "np.maximum.at(buf, IDX, b)"},
                ),
                (
                    "buf",
                    {"b": inp((4,), DISTINCT)},
                    {"pre": "buf = np.zeros(3)\nnp.maximum.at(buf, IDX, b)"},
                ),
                (
                    "buf",
                    {"a": inp((3,))},
                    {"pre": scatter + "np.maximum.at(buf, IDX, 0.0 * a[IDX])"},
                ),
            ),
            runtime.minimum_at: cases_of(
                (
                    "buf",
                    {"a": inp((3,), GRID0), "b": inp((4,), GRID1)},
                    {"pre": scatter + "np.minimum.at(buf, IDX, b)"},
                ),
                (
                    "buf",
                    {"a": inp((2, 3), GRID1), "b": inp((3,), GRID0)},
                    {"pre": scatter + "np.minimum.at(buf, 1, b)"},
                ),
            ),
        }
    )
    return specs


# ---- ndarray methods and attributes (rules.METHODS, rules.ATTRIBUTES): the same functions, spelled
M = (2, 3)
METHOD_SPECS = {
    np.sum: methods(("{x}.sum()", M), ("{x}.sum(axis=0, keepdims=True)", M), ("{x}.sum(1)", M)),
    np.mean: methods(("{x}.mean(axis=-1)", M)),
    np.prod: methods(("{x}.prod(axis=0)", M, HALF)),
    np.max: methods(("{x}.max(axis=1)", M, DISTINCT)),
    np.min: methods(("{x}.min()", M, DISTINCT)),
    np.var: methods(("{x}.var(axis=0)", M)),
    np.std: methods(("{x}.std()", M)),
    np.cumsum: methods(("{x}.cumsum(axis=1)", M)),
    np.cumprod: methods(("{x}.cumprod(axis=0)", M, HALF)),
    np.transpose: methods(
        ("{x}.transpose(1, 0, 2)", (2, 3, 2)), ("{x}.transpose((2, 0, 1))", (2, 3, 2)), ("{x}.T", M)
    ),
    np.reshape: methods(("{x}.reshape(3, -1)", M), ("{x}.reshape((-1,))", M)),
    np.ravel: methods(("{x}.ravel()", M), ("{x}.ravel('F')", M)),
    np.squeeze: methods(("{x}.squeeze()", (1, 3, 1))),
    np.clip: methods(("{x}.clip(-0.5, 0.7)", M, GRID0)),
    np.swapaxes: methods(("{x}.swapaxes(0, 1)", M)),
    np.repeat: methods(("{x}.repeat(2, axis=1)", M)),
    np.take: methods(("{x}.take(IDX, axis=1)", M)),
    np.diagonal: methods(("{x}.diagonal()", (3, 3))),
    np.trace: methods(("{x}.trace()", (3, 3))),
    np.copy: methods(("{x}.copy()", M)),
    np.real: methods(("{x}.real", M)),
    np.matrix_transpose: methods(("{x}.mT", (2, 2, 3))),
    np.dot: cases_of(
        ("a.dot(b)", {"a": inp((2, 3)), "b": inp((3, 2))}),
        ("a.dot(b)", {"a": inp((3,)), "b": inp((3, 2))}),
    ),
    np.round: methods(("{x}.round()", M, NONINT)),
    np.argmax: methods(("{x}.argmax()", M, DISTINCT)),
    np.argmin: methods(("{x}.argmin(axis=0)", M, DISTINCT)),
    np.argsort: methods(("{x}.argsort(axis=0)", M, DISTINCT)),
    np.argpartition: methods(("{x}.argpartition(1, axis=0)", M, DISTINCT)),
    np.any: methods(("{x}.any()", M, NONZERO)),
    np.all: methods(("{x}.all()", M, NONZERO)),
    np.nonzero: methods(("{x}.nonzero()[0]", M, NONZERO)),
    np.ones: methods(("np.ones(np.shape({x}), dtype={x}.dtype)", M)),
}
# attributes that carry no gradient (``ATTRIBUTES[name] is None``): the compiler reads them itself
ATTRIBUTE_SPECS = {
    np.shape: cases_of(("np.array(x.shape)", {"x": inp(M)}, {"reach": False})),
    np.ndim: cases_of(("x.ndim", {"x": inp(M)}, {"reach": False})),
    np.size: cases_of(("x.size", {"x": inp(M)}, {"reach": False})),
}

SPECS = {}
for _group in (
    elementwise_specs,
    reduction_specs,
    linalg_specs,
    shape_specs,
    indexing_specs,
    sequence_specs,
    nondiff_specs,
    special_specs,
    scipy_specs,
    library_specs,
):
    SPECS.update(_group())
for _more in (METHOD_SPECS, ATTRIBUTE_SPECS):
    SPECS.update({k: cat(SPECS[k], v) for k, v in _more.items() if k in SPECS})
SPECS.pop(None, None)  # a function this numpy does not have
