"""A generator of random differentiable programs, as Python source text.

Every program is a module with a main function ``f(x, y, s, k)`` (``x``, ``y``: float vectors of
length ``n``; ``s``: a Python float; ``k``: a small int used as a loop bound) and up to two helper
functions defined *after* it. Bodies mix straight-line numpy from a safe set (``+ - * /``,
``tanh sin cos exp arctan square sqrt log``, ``sum mean``, indexing), ``if``/``else`` on data,
``for`` over ranges, arrays and ``enumerate``, bounded ``while`` loops, ``break``/``continue``,
early returns, augmented assignment, tuple swaps, lists built with ``append`` and consumed by
``np.stack`` or ``sum``, helper calls with default and keyword arguments, and
in-place writes (``b[i] = v``, ``b[lo:hi] += v``, ``b[b < 0] = 0``) to buffers the program
allocated itself.

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
    kind: str  # "vec" (length n), "scal", or "int" (a loop index, 0 <= i < bound)
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


@dataclass
class Program:
    source: str
    n: int
    features: set = field(default_factory=set)

    def args(self, seed):
        """Arguments for ``f``: vectors in [-1.5, 1.5], a float in [-1, 1], k in 0..3."""
        rng = random.Random(seed)
        import numpy as np

        x = np.array([rng.uniform(-1.5, 1.5) for _ in range(self.n)])
        y = np.array([rng.uniform(-1.5, 1.5) for _ in range(self.n)])
        return x, y, rng.uniform(-1.0, 1.0), rng.randint(0, 3)


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
        self.n = chooser.int(2, 5)
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

    # ---- expressions: (code, bound) ----

    def squash(self, code, bound, limit=BIG):
        if bound > limit:
            self.features.add("squash")
            return f"np.tanh({code})", 1.0
        return code, bound

    def leaf(self, kind):
        if kind == "scal":
            options = ["const"]
            if self.vars("scal"):
                options += ["var", "var"]
            if self.vars("vec"):
                options += ["index", "reduce"]
            if self.vars("int"):
                options.append("loopvar")
            pick = self.c.choice(options)
            if pick == "var":
                v = self.c.choice(self.vars("scal"))
                return v.name, v.cap
            if pick == "index":
                v = self.c.choice(self.vars("vec"))
                ints = self.vars("int")
                if ints and self.c.chance(0.5):
                    i = self.c.choice(ints)
                    self.features.add("index_by_loop_var")
                    return f"{v.name}[{i.name} % {self.n}]", v.cap
                self.features.add("index")
                return f"{v.name}[{self.c.int(-self.n, self.n - 1)}]", v.cap
            if pick == "reduce":
                v = self.c.choice(self.vars("vec"))
                if self.c.chance(0.5):
                    self.features.add("mean")
                    return f"np.mean({v.name})", v.cap
                self.features.add("sum")
                return f"np.sum({v.name})", v.cap * self.n
            if pick == "loopvar":
                i = self.c.choice(self.vars("int"))
                self.features.add("loop_var_arith")
                return f"({i.name} * 0.25)", 0.25 * i.cap
            value = self.c.const(-2.0, 2.0)
            return repr(value), abs(value)
        v = self.c.choice(self.vars("vec"))
        return v.name, v.cap

    def expr(self, kind, depth=2):
        if depth <= 0 or self.c.chance(0.25):
            return self.leaf(kind)
        pick = self.c.choice(["unary", "binary", "binary", "mix", "call", "reduce"])
        if pick == "unary":
            return self.unary(*self.expr(kind, depth - 1))
        if pick == "binary":
            return self.binary(self.expr(kind, depth - 1), self.expr(kind, depth - 1))
        if pick == "mix":  # a scalar and a vector, broadcast
            if kind == "vec":
                return self.binary(self.expr("scal", depth - 1), self.expr("vec", depth - 1))
            return self.binary(self.expr("scal", depth - 1), self.expr("scal", depth - 1))
        if pick == "reduce" and kind == "scal" and self.vars("vec"):
            code, bound = self.expr("vec", depth - 1)
            if self.c.chance(0.5):
                self.features.add("sum")
                return self.squash(f"np.sum({code})", bound * self.n)
            self.features.add("mean")
            return f"np.mean({code})", bound
        if pick == "call":
            helpers = [h for h in self.helpers if h.returns == kind]
            if helpers:
                return self.call(self.c.choice(helpers), depth)
        return self.leaf(kind)

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

    def binary(self, left, right):
        (a, ba), (b, bb) = left, right
        op = self.c.choice(["+", "-", "*", "/"])
        self.features.add(f"op{op}")
        if op == "+":
            return self.squash(f"({a} + {b})", ba + bb)
        if op == "-":
            return self.squash(f"({a} - {b})", ba + bb)
        if op == "*":
            return self.squash(f"({a} * {b})", ba * bb)
        return f"({a} / (2.0 + np.sin({b})))", ba

    def call(self, h, depth):
        if not self.in_main:
            self.features.add("helper_calls_helper")
        args = [self.squash(*self.expr(kind, depth - 1), limit=3.0)[0] for _, kind in h.params]
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
        pick = self.c.choice(["scal", "sum", "index"] if self.vars("vec") else ["scal"])
        c = self.c.const(-1.0, 1.0)
        op = self.c.choice([">", "<"])
        if pick == "scal":
            code, _ = self.expr("scal", 1)
        elif pick == "sum":
            code = f"np.sum({self.c.choice(self.vars('vec')).name})"
        else:
            code = f"{self.c.choice(self.vars('vec')).name}[{self.c.int(0, self.n - 1)}]"
        text = f"{code} {op} {c}"
        if self.c.chance(0.15):
            self.features.add("bool_op")
            other, _ = self.expr("scal", 1)
            text = f"{text} {self.c.choice(['and', 'or'])} {other} > {self.c.const(-1.0, 1.0)}"
        return text

    # ---- statements ----

    def new_var(self):
        kind = self.c.choice(["vec", "scal"] if self.vars("vec") else ["scal"])
        code, bound = self.squash(*self.expr(kind))
        if code.replace("[", " ").split()[0].isidentifier() and code.endswith(("]",)) or code.isidentifier():
            code = f"{code} * 1.0"  # a fresh value, never an alias nor a view
        name = self.fresh("v")
        self.emit(f"{name} = {code}")
        # sourcegrad takes a helper's result for a possible view: never update it in place
        self.env.append(Var(name, kind, max(1.0, bound), view=code.startswith("helper")))
        self.features.add("assign")

    def update_var(self):
        targets = [v for v in self.env if v.kind in ("vec", "scal") and not (v.buf or v.param or v.view)]
        if not targets:
            return self.new_var()
        v = self.c.choice(targets)
        v.updated = True
        form = self.c.choice(["tanh", "blend", "mul_cos", "aug_mul", "aug_div", "aug_add", "aug_sub"])
        e, _ = self.expr(v.kind if form == "tanh" or self.c.chance(0.7) else "scal")  # kinds never change
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
        vecs = self.vars("vec")
        if vecs and self.c.chance(0.3):
            v = self.c.choice(vecs)
            self.emit(f"{name} = {v.name}.copy()")
            self.env.append(Var(name, "vec", max(1.0, v.cap), buf=True))
            self.features.add("buffer_copy")
        else:
            self.emit(f"{name} = np.zeros({self.n})")
            self.env.append(Var(name, "vec", 1.0, buf=True))
            self.features.add("buffer_zeros")

    def write_buffer(self):
        bufs = self.vars("vec", buf=True)
        if not bufs:
            return self.new_buffer()
        b = self.c.choice(bufs)
        form = self.c.choice(["set", "set_loop", "slice_add", "mul", "blend", "mask"])
        self.features.add(f"write_{form}")
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
            self.emit(f"{b.name}[{lo}:{hi}] += 0.5 * (np.tanh({src.name}[{lo}:{hi}]) - {b.name}[{lo}:{hi}])")
        elif form == "mul":
            e, _ = self.expr("scal")
            self.emit(f"{b.name}[{self.c.int(0, self.n - 1)}] *= np.cos({e})")
        elif form == "blend":
            i = self.c.int(0, self.n - 1)
            e, _ = self.expr("scal")
            self.emit(f"{b.name}[{i}] += 0.5 * (np.tanh({e}) - {b.name}[{i}])")
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
        vecs = self.vars("vec")
        options = ["range", "range2", "reversed"] + (["range_k"] if self.in_main else []) + (["array", "enumerate"] if vecs else [])
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
        elif pick == "range_k":
            self.emit(f"for {i} in range(k):")
            index = Var(i, "int", 4)
        elif pick == "array":
            v = self.iterable(vecs)
            self.emit(f"for {i} in {v.name}:")
            index, element = None, Var(i, "scal", v.cap, view=True)
        else:
            v = self.iterable(vecs)
            e = self.fresh("e")
            self.emit(f"for {i}, {e} in enumerate({v.name}):")
            index, element = Var(i, "int", self.n), Var(e, "scal", v.cap, view=True)
        self.loop_body(depth, [x for x in (index, element) if x is not None])

    def appended(self, kind, depth=2):
        code, _ = self.squash(*self.expr(kind, depth))
        # a fresh value: sourcegrad refuses to update in place an array a live list holds
        return f"{code} * 1.0" if code.isidentifier() else code

    def list_statement(self, depth):
        """A list built with append in a loop, consumed once by np.stack or sum."""
        name = self.fresh("l")
        kind = self.c.choice(["vec", "scal"])
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
            self.emit(f"{name}.append({self.appended(kind)})")
        self.loop_depth -= 1
        out = self.fresh("v")
        if self.c.chance(0.5):
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
        for kind in ("vec", "scal") if not self.loop_depth else ():
            # names bound to the same object as another live name (views) may not be updated in place
            pool = [v for v in self.vars(kind) if v.cap == 1.0 and not (v.buf or v.param or v.view)]
            if len(pool) >= 2:
                a, b = pool[-2], pool[-1]
                self.emit(f"{a.name}, {b.name} = {b.name}, {a.name}")
                self.features.add("swap")
                return
        self.new_var()

    def iterable(self, vecs):
        # Mostly parameters: sourcegrad refuses writes to an array after a loop over it (the
        # loop element might have been a view), which would make many programs refused.
        params = [v for v in vecs if v.param]
        return self.c.choice(params if params and self.c.chance(0.8) else vecs)

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

    def statement(self, depth):
        options = ["new", "new", "update", "update", "buffer", "write", "write", "swap"]
        if depth > 0:
            options += ["if", "if", "for", "while", "list"]
            if self.loop_depth >= 2:
                options = [o for o in options if o not in ("for", "while", "list")]
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
        elif self.c.chance(0.5):
            self.early_return()
        else:
            self.new_var()

    def block(self, depth, count):
        for _ in range(count):
            self.statement(depth)

    def result(self, kind="scal"):
        """A scalar (or vector) made from up to three live variables."""
        live = [v for v in self.env if v.kind in ("vec", "scal")]
        recent = live[-4:]  # mostly what was computed last, so the gradient flows through the body
        picks = [self.c.choice(recent if self.c.chance(0.7) else live) for _ in range(self.c.int(1, 3))]
        terms = []
        bound = 0.0
        for v in picks:
            w = self.c.const(-1.0, 1.0)
            if v.kind == "vec" and kind != "vec":
                terms.append(f"{w} * np.sum({v.name})")
                bound += abs(w) * v.cap * self.n
            else:
                terms.append(f"{w} * {v.name}")
                bound += abs(w) * v.cap
        if kind == "vec" and not any(v.kind == "vec" for v in picks):
            v = self.c.choice(self.vars("vec"))
            terms.append(f"0.5 * {v.name}")
            bound += 0.5 * v.cap
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
        kinds = [self.c.choice(["vec", "scal"]) for _ in range(2)]
        if "vec" not in kinds:
            kinds[0] = "vec"
        params = [Var(f"a{k}", kinds[0], 3.0, param=True), Var(f"c{k}", kinds[1], 3.0, param=True)]
        default = None
        if self.c.chance(0.5):
            default = repr(self.c.const(-1.0, 1.0))
            params.append(Var(f"d{k}", "scal", 1.0, param=True))
        returns = self.c.choice(["vec", "scal"])
        self.in_main = False
        body = self.function(params, returns, self.c.int(1, 3))
        names = [v.name if v.name != f"d{k}" else f"d{k}={default}" for v in params]
        source = "\n".join([f"def helper{k}({', '.join(names)}):"] + body)
        return Helper(f"helper{k}", [(v.name, v.kind) for v in params], default, returns,
                      max(1.0, self.result_bound), source)

    def program(self):
        helpers = []
        for k in range(self.c.int(0, 2)):
            h = self.helper(k)
            self.helpers.append(h)
            helpers.append(h)
        self.in_main = True
        params = [Var("x", "vec", 1.5, param=True), Var("y", "vec", 1.5, param=True),
                  Var("s", "scal", 1.0, param=True)]
        body = self.function(params, "scal", self.c.int(2, self.max_statements))
        parts = ["import numpy as np", "", "", "def f(x, y, s, k):"] + body
        for h in reversed(helpers):  # defined after the caller; later helpers call earlier ones
            parts += ["", "", h.source]
        return Program("\n".join(parts) + "\n", self.n, set(self.features))


def generate(chooser, max_statements=8):
    """A random ``Program`` from the choices ``chooser`` makes."""
    return Generator(chooser, max_statements).program()
