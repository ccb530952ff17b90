"""Run-time pieces of adjoint rules too long to read well inline in generated code, one module
per module of ``transforms/rules/`` (a rule's text there, its helpers here under the same name),
and ``common`` for what several kinds share. Generated code reads them from ``sourcegrad.runtime``,
which re-exports every public function and class these modules define (``__all__``).

They import the runtime's pieces from its concern modules (``..zeros``, ``..broadcast``, ...),
never from the ``sourcegrad.runtime`` package itself, which imports them."""

from . import (
    common,
    elementwise,
    fft,
    indexing,
    linalg,
    products,
    reductions,
    scipy_linalg,
    shape,
    signal,
    special,
    stats,
)

__all__ = list(
    dict.fromkeys(
        name
        for module in (
            common,
            elementwise,
            reductions,
            products,
            linalg,
            shape,
            indexing,
            fft,
            special,
            stats,
            scipy_linalg,
            signal,
        )
        for name, value in vars(module).items()
        if not name.startswith("_")
        and callable(value)
        and getattr(value, "__module__", "").startswith(__name__ + ".")
    )
)

from .common import *  # noqa: E402,F401,F403
from .elementwise import *  # noqa: E402,F401,F403
from .reductions import *  # noqa: E402,F401,F403
from .products import *  # noqa: E402,F401,F403
from .linalg import *  # noqa: E402,F401,F403
from .shape import *  # noqa: E402,F401,F403
from .indexing import *  # noqa: E402,F401,F403
from .fft import *  # noqa: E402,F401,F403
from .special import *  # noqa: E402,F401,F403
from .stats import *  # noqa: E402,F401,F403
from .scipy_linalg import *  # noqa: E402,F401,F403
from .signal import *  # noqa: E402,F401,F403
