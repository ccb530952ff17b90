"""``try`` statements in differentiated code: the try body is run once as Python runs it, to
learn which path the statement takes (``transforms/normalize/attempts.py``); that path then runs
as compiled code, its choice on the tape like a branch's.
"""

from __future__ import annotations

__all__ = ["attempt"]


def attempt(code, fn, env, *handlers):
    """Run ``code`` (a try body, compiled) with ``fn``'s globals and closure and the locals
    ``env`` of the generated code, binding nothing outside it. ``(0, None)`` when it raises
    nothing, else ``(k, exception)`` for the first handler ``k`` (from 1) whose exception types
    match, as Python picks one; any other exception propagates, as from the try statement."""
    scope = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is unbound, as in the function
                pass
    scope.update(env)
    try:
        exec(code, scope)  # noqa: S102 (the user's own code, compiled from their source)
    except BaseException as e:
        for k, types in enumerate(handlers, 1):
            if isinstance(e, types):
                return k, e
        raise
    return 0, None
