"""Compile time: from ``sg.grad(f)`` to its first result, minus the time of a later call.

Straight-line functions of 10, 100 and 1000 lines (generated into a temporary module, since
sourcegrad reads source files), and a function with nested loops, branches and a ``while``,
with and without calls to a helper function. Each is compiled afresh (a new module, a new
function object) up to five times (fewer when one compile takes over a second); the table gives
the median. For reference, where JAX is
installed, the same for ``jax.jit(jax.value_and_grad(f))`` (tracing and XLA compilation), in a
subprocess stopped after two minutes.

Then how compile time grows with the program (sourcegrad only): straight-line functions of 100
to 3200 lines with an in-place write into a fresh buffer every tenth line, loops nested 4 to 16
deep each writing into a buffer of its own, and one expression of hundreds of terms. Each should
take time about proportional to its size (issue 14: the aliasing pass was quadratic in the
lines and exponential in the depth).
"""

import importlib.util
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import types

import numpy as np

_counter = itertools.count()

NESTED = """
import numpy as np


def f(x, w):
    total = 0.0
    for i in range(4):
        y = x * w
        if np.sum(y) > 0:
            for j in range(3):
                y = np.sin(y) * w
                if j == 1:
                    y = y + x
        else:
            k = 0
            while k < 3:
                y = np.tanh(y) + 0.5 * x
                k += 1
        total = total + np.sum(y * y)
    return total
"""

NESTED_WITH_HELPERS = """
import numpy as np


def squash(y, x):
    return np.tanh(y) + 0.5 * x


def energy(y):
    return np.sum(y * y)


def f(x, w):
    total = 0.0
    for i in range(4):
        y = x * w
        if np.sum(y) > 0:
            for j in range(3):
                y = np.sin(y) * w
                if j == 1:
                    y = y + x
        else:
            k = 0
            while k < 3:
                y = squash(y, x)
                k += 1
        total = total + energy(y)
    return total
"""


def straight_line(n):
    """A function body of ``n`` lines, each an operation on earlier results, bounded values."""
    body = ["    a0 = np.tanh(x * w)"]
    for i in range(1, n - 1):
        j = max(0, i - 3)
        body.append(
            [
                f"    a{i} = np.tanh(a{i - 1} * w + x)",
                f"    a{i} = a{i - 1} + 0.5 * np.sin(a{j})",
                f"    a{i} = a{i - 1} * np.cos(a{j})",
            ][i % 3]
        )
    body.append(f"    return np.sum(a{n - 2})")
    return "import numpy as np\n\n\ndef f(x, w):\n" + "\n".join(body) + "\n"


def straight_line_writes(n):
    """``n`` lines like ``straight_line``'s, every tenth one a write into the array the line
    before made (a fresh buffer: allowed), so that the aliasing pass has writes to check."""
    body = ["    a0 = np.tanh(x * w)"]
    m = 0
    for i in range(1, n - 1):
        if i % 10 == 0:
            body.append(f"    a{m}[{i % 8}] = np.sin(a{m - 3}[0])")
            continue
        m += 1
        j = max(0, m - 3)
        body.append(
            [
                f"    a{m} = np.tanh(a{m - 1} * w + x)",
                f"    a{m} = a{m - 1} + 0.5 * np.sin(a{j})",
                f"    a{m} = a{m - 1} * np.cos(a{j})",
            ][m % 3]
        )
    body.append(f"    return np.sum(a{m})")
    return "import numpy as np\n\n\ndef f(x, w):\n" + "\n".join(body) + "\n"


def nested_buffers(depth):
    """``depth`` loops, each inside the one before, each allocating a buffer, writing into it and
    adding it in. One trip each (a bound read from the argument, so never unrolled)."""
    lines = [
        "import numpy as np",
        "",
        "",
        "def f(x, w):",
        "    y = x * w",
        "    trips = x.shape[0] // 8",
    ]
    for d in range(depth):
        pad = "    " * (d + 1)
        lines += [
            f"{pad}for i{d} in range(trips):",
            f"{pad}    b{d} = np.zeros(8)",
            f"{pad}    b{d}[{d % 8}] = y[0]",
            f"{pad}    y = np.tanh(y + b{d} * w)",
        ]
    lines.append("    return np.sum(y)")
    return "\n".join(lines) + "\n"


def long_expression(terms):
    """One line: a sum of ``terms`` terms."""
    total = " + ".join(f"{k % 7 + 1}.0 * np.sin(x * {k % 5 + 1}.0 + w)" for k in range(terms))
    return f"import numpy as np\n\n\ndef f(x, w):\n    return np.sum({total})\n"


def load(source, directory):
    """A fresh module from ``source``, written to a file so that ``inspect`` can read it."""
    name = f"_sg_compile_bench_{next(_counter)}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def first_call_minus_run(make_grad, f, args, block=lambda r: r):
    """Seconds from building the gradient to its first result, less one steady-state call."""
    start = time.perf_counter()
    g = make_grad(f)
    block(g(*args))
    first = time.perf_counter() - start
    timer = timeit.Timer(lambda: block(g(*args)))
    number = max(1, int(0.02 / max(min(timer.repeat(3, 1)), 1e-7)))
    run = min(timer.repeat(3, number)) / number
    return first - run, run, g


def repeats(first_seconds, most):
    """Fewer fresh compiles when one is slow: the whole table should take minutes, not hours."""
    return 1 if first_seconds > 10 else min(most, 3) if first_seconds > 1 else most


def sourcegrad_compile(source, directory, args, repeat):
    import sourcegrad as sg

    def once():
        return first_call_minus_run(
            lambda f: sg.grad(f, wrt=(0, 1)), load(source, directory).f, args
        )

    results = [once()]
    results += [once() for _ in range(repeats(results[0][0], repeat) - 1)]
    g = results[-1][2]
    lines = len(sg.source(g).splitlines())
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results), lines


def sourcegrad_again(source, directory, args, repeat):
    """The compile for arguments of another shape, of a function compiled once: its source is
    not read again (``transforms/source.py``)."""
    import sourcegrad as sg

    other = tuple(np.concatenate([a, a[:1]]) for a in args)

    def once():
        g = sg.grad(load(source, directory).f, wrt=(0, 1))
        g(*args)
        return first_call_minus_run(lambda f: g, None, other)[0]

    return statistics.median(once() for _ in range(repeat))


JAX_LIMIT_S = 120


def jax_compile(source, directory, repeat, limit=JAX_LIMIT_S):
    """The same for ``jax.jit(jax.value_and_grad(f))``, in a subprocess stopped after ``limit``
    seconds: XLA takes minutes on the 1000-line function."""
    if importlib.util.find_spec("jax") is None:
        return "-"
    path = os.path.join(directory, f"_sg_jax_bench_{next(_counter)}.py")
    with open(path, "w") as fh:
        fh.write(source)
    try:
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--jax", path, str(repeat)],
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"> {limit * 1e3:.0f} (stopped)"
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if proc.returncode == 0 and lines else f"error (exit {proc.returncode})"


def _jax_main(path, repeat):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    # backend start-up, not compile time
    jax.block_until_ready(jax.jit(lambda a: a + 1.0)(np.ones(8)))
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(8), rng.standard_normal(8))
    with open(path) as fh:
        source = fh.read()
    times = []
    with tempfile.TemporaryDirectory() as directory:
        while len(times) < (repeats(times[0], repeat) if times else 1):
            f = load(source, directory).f
            f = types.FunctionType(f.__code__, {**f.__globals__, "np": jnp}, f.__name__)
            try:
                times.append(
                    first_call_minus_run(
                        lambda f: jax.jit(jax.value_and_grad(f, argnums=(0, 1))),
                        f,
                        args,
                        jax.block_until_ready,
                    )[0]
                )
            except Exception as e:  # noqa: BLE001 — e.g. Python control flow on traced values
                print(f"n/a ({type(e).__name__})")
                return
    print(f"{statistics.median(times) * 1e3:.1f}")


def report(quick):
    start = time.perf_counter()
    import sourcegrad  # noqa: F401

    import_ms = (time.perf_counter() - start) * 1e3

    sizes = (10, 100) if quick else (10, 100, 1000)
    repeat = 1 if quick else 5
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(8), rng.standard_normal(8))
    functions = [(f"straight line, {n} lines", straight_line(n)) for n in sizes]
    functions += [
        ("nested loops/branches/while", NESTED),
        ("... with helper calls", NESTED_WITH_HELPERS),
    ]
    scaling = [
        (f"straight line, {n} lines, a buffer write every 10", straight_line_writes(n))
        for n in ((100, 400) if quick else (100, 400, 1600, 3200))
    ]
    scaling += [
        (f"loops nested {d} deep, a buffer written in each", nested_buffers(d))
        for d in ((4, 8, 12) if quick else (4, 8, 12, 16))
    ]
    scaling += [
        (f"one expression of {n} terms", long_expression(n))
        for n in ((200,) if quick else (200, 400))
    ]

    headers = [
        "function",
        "sourcegrad compile ms",
        "run us",
        "generated lines",
        "jax.jit compile ms",
    ]
    rows = [["import sourcegrad", f"{import_ms:.1f}", "-", "-", "-"]]
    with tempfile.TemporaryDirectory() as directory:
        first = sourcegrad_compile(straight_line(10), directory, args, 1)
        rows.append(
            [
                "first compile in the process (10 lines, lazy imports)",
                f"{first[0] * 1e3:.1f}",
                "-",
                "-",
                "-",
            ]
        )
        for label, source in functions:
            row = _row(label, source, directory, args, repeat)
            rows.append(row + [jax_compile(source, directory, 1 if quick else 3)])
        again = sourcegrad_again(straight_line(100), directory, args, repeat)
        rows.append(
            [
                "... 100 lines again, for arguments of another shape",
                f"{again * 1e3:.1f}",
                "-",
                "-",
                "-",
            ]
        )
        for label, source in scaling:
            rows.append(_row(label, source, directory, args, repeat) + ["-"])
    return headers, rows


def _row(label, source, directory, args, repeat):
    try:
        compile_s, run_s, lines = sourcegrad_compile(source, directory, args, repeat)
        return [label, f"{compile_s * 1e3:.1f}", f"{run_s * 1e6:.1f}", str(lines)]
    except Exception as e:  # noqa: BLE001 — report what the compiler does not support yet
        return [label, f"FAILED: {type(e).__name__}", "-", "-"]


if __name__ == "__main__" and sys.argv[1:2] == ["--jax"]:
    _jax_main(sys.argv[2], int(sys.argv[3]))
