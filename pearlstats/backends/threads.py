"""BLAS threads of the passes over rows: one per task, the tasks being the parallelism.

Examples
--------
>>> with one_blas_thread():
...     pass
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from threadpoolctl import ThreadpoolController

__all__ = ["one_blas_thread"]

_THREADPOOLS: ThreadpoolController | None = None


def one_blas_thread() -> AbstractContextManager:
    """A context in which BLAS libraries use one thread (the controller is built once).

    The engines multiply and factor many small matrices, where BLAS threads cost
    more than they give and, on a busy machine, spin-wait (pitfall 8 of the design notes).
    """
    global _THREADPOOLS
    if _THREADPOOLS is None:
        _THREADPOOLS = ThreadpoolController()
    return _THREADPOOLS.limit(limits=1, user_api="blas")
