"""Context managers that carry no gradient (``with np.errstate(...):``,
``with warnings.catch_warnings():``) around statements of generated code: entered and exited as
Python enters and exits them, and exited when an exception leaves the generated code
(``unwind_contexts``, called where the compiled code is run), so numpy's error state and the
warning filters are never left changed.
"""

from __future__ import annotations

import threading

__all__ = ["enter_context", "exit_context", "unwind_contexts"]

_open = threading.local()  # .managers: the context managers entered and not exited yet


def _managers():
    managers = getattr(_open, "managers", None)
    if managers is None:
        managers = _open.managers = []
    return managers


def enter_context(manager):
    """``with manager [as value]:`` begins: its ``__enter__``'s value."""
    value = manager.__enter__()
    _managers().append(manager)
    return value


def exit_context(manager):
    """The block of ``with manager:`` ended without an exception (a manager ``unwind_contexts``
    exited already is not exited again)."""
    managers = _managers()
    for k in range(len(managers) - 1, -1, -1):
        if managers[k] is manager:
            del managers[k]
            manager.__exit__(None, None, None)
            return


def unwind_contexts(exc):
    """Exit, innermost first, every manager entered and not exited: the exception ``exc`` is
    leaving the generated code that entered them (which catches none)."""
    managers = _managers()
    while managers:
        managers.pop().__exit__(type(exc), exc, exc.__traceback__)
