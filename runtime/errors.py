"""The errors the runtime raises, defined once: ``sourcegrad.errors`` (and ``sourcegrad``) export
these same classes, and the compiler's own errors derive from ``SourcegradError`` here. Their
public home is ``sourcegrad.errors``, so tracebacks and pickles name them there."""

from __future__ import annotations

__all__ = [
    "SourcegradError",
    "NonScalarOutputError",
    "UnsupportedValueError",
    "CustomGradientError",
]


class SourcegradError(Exception):
    """Base class of every error sourcegrad raises on purpose."""


class NonScalarOutputError(SourcegradError, ValueError):
    """``grad`` of a function whose value is not a scalar."""


class UnsupportedValueError(SourcegradError, TypeError):
    """A value the generated code refuses at run time (a dict where a sequence is looped over)."""


class CustomGradientError(SourcegradError, ValueError):
    """A custom ``Function``'s backward returned the wrong thing: the wrong number of gradients,
    a gradient that is not an array, or one shaped unlike its input. Raised as the backward runs,
    naming the Function, the input and both shapes."""


# (tracebacks print ``sourcegrad.errors.NonScalarOutputError: ...``, as users import it)
for _error in (SourcegradError, NonScalarOutputError, UnsupportedValueError, CustomGradientError):
    _error.__module__ = "sourcegrad.errors"
