"""What every proxied API's body shares, and how a body is parsed. Only the fields Duet reads are
typed; every other field (tools, response_format, logprobs, seed, top_k, any vLLM extra) passes
through untouched. vLLM's ``priority`` is typed and is the gateway's to send
(``gateway.flow.upstream``)."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.endpoints.prompt import NO_PROMPT, PromptView
from gateway.errors import InvalidRequest

PositiveTokens = Annotated[int, Field(ge=1)]
VllmPriority = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]  # vLLM's bounds (an int64)


class Body(BaseModel):
    """The fields every proxied API's body has (each API's body, in its own module, adds its own;
    a body type's docstring is its description in the OpenAPI document)."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str
    stream: bool | None = False
    stream_options: dict[str, Any] | None = None
    max_tokens: PositiveTokens | None = None
    max_completion_tokens: PositiveTokens | None = None
    min_tokens: Annotated[int, Field(ge=0)] | None = None
    ignore_eos: bool | None = None
    n: Annotated[int, Field(ge=1, le=128)] | None = None
    priority: VllmPriority | None = None

    def output_limit(self) -> int | None:
        """The most tokens the answer may have (None: up to the context)."""
        return self.max_completion_tokens or self.max_tokens

    def prompt_view(self) -> PromptView:
        """The prompt's texts, read once per request (``gateway.flow.plan.Inbound.prompt``)."""
        return NO_PROMPT


def decode_json_object(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    return data


BodyT = TypeVar("BodyT", bound=Body)


def parse_body(raw: bytes, schema: type[BodyT]) -> tuple[dict[str, Any], BodyT]:
    """Decode and validate a JSON body. Returns the raw dict (what is forwarded) and the typed view.
    Raises InvalidRequest naming the offending parameter."""
    return validate_body(decode_json_object(raw), schema)


def validate_body(data: dict[str, Any], schema: type[BodyT]) -> tuple[dict[str, Any], BodyT]:
    try:
        return data, schema.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        param = ".".join(str(p) for p in error["loc"]) or None
        raise InvalidRequest(f"Invalid value for '{param}': {error['msg']}.", param=param) from exc
