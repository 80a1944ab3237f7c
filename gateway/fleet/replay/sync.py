"""Running the state store's coroutines without an event loop.

The in-memory store's ``begin``/``finish``/``record_*`` are coroutines only to share the
``StateStore`` interface with the Redis store; they never await. Replay drives them in virtual
time from plain code, so it steps each coroutine once and takes its result.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that completes without suspending; raises if it would suspend."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("coroutine suspended: replay needs a store that never awaits (the in-memory one)")
