"""A proxied API: its path, its body type, how its stream ends, and whether the gateway tracks it.
Each API's module (``gateway.endpoints.chat``, ...) defines its own; ``gateway.endpoints.registry``
lists them, and the HTTP layer (its fast path, the gate's route table, the OpenAPI document)
reads that list and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gateway.endpoints.body import Body, parse_body
from gateway.proxy.framing import OPENAI, Framing

BodyT_co = TypeVar("BodyT_co", bound=Body, covariant=True)


@dataclass(frozen=True, slots=True)
class Endpoint(Generic[BodyT_co]):
    """A proxied route. ``tracked``: admitted, bookkept, counted and limited like chat; else only
    routed and passed through (tokenize: no admission, no quota, no spend charged). ``parser``: how its body is read
    when it is not simply ``schema`` (tokenize takes chat messages too)."""

    path: str
    schema: type[BodyT_co]
    summary: str
    tracked: bool = True
    # How its streams end; whether Duet asks an OpenAI stream for usage (the other APIs' streams carry it).
    framing: Framing = OPENAI
    stream_usage: bool = True
    parser: Callable[[bytes], tuple[dict[str, Any], BodyT_co]] | None = None

    def parse(self, raw: bytes) -> tuple[dict[str, Any], BodyT_co]:
        """The raw dict (what is forwarded) and the typed body; InvalidRequest names a bad parameter."""
        if self.parser is not None:
            return self.parser(raw)
        return parse_body(raw, self.schema)
