"""Failure injection: what a sick replica does, set by flags, per request by header, or at run
time through ``POST /sim/faults``.

Knobs (the same names in flags, admin JSON and docs):
  error_rate        share of inference requests answered with an error (0..1)
  error_kinds       statuses to pick from for those errors: 429, 500, 503
  die_after_tokens  cut the connection after this many streamed tokens (no ``[DONE]``)
  hang              accept requests and never answer them (nor /health)
  slowdown          every engine step takes this many times longer (1 = healthy)
Per-request headers: ``x-sim-fail: 500``, ``x-sim-die-after-tokens: 5``, ``x-sim-hang: 1``.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from typing import Any

ERROR_KINDS = (429, 500, 503)


class FaultError(ValueError):
    """An invalid fault setting; the message names the knob."""


@dataclass(frozen=True, slots=True)
class Faults:
    """The replica-wide failure settings."""

    error_rate: float = 0.0
    error_kinds: tuple[int, ...] = (500,)
    die_after_tokens: int | None = None
    hang: bool = False
    slowdown: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise FaultError("error_rate: must be within [0, 1]")
        if not self.error_kinds or any(k not in ERROR_KINDS for k in self.error_kinds):
            raise FaultError(f"error_kinds: each must be one of {ERROR_KINDS}")
        if self.die_after_tokens is not None and self.die_after_tokens < 0:
            raise FaultError("die_after_tokens: must be >= 0")
        if self.slowdown <= 0:
            raise FaultError("slowdown: must be > 0")

    def updated(self, changes: dict[str, Any]) -> Faults:
        """These settings with ``changes`` applied (admin JSON: only the keys given change)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise FaultError(f"{unknown[0]}: unknown fault (known: {', '.join(sorted(known))})")
        values = dict(changes)
        if "error_kinds" in values:
            values["error_kinds"] = parse_kinds(values["error_kinds"])
        try:
            return dataclasses.replace(self, **values)
        except TypeError as exc:
            raise FaultError(str(exc)) from exc

    def as_json(self) -> dict[str, Any]:
        """The settings as the admin endpoint shows them."""
        return {**dataclasses.asdict(self), "error_kinds": list(self.error_kinds)}


@dataclass(frozen=True, slots=True)
class RequestFate:
    """What happens to one inference request: an error status, a cut after N tokens, a hang."""

    fail_status: int | None = None
    die_after_tokens: int | None = None
    hang: bool = False


def parse_kinds(value: object) -> tuple[int, ...]:
    """Error kinds from ``"429,500"`` or ``[429, 500]``."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise FaultError("error_kinds: a list of statuses or a comma-separated string")
    try:
        return tuple(int(str(item).strip()) for item in items)
    except ValueError as exc:
        raise FaultError(f"error_kinds: {exc}") from exc


def decide(faults: Faults, headers: dict[str, str], rng: random.Random) -> RequestFate:
    """This request's fate: request headers override the replica-wide settings."""
    forced = headers.get("x-sim-fail")
    if forced:
        return RequestFate(fail_status=int(forced))
    if headers.get("x-sim-hang", "") not in ("", "0") or faults.hang:
        return RequestFate(hang=True)
    if faults.error_rate and rng.random() < faults.error_rate:
        return RequestFate(fail_status=rng.choice(faults.error_kinds))
    die = headers.get("x-sim-die-after-tokens")
    return RequestFate(die_after_tokens=int(die) if die else faults.die_after_tokens)


class FaultSwitch:
    """The replica's current faults, replaceable at run time (one per app, not global)."""

    def __init__(self, faults: Faults, seed: int) -> None:
        self.current = faults
        self.rng = random.Random(seed ^ 0x5EED)

    def fate(self, headers: dict[str, str]) -> RequestFate:
        return decide(self.current, headers, self.rng)
