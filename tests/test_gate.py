"""The activity gate: an active value reaching a parameter without an adjoint is refused at compile
time, with the parameter and the user's line; a call none of whose arguments is active runs as a
constant, whatever it is."""

import inspect
import math

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.transforms import rules as R

from .oracle import assert_close, fd_grad


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


def refused(f, *args, param, text):
    with pytest.raises(sg.MissingAdjointError) as e:
        sg.grad(f)(*args)
    assert param in str(e.value)
    assert e.value.lineno == _line_of(f, text)
    return e.value


# ---- functions with a parameter that has no adjoint ---------------------------------------------
def scale_by(x, k):
    return x * 2.0


@sg.adjoint(scale_by)
def _(y, x, k):
    d[x] += d[y] * 2.0  # noqa: F821  (a template: ``d`` is the adjoint)


def uses_scale_by(x):
    return np.sum(scale_by(x, np.sum(x)))  # k is active


def uses_scale_by_constant(x):
    return np.sum(scale_by(x, 3.0))


def test_a_user_rule_without_an_adjoint_for_a_parameter_refuses_active_values_there():
    refused(uses_scale_by, np.ones(3), param="'k'", text="scale_by(x, np.sum(x))")
    assert np.allclose(sg.grad(uses_scale_by_constant)(np.ones(3)), 2.0)


def shift_by(x, axis_like):
    return x + 0.0


@sg.adjoint(shift_by, nondiff={"axis_like": "only its sign is read"})
def _(y, x, axis_like):
    d[x] += d[y]  # noqa: F821


def uses_shift_by(x):
    return np.sum(shift_by(x, np.sum(x)))


def test_a_declared_reason_lets_an_active_value_through():
    assert np.allclose(sg.grad(uses_shift_by)(np.ones(3)), 1.0)


def einsum_interleaved(x):
    return np.sum(np.einsum(x, [0, 1], x * x, [1, 2], [0, 2]) * np.arange(4.0).reshape(2, 2))


def einsum_computed_lists(x, ij):
    return np.sum(np.einsum(x, ij))


def test_einsum_in_its_interleaved_form_differentiates_every_operand():
    x = np.array([[0.5, -1.0], [2.0, 0.3]])
    assert_close(sg.grad(einsum_interleaved)(x), fd_grad(einsum_interleaved, (x,), 0))
    with pytest.raises(sg.UnsupportedSyntaxError, match="literal lists"):
        sg.grad(einsum_computed_lists)(x, [0, 1])


def random_mean(x):
    return np.sum(np.random.normal(x, 1.0, size=3))


def random_noise(x):
    return np.sum(x * np.random.normal(0.0, 1.0, size=3))


def test_a_random_draw_refuses_an_active_distribution_parameter_and_runs_otherwise():
    refused(random_mean, 0.5, param="'loc'", text="np.random.normal(x")
    x = np.array([0.5, 1.0, 2.0])
    np.random.seed(0)
    noise = np.random.normal(0.0, 1.0, size=3)
    np.random.seed(0)
    assert np.allclose(sg.grad(random_noise)(x), noise)


# ---- functions with no rule at all ----------------------------------------------------------------
def gamma_of_sum(x):
    return math.gamma(np.sum(x))


def gamma_constant(x):
    return np.sum(x * math.gamma(3.5))


def gamma_unused(x):
    g = math.gamma(np.sum(x))  # computed, never used
    return np.sum(x * x)


def test_a_function_without_a_rule_runs_as_a_constant_unless_an_active_value_reaches_it():
    refused(gamma_of_sum, np.array([1.5, 1.0]), param="math.gamma", text="math.gamma(np.sum(x))")
    x = np.array([0.5, 1.5])
    assert_close(sg.grad(gamma_constant)(x), fd_grad(gamma_constant, (x,), 0))
    assert_close(sg.grad(gamma_unused)(x), 2 * x)


# ---- the declarations themselves ------------------------------------------------------------------
def test_every_parameter_of_every_rule_has_an_adjoint_or_a_declared_reason():
    """A parameter has an adjoint, or a reason it carries none, or neither (then the gate refuses an
    active value there): the last only for parameters that take a number a gradient could flow
    through but the rule does not differentiate."""
    refused_when_active = set()
    for key, template in R.RULES.items():
        if not template.origin.startswith("rule for"):
            continue  # users' rules and custom Functions: the gate decides at their call sites
        accumulated = {s.target for s in template.stmts if s.accumulate}
        for p in template.signature():
            declared = R.nondiff_reason(template, p) is not None
            assert not (p in accumulated and declared), (template.origin, p)
            if p not in accumulated and not declared:
                refused_when_active.add(p)
    assert refused_when_active == {"subscripts", "period"}
    for key, reason in R.NONDIFF.items():
        assert isinstance(reason, (str, dict)) and reason, key


def var_with_ddof(x):
    return np.var(x, ddof=x[0] * 0.5)


def test_numbers_beside_the_operand_differentiate_too():
    """``ddof`` and a norm's ``ord`` take floats: they have adjoints, not declarations."""
    x = np.array([0.5, 2.0, 1.0])
    assert_close(sg.grad(var_with_ddof)(x), fd_grad(var_with_ddof, (x,), 0))


def test_a_builtin_rule_without_a_declaration_fails_when_its_template_is_read():
    """Templates are parsed on first use (the test above reads every one), so a built-in rule
    that leaves a parameter undeclared fails there, before any call binds to it."""

    def made_up(x, scale):
        return x * scale

    R.rule(made_up, "y, x, scale", "d[x] += d[y] * scale")
    try:
        with pytest.raises(ValueError, match="'scale' has no adjoint and no declared reason"):
            R.lookup(made_up)
    finally:
        dict.pop(R.RULES, made_up)
    assert made_up not in R.RULES


def fill_twice(x):
    return np.sum(np.full((2, 2), x) + np.full_like(np.ones(2), 2.0 * x))


def test_what_used_to_be_dropped_now_differentiates():
    assert_close(sg.grad(fill_twice)(0.7), fd_grad(fill_twice, (0.7,), 0))


def interp_periodic(x, period):
    return np.sum(np.interp(x, np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0]), period=period))


def test_a_parameter_the_rule_ignores_cannot_come_from_a_variable():
    """np.interp's rule handles period=None only: a variable there (active or not) is refused."""
    with pytest.raises(sg.MissingAdjointError, match="period given by a variable"):
        sg.grad(interp_periodic)(np.array([0.5, 1.5]), 3.0)
