"""How long each extension point took, after llm-d's plugin latency metrics: the router times
each of its plugins (every filter, the predictor, every scorer, the objective) once per decision,
the director each hook's subscribers once per event, and both hand the nanoseconds to an
``ExtensionTimer``. Routing stays pure: it is given the timer, and its decision never reads it.

The null object (``NO_TIMING``) is the default, so a replay, a test or ``duet explain`` records
nothing; the running gateway gives its telemetry's timer (``gateway.extension_times``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final, Protocol

# The router's extension points (the hooks' are the events' names: gateway.flow.hooks).
FILTER: Final = "filter"
PREDICTOR: Final = "predictor"
SCORER: Final = "scorer"
OBJECTIVE: Final = "objective"


class ExtensionTimer(Protocol):
    """Takes one call's duration. ``plugin``: the plugin instance's name for the router's
    extension points, the subscriber itself for a hook's (the timer names it once)."""

    def observe(self, extension_point: str, plugin: Hashable, elapsed_ns: int) -> None: ...


class NoTiming:
    """Records nothing."""

    __slots__ = ()

    def observe(self, extension_point: str, plugin: Hashable, elapsed_ns: int) -> None:
        pass


NO_TIMING: Final = NoTiming()
