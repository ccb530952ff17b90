"""The exceptions sourcegrad raises. A small flat hierarchy: catch ``SourcegradError`` for all.

The errors generated code raises as it runs (and their base, ``SourcegradError``) are defined in
the runtime, which imports nothing of the compiler's (``runtime/errors.py``); this module exports
those same classes beside the compiler's and the API's own."""

from __future__ import annotations

import os
import sys

from .runtime.errors import (
    CustomGradientError,
    NonScalarOutputError,
    SourcegradError,
    UnsupportedValueError,
)

__all__ = [
    "SourcegradError",
    "LocatedError",
    "UnsupportedSyntaxError",
    "MissingAdjointError",
    "MissingTangentError",
    "NonScalarOutputError",
    "UnsupportedValueError",
    "CustomGradientError",
    "NoSourceError",
    "WrtError",
    "UsageError",
    "PullbackError",
    "InternalCompilerError",
    "hide_internal_frames",
]


class LocatedError(SourcegradError):
    """An error about a place in the user's source: file, line, column, the line and a hint."""

    def __init__(self, msg, filename=None, lineno=None, offset=None, text=None, hint=None):
        self.message = msg
        self.filename = filename
        self.lineno = lineno
        self.offset = offset
        self.text = text
        self.hint = hint
        super().__init__(self._render())

    def _render(self):
        parts = [self.message]
        if self.filename is not None and self.lineno is not None:
            col = f", column {self.offset}" if self.offset else ""
            parts.append(f'  File "{self.filename}", line {self.lineno}{col}')
            if self.text:
                line = self.text.rstrip("\n")
                stripped = line.lstrip()
                parts.append("    " + stripped)
                if self.offset:
                    caret = max(0, self.offset - 1 - (len(line) - len(stripped)))
                    parts.append("    " + " " * caret + "^")
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)

    def __str__(self):
        return self._render()


class UnsupportedSyntaxError(LocatedError, SyntaxError):
    """A construct the compiler does not differentiate. Also a ``SyntaxError``, located."""

    def __init__(self, msg, filename=None, lineno=None, offset=None, text=None, hint=None):
        LocatedError.__init__(self, msg, filename, lineno, offset, text, hint)
        # SyntaxError's own fields: Python's traceback prints the location from these, then msg.
        self.args = (self._render(), (filename, lineno, offset, text))
        self.filename, self.lineno, self.offset, self.text = filename, lineno, offset, text
        self.msg = msg + (f"\nhint: {hint}" if hint else "")

    def __str__(self):
        return self._render()


class MissingAdjointError(LocatedError, NotImplementedError):
    """A call to a function that has no adjoint rule registered."""


class MissingTangentError(MissingAdjointError):
    """Forward mode: a primitive with no tangent rule reached by a value with a tangent."""


class NoSourceError(SourcegradError, TypeError):
    """The function has no Python source to read (a builtin, ``exec``-made or typed at a REPL)."""


class WrtError(SourcegradError, TypeError):
    """A bad ``wrt``: out of range, naming no parameter, or selecting a non-float argument."""


class UsageError(SourcegradError, TypeError):
    """An API used with the wrong kind of argument (not a function, a cotangent of the wrong
    shape, ``source`` of something sourcegrad did not make)."""


class PullbackError(SourcegradError, RuntimeError):
    """A pullback called a second time (it consumes its tape)."""


class InternalCompilerError(SourcegradError):
    """A bug in sourcegrad itself. The message names the pass and the user function."""

    def __init__(self, msg, pass_name=None, function=None):
        self.pass_name = pass_name
        self.function = function
        where = f" (during {pass_name}" + (f", compiling {function}" if function else "") + ")"
        super().__init__(
            f"internal compiler error{where if pass_name else ''}: {msg}\n"
            "This is a bug in sourcegrad; please report it with the function that triggered it."
        )


# ---- tracebacks ---------------------------------------------------------------------------------
# An error sourcegrad raises on purpose is about the user's code, so the frames of sourcegrad's own
# modules between the user's call and the raise are noise: the API entry points remove them, as
# JAX's filtered tracebacks do. Frames of the user's code (a custom rule, a Function's forward) and
# of the generated code stay. SOURCEGRAD_TRACEBACK=full keeps every frame, for debugging sourcegrad.


def hide_internal_frames(exc):
    """Remove sourcegrad's own frames from ``exc``'s traceback (unless the environment variable
    ``SOURCEGRAD_TRACEBACK`` is ``full``); returns ``exc``, for ``raise hide_internal_frames(e)``."""
    if os.environ.get("SOURCEGRAD_TRACEBACK", "").strip().lower() == "full":
        return exc
    internal = _package_folders()
    kept = []
    tb = exc.__traceback__
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(internal):
            kept.append(tb)
        tb = tb.tb_next
    for tb, after in zip(kept, kept[1:] + [None]):
        tb.tb_next = after
    return exc.with_traceback(kept[0] if kept else None)


def _package_folders():
    """The folders of sourcegrad's modules: the package, and the compiler and the runtime, which a
    checkout keeps beside it rather than inside."""
    folders = {os.path.dirname(os.path.abspath(__file__))}
    for name in ("sourcegrad.runtime", "sourcegrad.transforms"):
        module = sys.modules.get(name)
        if getattr(module, "__file__", None):
            folders.add(os.path.dirname(os.path.abspath(module.__file__)))
    return tuple(folder + os.sep for folder in folders)
