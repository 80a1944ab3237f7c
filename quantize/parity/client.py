"""Talking to one endpoint through the OpenAI HTTP API only (vLLM, the simulator, or a Duet
gateway alike): which model it serves, and one greedy completion per item."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from quantize.errors import ParityError
from quantize.evals.items import EvalItem


@dataclass(frozen=True, slots=True)
class Endpoint:
    role: str  # "standard" or "candidate"
    url: str  # base URL, without /v1
    model: str


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer, or why there is none. ``latency_s`` is the request's wall time."""

    response: dict[str, Any] | None
    error: str | None
    completion_tokens: int
    latency_s: float


def base_url(url: str) -> str:
    """``url`` without a trailing ``/`` or ``/v1`` (both forms are accepted on the command line)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


async def resolve_model(client: httpx.AsyncClient, role: str, url: str, model: str | None) -> Endpoint:
    """The endpoint with its model: ``model`` if it is served there, else the only one served."""
    url = base_url(url)
    if not url.startswith(("http://", "https://")):
        raise ParityError(f"--{role}: '{url}' is not an http(s) URL")
    try:
        reply = await client.get(f"{url}/v1/models", timeout=10.0)
        reply.raise_for_status()
        served = [str(card["id"]) for card in reply.json()["data"]]
    except httpx.HTTPError as exc:
        raise ParityError(f"--{role} {url}: cannot list models ({type(exc).__name__}: {exc})") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ParityError(f"--{role} {url}: /v1/models did not answer an OpenAI model list") from exc
    if model is None:
        if len(served) != 1:
            raise ParityError(f"--{role} {url} serves {served}: say which with --{role}-model (or --model)")
        model = served[0]
    elif model not in served:
        raise ParityError(f"--{role} {url} does not serve '{model}' (it serves {served})")
    return Endpoint(role, url, model)


async def complete(client: httpx.AsyncClient, endpoint: Endpoint, item: EvalItem, max_tokens: int,
                   timeout_s: float) -> Completion:
    """One greedy answer to ``item``; HTTP and timeout failures come back as ``error``."""
    body = {**item.request, "model": endpoint.model, "temperature": 0, "max_tokens": max_tokens, "stream": False}
    started = time.perf_counter()
    try:
        reply = await client.post(f"{endpoint.url}/v1/chat/completions", json=body, timeout=timeout_s,
                                  headers={"x-duet-task": item.task})
    except httpx.HTTPError as exc:
        return Completion(None, f"{type(exc).__name__}: {exc}", 0, time.perf_counter() - started)
    latency = time.perf_counter() - started
    if reply.status_code != 200:
        return Completion(None, f"HTTP {reply.status_code}: {reply.text[:200]}", 0, latency)
    try:
        response = reply.json()
        tokens = int((response.get("usage") or {}).get("completion_tokens") or 0)
    except (ValueError, AttributeError, TypeError):
        return Completion(None, "the answer is not an OpenAI chat completion", 0, latency)
    return Completion(response, None, tokens, latency)
