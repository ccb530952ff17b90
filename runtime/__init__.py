"""What generated code calls at run time.

Small and boring on purpose: the zero adjoint, accumulation, broadcasting reductions, scatter-add
for indexing adjoints, and the choice of array module. Everything goes through the array's own
module (numpy, cupy, or anything that implements numpy's dispatch protocols), so nothing here moves
data between host and device. Imports numpy only; cupy is looked up lazily through the arrays.

One module per concern; this package re-exports what generated code and users name, and
``__all__`` is the namespace generated code sees:

- ``errors``: the errors the runtime raises (exported again by ``sourcegrad.errors``)
- ``backend``: which array library a value belongs to (``array_module``, ``ShapeOf``)
- ``zeros``: the zero adjoint ``ZERO``, ``acc``, the adjoints of lists and dicts
- ``broadcast``: ``unbroadcast``, ``unreduce`` and their kin
- ``scatter``: adjoints of indexing (``unindex``, ``written_part``, ``zero_at``)
- ``values``: copies for the tape, ``shape_of``, ``finalize``
- ``checks``: run-time checks that raise the user's error
- ``functions``: custom ``Function``s, ``stop_gradient``, ``no_grad``
- ``adjoints/``, ``parameters``, ``sequences``: helpers of adjoint rules
- ``meter``, ``revolve``, ``lazy``: tapes that count, checkpoint, or persist lazy arrays
"""

from __future__ import annotations

from . import adjoints, backend, broadcast, checks, errors, functions, parameters, scatter
from . import sequences, values, zeros
from .adjoints import *  # noqa: F401,F403  (rule helpers generated code calls by name)
from .backend import *  # noqa: F401,F403
from .broadcast import *  # noqa: F401,F403
from .checks import *  # noqa: F401,F403
from .errors import *  # noqa: F401,F403
from .functions import *  # noqa: F401,F403
from .lazy import LazyTape, lazy_tape, persist_live
from .meter import metered_tape, snapshots
from .parameters import *  # noqa: F401,F403
from .revolve import checkpointed, revolve
from .scatter import *  # noqa: F401,F403
from .sequences import *  # noqa: F401,F403
from .values import *  # noqa: F401,F403
from .zeros import *  # noqa: F401,F403

__all__ = [
    *zeros.__all__,
    *backend.__all__,
    *broadcast.__all__,
    *scatter.__all__,
    *values.__all__,
    *checks.__all__,
    *errors.__all__,
    *functions.__all__,
    *adjoints.__all__,
    *parameters.__all__,
    *sequences.__all__,
    "metered_tape",
    "snapshots",
    "checkpointed",
    "revolve",
    "LazyTape",
    "lazy_tape",
    "persist_live",
]
