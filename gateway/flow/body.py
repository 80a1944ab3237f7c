"""Request bodies at the edge. Only the fields Duet reads are typed; every other field (tools,
response_format, logprobs, seed, top_k, any vLLM extra) passes through untouched. vLLM's
``priority`` is typed and is the gateway's to send (``gateway.flow.upstream``)."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gateway.errors import InvalidRequest

PositiveTokens = Annotated[int, Field(ge=1)]
VllmPriority = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]  # vLLM's bounds (an int64)


class _Body(BaseModel):
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


class ChatBody(_Body):
    messages: Annotated[list[dict[str, Any]], Field(min_length=1)]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None


class MessagesBody(ChatBody):
    """/v1/messages (Anthropic's Messages API): ``max_tokens`` is required, the system prompt is
    its own field, tools carry an ``input_schema``; content blocks' text is read like chat's."""

    max_tokens: PositiveTokens
    system: str | list[dict[str, Any]] | None = None


class ResponsesBody(ChatBody):
    """/v1/responses (OpenAI's Responses API). ``input`` and ``instructions`` are read as chat
    ``messages`` (for classification and counting only: the body goes upstream as sent);
    ``previous_response_id`` names a response stored on one replica; ``request_id`` (a vLLM
    extra) becomes the new response's id."""

    input: str | list[Any]
    instructions: str | None = None
    max_output_tokens: PositiveTokens | None = None
    previous_response_id: str | None = None
    request_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_as_chat(cls, data: Any) -> Any:
        if isinstance(data, dict) and "messages" not in data and "input" in data:
            data = {**data, "messages": response_messages(data.get("instructions"), data["input"])}
        return data

    def output_limit(self) -> int | None:
        return self.max_output_tokens


def response_messages(instructions: Any, items: Any) -> list[dict[str, Any]]:
    """The Responses API's instructions and input items as chat messages (text only), never empty."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if isinstance(instructions, str) else []
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if "content" in item:
            messages.append({"role": item.get("role", "user"), "content": item["content"]})
        elif "output" in item or "arguments" in item:  # a function call's result, or the call
            text = item.get("output", item.get("arguments"))
            messages.append({"role": "tool", "content": text if isinstance(text, str) else ""})
    return messages or [{"role": "user", "content": ""}]


class CompletionBody(_Body):
    prompt: str | list[Any]


class TokenizeBody(CompletionBody):
    """/tokenize with a prompt, and /detokenize (its ``tokens`` pass through as an extra field);
    /tokenize with ``messages`` is a ChatBody."""

    prompt: str | list[Any] = ""


class EmbeddingsBody(_Body):
    """/v1/embeddings: ``input`` is a string, token ids, or a batch of either."""

    input: str | list[Any]

    @property
    def prompt(self) -> str | list[Any]:
        return self.input

    def output_limit(self) -> int | None:
        return 1  # an embedding is one forward pass: nothing is decoded


RequestBody = ChatBody | CompletionBody | EmbeddingsBody


def decode_json_object(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    return data


BodyT = TypeVar("BodyT", bound=_Body)


def parse_body(raw: bytes, schema: type[BodyT]) -> tuple[dict[str, Any], BodyT]:
    """Decode and validate a JSON body. Returns the raw dict (what is forwarded) and the typed view.
    Raises InvalidRequest naming the offending parameter."""
    return validate_body(decode_json_object(raw), schema)


def parse_any_body(raw: bytes) -> tuple[dict[str, Any], ChatBody | CompletionBody]:
    """A chat body when it has ``messages``, else a completions body (the dry-run endpoint)."""
    data = decode_json_object(raw)
    if "messages" in data:
        return validate_body(data, ChatBody)
    return validate_body(data, CompletionBody)


def parse_tokenize_body(raw: bytes) -> tuple[dict[str, Any], ChatBody | TokenizeBody]:
    """/tokenize and /detokenize: a chat body when it has ``messages``, else a prompt (or tokens)."""
    data = decode_json_object(raw)
    if "messages" in data:
        return validate_body(data, ChatBody)
    return validate_body(data, TokenizeBody)


def validate_body(data: dict[str, Any], schema: type[BodyT]) -> tuple[dict[str, Any], BodyT]:
    try:
        return data, schema.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        param = ".".join(str(p) for p in error["loc"]) or None
        raise InvalidRequest(f"Invalid value for '{param}': {error['msg']}.", param=param) from exc
