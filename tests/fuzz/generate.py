"""A generator of random differentiable programs, as Python source text.

Every program is a module with a main function ``f(x, y, s, k, w)`` (``x``, ``y``: float vectors
of length ``n``; ``s``: a Python float; ``k``: a small int used as a loop bound; ``w``: an
``(r, n)`` float matrix) and up to two helper functions defined *after* it. Values have one of
five shapes, called kinds: ``scal`` (``()``), ``vec`` (``(n,)``), ``row`` (``(1, n)``), ``col``
(``(r, 1)``) and ``mat`` (``(r, n)``); ``r`` or ``n`` may be 1.

Bodies mix straight-line numpy from a safe set (``+ - * /``, ``tanh sin cos exp arctan square
sqrt log``, ``sum mean max min``, indexing), broadcasting between kinds in every binary rule
(the operators, ``maximum minimum fmax fmin logaddexp hypot arctan2 power``, ``np.where``),
operands made by broadcasting products and sums, ``keepdims`` reductions (``np.sum(m, axis=0,
keepdims=True)`` is a ``row``), slices of broadcast results (``(a * b)[1:2]``, ``(a + b)[:, ::-1]``),
``if``/``else`` on data, ``for`` over ranges, arrays (a matrix by rows) and ``enumerate``,
bounded ``while`` loops, ``break``/``continue``, early returns (also from a ``while`` inside a
``for`` of a helper that writes a fresh buffer with a fancy-index ``+=``), augmented assignment
(broadcasting a smaller kind into a larger one), tuple swaps, lists built with ``append`` and
consumed by ``np.stack`` or ``sum``, helper calls with default and keyword arguments (and Python
float arguments), and in-place writes (``b[i] = v``, ``b[lo:hi] += v``, ``b[[i, j]] += v``,
``b[b < 0] = 0``) to buffers the program allocated itself; and forms the compiler lowers to those
(``for``/``else``, a walrus in a condition, ``try``/``except`` choosing a branch, ``or`` as a
value).

Values stay bounded by construction, so nothing overflows: each variable has a cap fixed when it
is created, every expression carries a bound, expressions whose bound grows too large are
squashed with ``tanh``, ``exp`` only sees bounded arguments, and every update of an existing
variable is contractive (``v = 0.5 * v + 0.5 * tanh(e)``, ``v *= cos(e)``, ...), so a loop can
run any number of times without growing its state beyond the cap.

Choices go through a ``Chooser``: ``HypothesisChooser`` draws from hypothesis (so failing
programs shrink), ``RandomChooser`` from a seeded ``random.Random`` (for long standalone runs).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

BIG = 6.0  # an expression bound above this is squashed with tanh
EXP_MAX = 2.0  # exp only of arguments bounded by this

# ---- kinds: the shapes values have, and how they broadcast ------------------------------------------

ARRAYS = ("vec", "row", "col", "mat")
_SHAPE = {"scal": (), "vec": ("N",), "row": (1, "N"), "col": ("R", 1), "mat": ("R", "N")}
_KIND = {v: k for k, v in _SHAPE.items()}


def broadcast(a, b):
    """The kind of ``a op b``, or None. Shapes are symbolic (``R``, ``N``), so a pair is accepted
    only when it broadcasts for every ``r`` and ``n``."""
    x, y = _SHAPE[a], _SHAPE[b]
    k = max(len(x), len(y))
    x, y = (1,) * (k - len(x)) + x, (1,) * (k - len(y)) + y
    out = []
    for p, q in zip(x, y):
        if p != q and p != 1 and q != 1:
            return None
        out.append(q if p == 1 else p)
    return _KIND.get(tuple(out))


def fits(small, kind):
    """Does a ``small`` value broadcast into ``kind`` without changing it (``v += e``)?"""
    return broadcast(small, kind) == kind


PAIRS = {
    kind: [(a, b) for a in _SHAPE for b in _SHAPE if broadcast(a, b) == kind] for kind in _SHAPE
}


# ---- choosers -------------------------------------------------------------------------------------


class RandomChooser:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def int(self, lo, hi):
        return self.rng.randint(lo, hi)

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, p):
        return self.rng.random() < p

    def const(self, lo, hi):
        """A float literal with two decimals in [lo, hi]."""
        return self.int(round(lo * 100), round(hi * 100)) / 100


class HypothesisChooser(RandomChooser):
    """Draws every choice from hypothesis, which shrinks toward the first option of each choice."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data = data
        self.st = st

    def int(self, lo, hi):
        return self.data.draw(self.st.integers(lo, hi))

    def chance(self, p):
        return self.int(0, 999) >= 1000 * (1.0 - p)


# ---- the program model ----------------------------------------------------------------------------


@dataclass
class Var:
    name: str
    kind: str  # "scal", "vec", "row", "col", "mat", or "int" (a loop index, 0 <= i < bound)
    cap: float  # |value| <= cap, always (for "int": the exclusive upper bound)
    buf: bool = False  # an array this program allocated: in-place writes allowed
    param: bool = False  # a parameter: may alias the caller's arrays, so never updated in place
    view: bool = False  # an array element or loop element: sourcegrad cannot know it is no view
    updated: bool = False  # updated in place somewhere already


@dataclass
class Helper:
    name: str
    params: list  # [(name, kind)]; the last may have a default
    default: str | None
    returns: str  # kind
    cap: float
    source: str


TRIPS_MAX = 3  # the module constant TRIPS is at most this, before and after it is rebound


@dataclass
class Program:
    source: str
    n: int
    features: set = field(default_factory=set)
    r: int = 2
    rebind: dict = field(default_factory=dict)  # module globals the checker rebinds between calls

    def args(self, seed):
        """Arguments for ``f``: vectors and a matrix in [-1.5, 1.5], a float in [-1, 1], k in 0..3."""
        rng = random.Random(seed)
        import numpy as np

        x = np.array([rng.uniform(-1.5, 1.5) for _ in range(self.n)])
        y = np.array([rng.uniform(-1.5, 1.5) for _ in range(self.n)])
        s, k = rng.uniform(-1.0, 1.0), rng.randint(0, 3)
        w = np.array([[rng.uniform(-1.5, 1.5) for _ in range(self.n)] for _ in range(self.r)])
        return x, y, s, k, w


class _Block:
    """A scope: variables created inside are forgotten when it ends (they may be unbound after)."""

    def __init__(self, gen):
        self.gen = gen

    def __enter__(self):
        self.saved = list(self.gen.env)
        self.gen.indent += 1

    def __exit__(self, *exc):
        self.gen.env = self.saved
        self.gen.indent -= 1


class Generator:
    def __init__(self, chooser, max_statements=8):
        self.c = chooser
        self.n = chooser.int(1, 5) if chooser.chance(0.1) else chooser.int(2, 5)
        self.r = chooser.int(1, 4)
        self.max_statements = max_statements
        self.counter = 0
        self.features = set()
        self.helpers = []
        self.env = []
        self.lines = []
        self.indent = 1
        self.loop_depth = 0
        self.in_main = False
        self.returns = "scal"
        self.result_bound = 0.0

    # ---- names and lines ----

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line):
        self.lines.append("    " * self.indent + line)

    def vars(self, kind, buf=None):
        return [v for v in self.env if v.kind == kind and (buf is None or v.buf == buf)]

    def size(self, kind):
        return {"scal": 1, "vec": self.n, "row": self.n, "col": self.r, "mat": self.r * self.n}[
            kind
        ]

    def kinds_present(self):
        return [k for k in ARRAYS if self.vars(k)]

    # ---- expressions: (code, bound) ----

    def squash(self, code, bound, limit=BIG):
        if bound > limit:
            self.features.add("squash")
            return f"np.tanh({code})", 1.0
        return code, bound

    def leaf(self, kind):
        if kind == "scal":
            return self.scalar_leaf()
        own = self.vars(kind)
        if own and self.c.chance(0.7):
            v = self.c.choice(own)
            return v.name, v.cap
        return self.made_leaf(kind)

    def scalar_leaf(self):
        options = ["const"]
        if self.vars("scal"):
            options += ["var", "var"]
        if self.kinds_present():
            options += ["index", "reduce"]
        if self.vars("int"):
            options.append("loopvar")
        pick = self.c.choice(options)
        if pick == "var":
            v = self.c.choice(self.vars("scal"))
            return v.name, v.cap
        if pick == "index":
            v = self.c.choice([v for k in self.kinds_present() for v in self.vars(k)])
            return self.element(v), v.cap
        if pick == "reduce":
            v = self.c.choice([v for k in self.kinds_present() for v in self.vars(k)])
            if self.c.chance(0.5):
                self.features.add("mean")
                return f"np.mean({v.name})", v.cap
            self.features.add("sum")
            return f"np.sum({v.name})", v.cap * self.size(v.kind)
        if pick == "loopvar":
            i = self.c.choice(self.vars("int"))
            self.features.add("loop_var_arith")
            return f"({i.name} * 0.25)", 0.25 * i.cap
        value = self.c.const(-2.0, 2.0)
        return repr(value), abs(value)

    def position(self, size):
        """An index in range for an axis of length ``size``: a literal, or a loop variable mod it."""
        ints = self.vars("int")
        if ints and self.c.chance(0.4):
            self.features.add("index_by_loop_var")
            return f"{self.c.choice(ints).name} % {size}"
        return str(self.c.int(-size, size - 1))

    def element(self, v):
        self.features.add("index")
        if v.kind == "vec":
            return f"{v.name}[{self.position(self.n)}]"
        if v.kind == "row":
            return f"{v.name}[0, {self.position(self.n)}]"
        if v.kind == "col":
            return f"{v.name}[{self.position(self.r)}, 0]"
        return f"{v.name}[{self.position(self.r)}, {self.position(self.n)}]"

    def made_leaf(self, kind):
        """A value of ``kind`` read out of a variable of another kind (views, keepdims reductions)."""
        mats, vecs = self.vars("mat"), self.vars("vec")
        if kind == "vec":
            if mats and self.c.chance(0.5):
                m = self.c.choice(mats)
                self.features.add("row_of_matrix")
                return f"{m.name}[{self.position(self.r)}]", m.cap
            v = self.c.choice(vecs) if vecs else None
            return (v.name, v.cap) if v else self.made_leaf_from_scalar("vec")
        if kind == "row":
            if mats and self.c.chance(0.5):
                return self.keepdims(self.c.choice(mats), 0)
            if vecs:
                v = self.c.choice(vecs)
                self.features.add("new_axis")
                return (
                    (f"{v.name}[None, :]", v.cap)
                    if self.c.chance(0.5)
                    else (f"{v.name}.reshape(1, {self.n})", v.cap)
                )
            return self.made_leaf_from_scalar("row")
        if kind == "col":
            if mats and self.c.chance(0.7):
                m = self.c.choice(mats)
                if self.c.chance(0.5):
                    return self.keepdims(m, 1)
                j = self.c.int(0, self.n - 1)
                self.features.add("slice_col")
                return f"{m.name}[:, {j}:{j + 1}]", m.cap
            return self.made_leaf_from_scalar("col")
        if mats:
            m = self.c.choice(mats)
            return m.name, m.cap
        return self.made_leaf_from_scalar("mat")

    def made_leaf_from_scalar(self, kind):
        code, bound = self.scalar_leaf()
        shape = {
            "vec": f"{self.n}",
            "row": f"(1, {self.n})",
            "col": f"({self.r}, 1)",
            "mat": f"({self.r}, {self.n})",
        }[kind]
        self.features.add("ones_times")
        return f"(np.ones({shape}) * {code})", bound

    def keepdims(self, m, axis):
        fn = self.c.choice(["sum", "mean", "max", "min"])
        self.features.add("keepdims")
        self.features.add(fn)
        length = self.r if axis == 0 else self.n
        bound = m.cap * length if fn == "sum" else m.cap
        return self.squash(f"np.{fn}({m.name}, axis={axis}, keepdims=True)", bound)

    def expr(self, kind, depth=2):
        if depth <= 0 or self.c.chance(0.25):
            return self.leaf(kind)
        pick = self.c.choice(["unary", "binary", "binary", "binary", "call", "reduce", "slice"])
        if pick == "unary":
            return self.unary(*self.expr(kind, depth - 1))
        if pick == "binary":
            return self.binary(kind, depth)
        if pick == "reduce":
            made = self.reduce(kind, depth)
            if made is not None:
                return made
        if pick == "slice":
            made = self.slice(kind, depth)
            if made is not None:
                return made
        if pick == "call":
            helpers = [h for h in self.helpers if h.returns == kind]
            if helpers:
                return self.call(self.c.choice(helpers), depth)
        return self.leaf(kind)

    def reduce(self, kind, depth):
        """A reduction that makes ``kind``: of anything to a scalar, of a matrix over an axis."""
        fn = self.c.choice(["sum", "mean", "sum", "mean", "max", "min"])
        if kind == "scal":
            src = self.c.choice(self.kinds_present() or ["vec"])
            code, bound = self.expr(src, depth - 1)
            self.features.add(fn)
            return self.squash(f"np.{fn}({code})", bound * (self.size(src) if fn == "sum" else 1))
        if kind == "vec":
            axis, src, keep = 0, self.c.choice(["mat", "row"]), False
        elif kind == "row":
            axis, src, keep = 0, "mat", True
        elif kind == "col":
            axis, src, keep = 1, "mat", True
        else:
            return None
        code, bound = self.expr(src, depth - 1)
        self.features.add(fn)
        self.features.add("keepdims" if keep else "reduce_axis")
        length = (self.r if src == "mat" else 1) if axis == 0 else self.n
        text = f"np.{fn}({code}, axis={axis}{', keepdims=True' if keep else ''})"
        return self.squash(text, bound * (length if fn == "sum" else 1))

    def slice(self, kind, depth):
        """A part of a (usually broadcast) result that has ``kind``."""
        self.features.add("slice_of_result")
        if kind == "vec":
            if self.c.chance(0.5):
                code, bound = self.expr("mat", depth - 1)
                return f"({code})[{self.c.int(-self.r, self.r - 1)}]", bound
            code, bound = self.expr("vec", depth - 1)
            return f"({code})[::-1]", bound
        if kind == "row":
            i = self.c.int(0, self.r - 1)
            code, bound = self.expr("mat", depth - 1)
            return f"({code})[{i}:{i + 1}]", bound
        if kind == "col":
            j = self.c.int(0, self.n - 1)
            code, bound = self.expr("mat", depth - 1)
            return f"({code})[:, {j}:{j + 1}]", bound
        if kind == "mat":
            code, bound = self.expr("mat", depth - 1)
            return f"({code})[{self.c.choice(['::-1', ':, ::-1', '...'])}]", bound
        code, bound = self.expr("mat", depth - 1)
        return f"({code})[{self.c.int(0, self.r - 1)}, {self.c.int(0, self.n - 1)}]", bound

    def unary(self, code, b):
        ops = ["tanh", "sin", "cos", "exp", "arctan", "square", "sqrt1p", "log1p2", "neg", "where"]
        op = self.c.choice(ops)
        self.features.add(op)
        if op == "exp":
            code, b = self.squash(code, b, EXP_MAX)
            return f"np.exp({code})", math.exp(b)
        if op == "square":
            return self.squash(f"np.square({code})", b * b)
        if op == "sqrt1p":
            return f"np.sqrt(1.0 + np.square({code}))", math.sqrt(1.0 + b * b)
        if op == "log1p2":
            return f"np.log(1.0 + np.square({code}))", math.log(1.0 + b * b)
        if op == "neg":
            return f"(-{code})", b
        if op == "arctan":
            return f"np.arctan({code})", math.pi / 2
        if op == "where":  # leaky relu: continuous, with a kink only at 0
            return f"np.where({code} > 0, {code}, 0.5 * {code})", b
        return f"np.{op}({code})", 1.0

    def binary(self, kind, depth):
        """``a op b`` of kind ``kind``, the operands of kinds that broadcast to it."""
        pairs = PAIRS[kind]
        if self.c.chance(0.5):  # mostly pairs that broadcast, the seam the kinds are for
            pairs = [p for p in pairs if p != (kind, kind)] or pairs
        ka, kb = self.c.choice(pairs)
        if ka != kb:
            self.features.add("broadcast")
            self.features.add(f"broadcast_{ka}_{kb}")
        (a, ba), (b, bb) = self.operand(ka, kind, depth), self.operand(kb, kind, depth)
        op = self.c.choice(
            [
                "+",
                "-",
                "*",
                "/",
                "+",
                "-",
                "*",
                "/",
                "maximum",
                "minimum",
                "fmax",
                "fmin",
                "where",
                "clip",
                "logaddexp",
                "hypot",
                "arctan2",
                "power",
            ]
        )
        self.features.add(f"op{op}" if len(op) == 1 else op)
        if op == "+":
            return self.squash(f"({a} + {b})", ba + bb)
        if op == "-":
            return self.squash(f"({a} - {b})", ba + bb)
        if op == "*":
            return self.squash(f"({a} * {b})", ba * bb)
        if op == "/":
            return f"({a} / (2.0 + np.sin({b})))", ba
        if op in ("maximum", "minimum", "fmax", "fmin"):
            return f"np.{op}({a}, {b})", max(ba, bb)
        if op == "where":
            form = self.c.choice(["select", "mask_of_a", "mask_of_b"])
            self.features.add(f"where_{form}")
            if form == "select":
                return f"np.where({a} > {b}, {a}, {b})", max(ba, bb)
            if form == "mask_of_a":
                return f"np.where({a} > {self.c.const(-0.5, 0.5)}, {a}, {b})", max(ba, bb)
            other = self.c.const(-1.0, 1.0)  # b's mask broadcasts a branch against a constant
            return f"np.where({b} > {self.c.const(-0.5, 0.5)}, {a}, {other})", max(ba, abs(other))
        if op == "clip":  # a lower bound that broadcasts, below the upper one
            return self.squash(
                f"np.clip({a}, -0.5 - np.square({b}), 1.0)", max(ba, 0.5 + bb * bb, 1.0)
            )
        if op == "logaddexp":
            return self.squash(f"np.logaddexp({a}, {b})", max(ba, bb) + 0.7)
        if op == "hypot":  # away from (0, 0), where it has no derivative
            return self.squash(f"np.hypot({a}, 0.5 + np.square({b}))", ba + 0.5 + bb * bb)
        if op == "arctan2":  # the denominator stays positive: no branch cut
            return f"np.arctan2({a}, 1.0 + np.square({b}))", math.pi / 2
        return self.squash(f"np.power(1.0 + np.square({a}), np.tanh({b}))", 1.0 + ba * ba)

    def operand(self, small, kind, depth):
        """An operand of kind ``small`` for a binary rule of kind ``kind``. One broadcast up to
        the result is often computed itself, by a broadcasting rule or a keepdims reduction (the
        seam where late broadcast sums meet the rules that read their operands)."""
        if small == kind or depth < 1 or not self.c.chance(0.5):
            return self.expr(small, depth - 1)
        self.features.add("broadcast_computed_operand")
        made = self.reduce(small, depth) if small in ("row", "col") and self.c.chance(0.5) else None
        return made or self.binary(small, max(depth - 1, 1))

    def call(self, h, depth):
        if not self.in_main:
            self.features.add("helper_calls_helper")
        args = []
        for _, kind in h.params:
            if kind == "scal" and self.c.chance(0.2):
                self.features.add("call_float_literal")
                args.append(repr(self.c.const(-1.0, 1.0)))
            else:
                args.append(self.squash(*self.expr(kind, depth - 1), limit=3.0)[0])
        names = [p for p, _ in h.params]
        style = self.c.choice(["positional", "default", "keyword"])
        if style == "default" and h.default is not None:
            self.features.add("call_default")
            text = ", ".join(args[:-1])
        elif style == "keyword":
            self.features.add("call_keyword")
            pairs = [f"{p}={a}" for p, a in zip(names, args)]
            text = ", ".join(reversed(pairs))
        else:
            self.features.add("call")
            text = ", ".join(args)
        return f"{h.name}({text})", h.cap

    def cond(self):
        present = self.kinds_present()
        pick = self.c.choice(["scal", "sum", "index"] if present else ["scal"])
        c = self.c.const(-1.0, 1.0)
        op = self.c.choice([">", "<"])
        if pick == "scal":
            code, _ = self.expr("scal", 1)
        elif pick == "sum":
            code = f"np.sum({self.c.choice(self.vars(self.c.choice(present))).name})"
        else:
            code = self.element(self.c.choice(self.vars(self.c.choice(present))))
        text = f"{code} {op} {c}"
        if self.c.chance(0.15):
            self.features.add("bool_op")
            other, _ = self.expr("scal", 1)
            text = f"{text} {self.c.choice(['and', 'or'])} {other} > {self.c.const(-1.0, 1.0)}"
        return text

    # ---- statements ----

    def value_kind(self):
        present = self.kinds_present()
        return self.c.choice(["scal"] + present + ["vec", "mat"] if present else ["scal"])

    def new_var(self):
        kind = self.value_kind()
        code, bound = self.squash(*self.expr(kind))
        if code.endswith("]") or code.isidentifier():
            code = f"{code} * 1.0"  # a fresh value, never an alias nor a view
        name = self.fresh("v")
        self.emit(f"{name} = {code}")
        # sourcegrad takes a helper's result for a possible view: never update it in place
        self.env.append(Var(name, kind, max(1.0, bound), view=code.startswith("helper")))
        self.features.add("assign")

    def update_var(self):
        targets = [v for v in self.env if v.kind in _SHAPE and not (v.buf or v.param or v.view)]
        if not targets:
            return self.new_var()
        v = self.c.choice(targets)
        v.updated = True
        form = self.c.choice(
            ["tanh", "blend", "mul_cos", "aug_mul", "aug_div", "aug_add", "aug_sub"]
        )
        if form == "tanh":
            kind = v.kind  # kinds never change
        else:  # a smaller kind broadcast into v's
            smaller = [k for k in _SHAPE if fits(k, v.kind) and k != v.kind]
            kind = v.kind if not smaller or self.c.chance(0.5) else self.c.choice(smaller)
            if kind != v.kind:
                self.features.add("update_broadcast")
        e, _ = self.expr(kind)
        self.features.add(f"update_{form}")
        if form == "tanh":
            self.emit(f"{v.name} = np.tanh({e})")
        elif form == "blend":
            self.emit(f"{v.name} = 0.5 * {v.name} + 0.5 * np.tanh({e})")
        elif form == "mul_cos":
            self.emit(f"{v.name} = {v.name} * np.cos({e})")
        elif form == "aug_mul":
            self.emit(f"{v.name} *= np.tanh({e})")
        elif form == "aug_div":
            self.emit(f"{v.name} /= 1.0 + np.square({e})")
        elif form == "aug_add":
            self.emit(f"{v.name} += 0.5 * (np.sin({e}) - {v.name})")
        else:
            self.emit(f"{v.name} -= 0.5 * ({v.name} - np.tanh({e}))")

    def new_buffer(self):
        name = self.fresh("b")
        kind = "mat" if self.c.chance(0.35) else "vec"
        sources = self.vars(kind)
        if sources and self.c.chance(0.3):
            v = self.c.choice(sources)
            self.emit(f"{name} = {v.name}.copy()")
            self.env.append(Var(name, kind, max(1.0, v.cap), buf=True))
            self.features.add("buffer_copy")
        else:
            shape = f"{self.n}" if kind == "vec" else f"({self.r}, {self.n})"
            self.emit(f"{name} = np.zeros({shape})")
            self.env.append(Var(name, kind, 1.0, buf=True))
            self.features.add("buffer_zeros")
        if kind == "mat":
            self.features.add("buffer_matrix")

    def fancy(self, b):
        """An integer-array index into ``b``'s first axis (repeats allowed: the last write wins)."""
        length = self.n if b.kind == "vec" else self.r
        picks = [str(self.c.int(0, length - 1)) for _ in range(self.c.int(1, 3))]
        if self.c.chance(0.3):
            return f"np.array([{', '.join(picks)}])"
        return f"[{', '.join(picks)}]"

    def write_buffer(self):
        bufs = self.vars("vec", buf=True) + self.vars("mat", buf=True)
        if not bufs:
            return self.new_buffer()
        b = self.c.choice(bufs)
        form = self.c.choice(["set", "set_loop", "slice_add", "mul", "blend", "mask", "fancy_add"])
        self.features.add(f"write_{form}")
        if b.kind == "mat":
            return self.write_matrix(b, form)
        ints = self.vars("int")
        if form == "set_loop" and ints:
            i = self.c.choice(ints)
            e, _ = self.expr("scal")
            self.emit(f"{b.name}[{i.name} % {self.n}] = np.tanh({e})")
        elif form in ("set", "set_loop"):
            e, _ = self.expr("scal")
            self.emit(f"{b.name}[{self.c.int(0, self.n - 1)}] = np.tanh({e})")
        elif form == "slice_add":
            lo = self.c.int(0, self.n - 1)
            hi = self.c.int(lo + 1, self.n)
            src = self.c.choice([v for v in self.vars("vec") if v.name != b.name] or [b])
            self.emit(
                f"{b.name}[{lo}:{hi}] += 0.5 * (np.tanh({src.name}[{lo}:{hi}]) - {b.name}[{lo}:{hi}])"
            )
        elif form == "mul":
            e, _ = self.expr("scal")
            self.emit(f"{b.name}[{self.c.int(0, self.n - 1)}] *= np.cos({e})")
        elif form == "blend":
            i = self.c.int(0, self.n - 1)
            e, _ = self.expr("scal")
            self.emit(f"{b.name}[{i}] += 0.5 * (np.tanh({e}) - {b.name}[{i}])")
        elif form == "fancy_add":
            idx = self.fancy(b)
            e, _ = self.expr("scal")
            self.emit(f"{b.name}[{idx}] += 0.5 * (np.tanh({e}) - {b.name}[{idx}])")
        else:
            self.emit(f"{b.name}[{b.name} < 0] = 0.0")

    def write_matrix(self, b, form):
        i = self.c.int(0, self.r - 1)
        if form in ("set", "set_loop"):
            e, _ = self.expr("vec")
            self.emit(f"{b.name}[{self.position(self.r)}] = np.tanh({e})")
        elif form == "slice_add":
            lo = self.c.int(0, self.r - 1)
            hi = self.c.int(lo + 1, self.r)
            kind = self.c.choice(["vec", "row", "mat"])
            e, _ = self.expr(kind)
            part = f"[{lo}:{hi}]" if kind == "mat" else ""  # the rows that fit the slice
            self.emit(f"{b.name}[{lo}:{hi}] += 0.5 * (np.tanh({e}){part} - {b.name}[{lo}:{hi}])")
        elif form == "mul":
            j = self.c.int(0, self.n - 1)
            e, _ = self.expr("col")
            self.emit(f"{b.name}[:, {j}:{j + 1}] *= np.cos({e})")
        elif form == "blend":
            e, _ = self.expr("scal")
            j = self.c.int(0, self.n - 1)
            self.emit(f"{b.name}[{i}, {j}] += 0.5 * (np.tanh({e}) - {b.name}[{i}, {j}])")
        elif form == "fancy_add":
            idx = self.fancy(b)
            e, _ = self.expr(self.c.choice(["vec", "row", "scal"]))
            self.emit(f"{b.name}[{idx}] += 0.5 * (np.tanh({e}) - {b.name}[{idx}])")
        else:
            self.emit(f"{b.name}[{b.name} < 0] = 0.0")

    def if_statement(self, depth):
        self.features.add("if")
        self.emit(f"if {self.cond()}:")
        with _Block(self):
            self.block(depth - 1, self.c.int(1, 3))
        if self.c.chance(0.6):
            self.features.add("else")
            self.emit("else:")
            with _Block(self):
                self.block(depth - 1, self.c.int(1, 3))

    def for_statement(self, depth):
        i = self.fresh("i")
        seqs = self.vars("vec") + self.vars("mat")
        options = (
            ["range", "range2", "reversed"]
            + (["range_k", "range_global", "range_global"] if self.in_main else [])
            + (["array", "enumerate"] if seqs else [])
        )
        pick = self.c.choice(options)
        self.features.add(f"for_{pick}")
        if self.loop_depth:
            self.features.add("nested_loop")
        element = None
        if pick == "range":
            t = self.c.int(0, 4)
            self.emit(f"for {i} in range({t}):")
            index = Var(i, "int", max(t, 1))
        elif pick == "range2":
            a = self.c.int(0, 3)
            t = self.c.int(a, a + 3)
            self.emit(f"for {i} in range({a}, {t}):")
            index = Var(i, "int", max(t, 1))
        elif pick == "reversed":
            t = self.c.int(0, 4)
            self.emit(f"for {i} in reversed(range({t})):")
            index = Var(i, "int", max(t, 1))
        elif pick == "range_global":  # a module constant, rebound between calls (check.py)
            self.emit(f"for {i} in range(TRIPS):")
            index = Var(i, "int", TRIPS_MAX)
        elif pick == "range_k":
            self.emit(f"for {i} in range(k):")
            index = Var(i, "int", 4)
        elif pick == "array":
            v = self.iterable(seqs)
            self.emit(f"for {i} in {v.name}:")
            index, element = None, Var(i, "scal" if v.kind == "vec" else "vec", v.cap, view=True)
        else:
            v = self.iterable(seqs)
            e = self.fresh("e")
            self.emit(f"for {i}, {e} in enumerate({v.name}):")
            length = self.n if v.kind == "vec" else self.r
            index, element = (
                Var(i, "int", length),
                Var(e, "scal" if v.kind == "vec" else "vec", v.cap, view=True),
            )
        if element is not None and element.kind == "vec":
            self.features.add("for_rows")
        self.loop_body(depth, [x for x in (index, element) if x is not None])

    def appended(self, kind, depth=2):
        code, _ = self.squash(*self.expr(kind, depth))
        # a fresh value: sourcegrad refuses to update in place an array a live list holds
        return f"{code} * 1.0" if code.isidentifier() or code.endswith("]") else code

    def list_statement(self, depth):
        """A list (or tuple) built with append, concatenation, extend or repetition in a loop,
        sliced, and consumed once by np.stack, a numpy reduction of the list, or sum."""
        name = self.fresh("l")
        kind = self.value_kind()
        self.emit(f"{name} = []")
        self.emit(f"{name}.append({self.appended(kind, 1)})")
        i = self.fresh("i")
        t = self.c.int(0, 4)
        self.emit(f"for {i} in range({t}):")
        self.loop_depth += 1
        with _Block(self):
            self.env.append(Var(i, "int", max(t, 1)))
            if depth > 1 and self.c.chance(0.5):
                self.statement(0)
            form = self.c.choice(["append", "append", "concat", "tuple_concat", "extend"])
            self.features.add(f"list_{form}")
            if form == "append":
                self.emit(f"{name}.append({self.appended(kind)})")
            elif form == "concat":
                self.emit(f"{name} = {name} + [{self.appended(kind)}]")
            elif form == "tuple_concat":
                self.emit(f"{name} = list(tuple({name}) + ({self.appended(kind)},))")
            else:
                self.emit(f"{name}.extend([{self.appended(kind)}])")
        self.loop_depth -= 1
        if self.c.chance(0.3):
            self.features.add("list_repeat")
            self.emit(f"{name} = {name} * 2")
        if t >= 1 and self.c.chance(0.3):
            self.features.add("list_slice")
            self.emit(f"{name} = {name}[{self.c.int(0, 1)}:]")
        out = self.fresh("v")
        consume = self.c.choice(["stack", "stack", "mean", "reduce"])
        if consume == "mean":
            self.features.add("list_mean")
            self.emit(f"{out} = np.tanh(0.1 * np.mean({name}, axis=0))")
        elif consume == "reduce":
            self.features.add("list_reduce")
            self.emit(f"{out} = np.tanh(0.1 * np.sum({name}))")
            kind = "scal"
        if consume in ("mean", "reduce"):
            pass
        elif self.c.chance(0.5):
            self.features.add("list_stack")
            self.emit(f"{out} = np.tanh(0.1 * np.sum(np.stack({name}), axis=0))")
        else:
            self.features.add("list_sum")
            self.emit(f"{out} = np.tanh(0.1 * sum({name}))")
        self.env.append(Var(out, kind, 1.0))
        self.features.add("list_append")

    def swap(self):
        """``a, b = b, a`` on two variables of one kind (both capped at 1, so caps stay true)."""
        # In a loop, sourcegrad cannot tell after how many swaps which name holds which object, so it
        # would refuse a later in-place update of either (safe, but the program would be wasted).
        for kind in ("vec", "scal", "mat", "row", "col") if not self.loop_depth else ():
            # names bound to the same object as another live name (views) may not be updated in place
            pool = [v for v in self.vars(kind) if v.cap == 1.0 and not (v.buf or v.param or v.view)]
            if len(pool) >= 2:
                a, b = pool[-2], pool[-1]
                self.emit(f"{a.name}, {b.name} = {b.name}, {a.name}")
                self.features.add("swap")
                return
        self.new_var()

    def iterable(self, seqs):
        # Mostly parameters: sourcegrad refuses writes to an array after a loop over it (the
        # loop element might have been a view), which would make many programs refused.
        params = [v for v in seqs if v.param]
        return self.c.choice(params if params and self.c.chance(0.8) else seqs)

    def while_statement(self, depth):
        j = self.fresh("j")
        t = self.c.int(0, 4)
        if self.loop_depth:
            self.features.add("nested_loop")
        self.emit(f"{j} = 0")
        if self.c.chance(0.5):
            self.features.add("while_data")
            self.emit(f"while {j} < {t} and ({self.cond()}):")
        else:
            self.features.add("while")
            self.emit(f"while {j} < {t}:")
        with _Block(self):
            self.emit(f"{j} += 1")
        self.loop_body(depth, [Var(j, "int", max(t + 1, 1))])

    def loop_body(self, depth, loop_vars):
        self.loop_depth += 1
        with _Block(self):
            self.env.extend(loop_vars)
            exit_at = self.c.choice([None, None, "start", "end"])
            if exit_at == "start":
                self.loop_exit()
            self.block(depth - 1, self.c.int(1, 3))
            if exit_at == "end":
                self.loop_exit()
        self.loop_depth -= 1

    def loop_exit(self):
        word = self.c.choice(["break", "continue"])
        self.features.add(word)
        self.emit(f"if {self.cond()}:")
        with _Block(self):
            self.emit(word)

    def early_return(self):
        self.features.add("early_return" if self.in_main else "helper_early_return")
        self.emit(f"if {self.cond()}:")
        with _Block(self):
            self.emit(f"return {self.result(self.returns)}")

    def nested_exit(self):
        """An early ``return`` from a ``while`` inside a ``for``, whose body writes a buffer
        allocated afresh in every iteration with a fancy-index ``+=``."""
        self.features.add("nested_exit" if self.in_main else "helper_nested_exit")
        i, j, b = self.fresh("i"), self.fresh("j"), self.fresh("b")
        self.emit(f"for {i} in range({self.c.int(1, 3)}):")
        self.loop_depth += 1
        with _Block(self):
            self.env.append(Var(i, "int", 3))
            kind = "mat" if self.c.chance(0.3) else "vec"
            self.emit(f"{b} = np.zeros({self.n if kind == 'vec' else (self.r, self.n)})")
            buf = Var(b, kind, 1.0, buf=True)
            self.env.append(buf)
            self.emit(f"{j} = 0")
            self.emit(f"while {j} < {self.c.int(1, 3)}:")
            self.loop_depth += 1
            with _Block(self):
                self.emit(f"{j} += 1")
                self.env.append(Var(j, "int", 4))
                idx = self.fancy(buf)
                e, _ = self.expr("scal" if kind == "vec" else self.c.choice(["vec", "row", "scal"]))
                self.emit(f"{b}[{idx}] += 0.5 * (np.tanh({e}) - {b}[{idx}])")
                self.features.add("write_fancy_add")
                if self.c.chance(0.5):
                    self.statement(0)
                self.emit(f"if {self.cond()}:")
                with _Block(self):
                    if self.returns == kind and self.c.chance(0.5):
                        self.features.add("return_buffer")  # the buffer itself, written no more
                        self.emit(f"return {b}")
                    else:
                        self.emit(f"return {self.result(self.returns)}")
            self.loop_depth -= 1
            if self.c.chance(0.5):
                self.statement(0)
        self.loop_depth -= 1

    # ---- statements lowered to others: for/else, the walrus, try/except, or as a value ----

    def language_statement(self, depth):
        """One of the forms the compiler lowers to those above (``for``/``else`` to a flag, a
        walrus to an assignment, ``try``/``except`` to a branch, ``or`` to a branch)."""
        pick = self.c.choice(["for_else", "walrus_if", "try_except", "or_value"])
        self.features.add(pick)
        if pick == "for_else":
            i = self.fresh("i")
            t = self.c.int(0, 4)
            self.emit(f"for {i} in range({t}):")
            self.loop_body(depth, [Var(i, "int", max(t, 1))])
            self.emit("else:")
            with _Block(self):
                self.block(depth - 1, self.c.int(1, 2))
        elif pick == "walrus_if":
            a = self.fresh("a")
            code, bound = self.squash(*self.expr("scal", 1))
            self.emit(f"if ({a} := {code}) > {self.c.const(-1.0, 1.0)}:")
            # (it may be an argument's value itself: never updated in place)
            self.env.append(Var(a, "scal", max(1.0, bound), view=True))
            with _Block(self):
                self.block(depth - 1, self.c.int(1, 2))
            self.emit("else:")
            with _Block(self):
                self.block(depth - 1, self.c.int(1, 2))
        elif pick == "try_except":
            kind = self.value_kind()
            t = self.fresh("t")
            first, b1 = self.squash(*self.expr(kind))
            self.emit("try:")
            with _Block(self):
                self.emit(f"{t} = {first} * 1.0")
                self.emit(f"if {self.cond()}:")
                with _Block(self):
                    self.emit('raise ValueError("the other branch")')
            self.emit("except ValueError:")
            other, b2 = self.squash(*self.expr(kind))
            with _Block(self):
                self.emit(f"{t} = {other} * 1.0")
            self.env.append(Var(t, kind, max(1.0, b1, b2)))
        else:  # a comparison's truth, or else a value
            p = self.fresh("p")
            code, bound = self.squash(*self.expr("scal", 1))
            self.emit(f"{p} = ({self.cond()}) or ({code}) * 1.0")
            self.env.append(Var(p, "scal", max(1.0, bound), view=True))

    def statement(self, depth):
        options = ["new", "new", "update", "update", "buffer", "write", "write", "swap"]
        if depth > 0:
            options += ["if", "if", "for", "while", "list", "language"]
            if self.loop_depth >= 2:
                options = [o for o in options if o not in ("for", "while", "list")]
            elif not self.loop_depth:
                options.append("nested_exit")
        options.append("return")
        pick = self.c.choice(options)
        if pick == "new":
            self.new_var()
        elif pick == "update":
            self.update_var()
        elif pick == "buffer":
            self.new_buffer()
        elif pick == "write":
            self.write_buffer()
        elif pick == "if":
            self.if_statement(depth)
        elif pick == "for":
            self.for_statement(depth)
        elif pick == "while":
            self.while_statement(depth)
        elif pick == "list":
            self.list_statement(depth)
        elif pick == "swap":
            self.swap()
        elif pick == "nested_exit":
            self.nested_exit()
        elif pick == "language":
            self.language_statement(depth)
        elif self.c.chance(0.5):
            self.early_return()
        else:
            self.new_var()

    def block(self, depth, count):
        for _ in range(count):
            self.statement(depth)

    def result(self, kind="scal"):
        """A value of ``kind`` made from up to three live variables (summed where larger)."""
        live = [v for v in self.env if v.kind in _SHAPE and (kind == "scal" or fits(v.kind, kind))]
        recent = live[-4:]  # mostly what was computed last, so the gradient flows through the body
        picks = (
            [self.c.choice(recent if self.c.chance(0.7) else live) for _ in range(self.c.int(1, 3))]
            if live
            else []
        )
        terms = []
        bound = 0.0
        for v in picks:
            w = self.c.const(-1.0, 1.0)
            if v.kind != "scal" and kind == "scal":
                terms.append(f"{w} * np.sum({v.name})")
                bound += abs(w) * v.cap * self.size(v.kind)
            else:
                terms.append(f"{w} * {v.name}")
                bound += abs(w) * v.cap
        if not any(v.kind == kind for v in picks):
            code, b = self.leaf(kind)
            terms.append(f"0.5 * {code}")
            bound += 0.5 * b
        self.result_bound = max(self.result_bound, bound)
        return " + ".join(terms)

    # ---- functions ----

    def function(self, params, returns, statements):
        """The body lines of one function whose parameters are the variables ``params``."""
        self.lines = []
        self.env = list(params)
        self.indent = 1
        self.returns = returns
        self.result_bound = 0.0
        self.block(2, statements)
        self.emit(f"return {self.result(returns)}")
        return self.lines

    def helper(self, k):
        kinds = ["vec", self.c.choice(["vec", "scal", "scal", "mat", "row", "col"])]
        params = [Var(f"a{k}", kinds[0], 3.0, param=True), Var(f"c{k}", kinds[1], 3.0, param=True)]
        default = None
        if self.c.chance(0.5):
            default = repr(self.c.const(-1.0, 1.0))
            params.append(Var(f"d{k}", "scal", 1.0, param=True))
        returns = self.c.choice(["vec", "scal", "scal", "mat", "row"])
        self.in_main = False
        body = self.function(params, returns, self.c.int(1, 3))
        names = [v.name if v.name != f"d{k}" else f"d{k}={default}" for v in params]
        source = "\n".join([f"def helper{k}({', '.join(names)}):"] + body)
        return Helper(
            f"helper{k}",
            [(v.name, v.kind) for v in params],
            default,
            returns,
            max(1.0, self.result_bound),
            source,
        )

    def program(self):
        helpers = []
        for k in range(self.c.int(0, 2)):
            h = self.helper(k)
            self.helpers.append(h)
            helpers.append(h)
        self.in_main = True
        params = [
            Var("x", "vec", 1.5, param=True),
            Var("y", "vec", 1.5, param=True),
            Var("s", "scal", 1.0, param=True),
            Var("w", "mat", 1.5, param=True),
        ]
        body = self.function(params, "scal", self.c.int(2, self.max_statements))
        # module globals the gradient must read when it runs, not when it was compiled: the result's
        # scale (a float, read live) and a loop bound (an int the compiler may unroll: guarded)
        scale, trips = self.c.const(0.5, 1.0), self.c.int(0, TRIPS_MAX)
        body[-1] = body[-1].replace("return ", "return SCALE * (", 1) + ")"
        self.features.add("module_scale")
        parts = [
            "import numpy as np",
            "",
            f"SCALE = {scale!r}",
            f"TRIPS = {trips}",
            "",
            "",
            "def f(x, y, s, k, w):",
        ] + body
        for h in reversed(helpers):  # defined after the caller; later helpers call earlier ones
            parts += ["", "", h.source]
        rebind = {"SCALE": -scale / 2.0, "TRIPS": (trips + 1) % (TRIPS_MAX + 1)}
        parts = self.tuple_helper(parts)
        return Program("\n".join(parts) + "\n", self.n, set(self.features), self.r, rebind)

    # ---- a helper returning a tuple, unpacked where f calls it (a self-contained block) ----

    def tuple_helper(self, parts):
        """``parts`` (the module's lines), with some chance with a helper ``pair(a, b)`` returning
        three values (computed ones, one of its own arguments, a Python float; from one return
        or one per branch), called by ``f`` just before its last return and unpacked there (plain,
        starred or indexed), its values added to the result. Drawn after the rest of the program,
        so the programs drawn before it are unchanged."""
        if not self.c.chance(0.3):
            return parts
        first = self.c.choice(["np.tanh(a * b)", "np.sin(a) * b", "a"])
        second = self.c.choice(["np.cos(b)", "b * 0.5", "a * b"])
        extra = self.c.choice(["1.0", "-0.5"])
        helper = ["", "", "def pair(a, b):"]
        if self.c.chance(0.5):
            self.features.add("helper_returns_tuple_branches")
            helper += [
                "    if np.sum(a) > 0.0:",
                f"        return {first}, {second}, {extra}",
                f"    return {second}, {first}, 2.0",
            ]
        else:
            helper.append(f"    return {first}, {second}, {extra}")
        call = "pair(x, np.tanh(y))"
        form = self.c.choice(["plain", "starred", "indexed"])
        self.features.add(f"helper_returns_tuple_{form}")
        if form == "plain":
            bind, use = f"tup_a, tup_b, tup_c = {call}", "np.sum(tup_a * tup_b) * tup_c"
        elif form == "starred":
            bind, use = f"tup_a, *tup_bc = {call}", "np.sum(tup_a * tup_bc[0]) * tup_bc[1]"
        else:
            bind, use = f"tup_a = {call}[1]", "np.sum(tup_a)"
        last = len(parts) - 1 - parts[::-1].index("def f(x, y, s, k, w):")
        end = next(i for i in range(len(parts) - 1, last, -1) if parts[i].startswith("    return "))
        parts = list(parts)
        parts[end : end + 1] = ["    " + bind, parts[end] + f" + 0.1 * ({use})"]
        return parts + helper


def generate(chooser, max_statements=8):
    """A random ``Program`` from the choices ``chooser`` makes."""
    return Generator(chooser, max_statements).program()
