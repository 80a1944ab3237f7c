"""A short probe of one OpenAI-compatible replica (vLLM or ``duet sim``) over HTTP: the raw
samples ``serving.calibration.fit`` reads the step model from.

1. ``GET /v1/models``: the served name (unless given) and ``max_model_len``; anything else
   answering there is not a replica to calibrate.
2. One short request, discarded: a fresh vLLM's first request pays for warm-up.
3. Prefill: requests alone with ``max_tokens=1``, prompts doubling from ``first_prompt_tokens``
   until one takes ``prefill_budget_s`` or ``prefill_growth`` times the first size's time (the
   prompt's part then dominates the line's slope; a slow CPU stops at a few hundred tokens, a GPU
   near ``max_prompt_tokens``) and at least ``min_prompt_sizes`` sizes are timed (a loaded
   machine's overhead can reach the budget at once; two points fit a line through any noise),
   each size ``repeats`` times. Every prompt opens with a fresh
   nonce: a prefix-cache hit would make prefill look free.
4. Decode: ``n`` streams at once for each ``n`` in ``concurrencies``, each forced to
   ``decode_tokens`` tokens (``min_tokens`` + ``ignore_eos``), timing the chunks.
5. Decode by task, for a drafting replica only (``tasks``, see serving.calibration.by_task): each
   task's chat request streamed alone ``repeats`` times, up to ``task_tokens`` tokens, not forced
   (an answer forced past its end repeats itself, which n-gram drafts would copy); ``/metrics``
   read before and after for the share of drafts accepted (serving.calibration.spec_counters).

Requests go one after another (or one group at a time), so the replica is otherwise idle only if
nothing else sends to it: calibrate before serving traffic.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import statistics
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from serving.calibration.by_task import TaskPrompt, median_sample, task_decode_sample
from serving.calibration.fit import (
    DecodeSample,
    PrefillSample,
    ProbeSamples,
    StreamTrace,
    TaskDecodeSample,
    decode_sample,
)
from serving.calibration.spec_counters import SpecCounters, parse_spec_counters
from serving.errors import CalibrationError

# Common English words: about one token each in BPE vocabularies (SmolLM2's, Llama's), and varied
# enough that n-gram speculation finds little to copy.
_WORDS = ("time", "river", "green", "paper", "light", "stone", "music", "table", "garden", "window",
          "market", "winter", "silver", "orange", "forest", "letter", "number", "bridge", "summer", "planet",
          "doctor", "family", "animal", "circle", "engine", "friend", "island", "camera", "pocket", "yellow")


@dataclass(frozen=True, slots=True)
class ProbePlan:
    """How much to measure (see the module docstring); the defaults take ~45 s on one AVX2 core
    running SmolLM2-135M and a few seconds on a simulated H100."""

    first_prompt_tokens: int = 32
    max_prompt_tokens: int = 2048
    prefill_budget_s: float = 4.0
    prefill_growth: float = 4.0
    min_prompt_sizes: int = 3
    repeats: int = 2
    concurrencies: tuple[int, ...] = (1, 2, 4, 8)
    decode_tokens: int = 24
    request_timeout_s: float = 120.0
    tasks: tuple[TaskPrompt, ...] = ()
    task_tokens: int = 64


def prompt_text(words: int, nonce: str) -> str:
    """A prompt of about ``words`` tokens, opening with ``nonce`` so no cache holds its prefix."""
    body = " ".join(_WORDS[(i * 7 + i // len(_WORDS)) % len(_WORDS)] for i in range(max(1, words)))
    return f"[{nonce}] {body}"


async def probe(url: str, model: str | None = None, plan: ProbePlan | None = None) -> ProbeSamples:
    """Measure the replica at ``url`` (its base, without ``/v1``). Raises CalibrationError when
    it cannot be reached, does not answer like an OpenAI-compatible server, or fails a request."""
    plan = plan or ProbePlan()
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=url.rstrip("/"), timeout=plan.request_timeout_s) as client:
        served, max_model_len = await served_model(client)
        model = model or served
        await _completion(client, {"model": model, "prompt": prompt_text(8, _nonce()), "max_tokens": 2})
        limit = min(plan.max_prompt_tokens, (max_model_len or plan.max_prompt_tokens) - plan.decode_tokens - 16)
        prefill = await _prefill_samples(client, model, plan, limit)
        decode = [await _decode_at(client, model, n, plan) for n in plan.concurrencies]
        tasks = [await _task_decode(client, model, task, plan) for task in plan.tasks]
    return ProbeSamples(model, tuple(prefill), tuple(decode), time.monotonic() - started, tuple(tasks))


async def served_model(client: httpx.AsyncClient) -> tuple[str, int | None]:
    """The first model ``/v1/models`` lists and its ``max_model_len`` (None when not said)."""
    body = await _json(client, "GET", "/v1/models")
    try:
        first = body["data"][0]
        name = str(first["id"])
    except (KeyError, IndexError, TypeError) as exc:
        raise CalibrationError(f"{client.base_url}/v1/models lists no model: not an OpenAI-compatible replica") from exc
    max_len = first.get("max_model_len")
    return name, int(max_len) if isinstance(max_len, int) else None


async def _prefill_samples(client: httpx.AsyncClient, model: str, plan: ProbePlan, limit: int) -> list[PrefillSample]:
    samples: list[PrefillSample] = []
    words = plan.first_prompt_tokens
    while words <= limit:
        timed = [await _ttft(client, model, words) for _ in range(plan.repeats)]
        samples += timed
        ttft_s = statistics.median(s.ttft_s for s in timed)
        sizes = len(samples) // plan.repeats
        if sizes >= plan.min_prompt_sizes and (ttft_s >= plan.prefill_budget_s
                                               or ttft_s >= plan.prefill_growth * samples[0].ttft_s):
            break
        words *= 2
    return samples


async def _ttft(client: httpx.AsyncClient, model: str, words: int) -> PrefillSample:
    body = {"model": model, "prompt": prompt_text(words, _nonce()), "max_tokens": 1, "temperature": 0}
    started = time.monotonic()
    answer = await _completion(client, body)
    elapsed = time.monotonic() - started
    try:
        return PrefillSample(int(answer["usage"]["prompt_tokens"]), elapsed)
    except (KeyError, TypeError, ValueError) as exc:
        raise CalibrationError(f"{client.base_url}/v1/completions answered without usage.prompt_tokens") from exc


async def _decode_at(client: httpx.AsyncClient, model: str, concurrency: int, plan: ProbePlan) -> DecodeSample:
    traces = await asyncio.gather(*(_stream(client, model, plan.decode_tokens) for _ in range(concurrency)))
    return decode_sample(concurrency, traces)


async def _task_decode(client: httpx.AsyncClient, model: str, task: TaskPrompt, plan: ProbePlan) -> TaskDecodeSample:
    body = {"model": model, "messages": [{"role": "user", "content": task.message}], "max_tokens": plan.task_tokens,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    # The gateway's task header: the simulator's acceptance follows it (vLLM's follows the text).
    headers = {"x-duet-task": task.task}
    before = await _spec_counters(client)
    traces = [await _stream_body(client, "/v1/chat/completions", body, headers) for _ in range(plan.repeats)]
    after = await _spec_counters(client)
    sample = median_sample([task_decode_sample(task.task, trace) for trace in traces])
    if before is None or after is None:
        return sample
    return dataclasses.replace(sample, acceptance=after.since(before).acceptance())


async def _spec_counters(client: httpx.AsyncClient) -> SpecCounters | None:
    """The replica's speculative-decoding counters; None when it exports none (no ``/metrics``,
    or none of vLLM's spec-decode counters in it): the acceptance is then not recorded."""
    try:
        response = await client.get("/metrics")
    except httpx.HTTPError as exc:
        raise CalibrationError(f"cannot reach {client.base_url}/metrics: {exc!r}") from exc
    if response.status_code != 200:
        return None
    try:
        return parse_spec_counters(response.text)
    except ValueError as exc:
        raise CalibrationError(f"{client.base_url}/metrics has a spec-decode counter that is not a number: {exc}") from exc


async def _stream(client: httpx.AsyncClient, model: str, tokens: int) -> StreamTrace:
    body = {"model": model, "prompt": prompt_text(8, _nonce()), "max_tokens": tokens, "min_tokens": tokens,
            "ignore_eos": True, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    return await _stream_body(client, "/v1/completions", body)


async def _stream_body(client: httpx.AsyncClient, path: str, body: Mapping[str, Any],
                       headers: Mapping[str, str] | None = None) -> StreamTrace:
    """When each chunk that carried text arrived, and the completion tokens the usage reported."""
    times: list[float] = []
    completion_tokens = 0
    try:
        async with client.stream("POST", path, json=body, headers=headers) as response:
            if response.status_code != 200:
                await response.aread()
                raise CalibrationError(_refusal(response))
            async for line in response.aiter_lines():
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[len("data:"):])
                if _carries_text(chunk):
                    times.append(time.monotonic())
                if chunk.get("usage"):
                    completion_tokens = int(chunk["usage"]["completion_tokens"])
    except httpx.HTTPError as exc:
        raise CalibrationError(f"{client.base_url}: streaming failed: {exc!r}") from exc
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CalibrationError(f"{client.base_url}{path} streamed something not OpenAI-shaped: {exc!r}") from exc
    return StreamTrace(tuple(times), completion_tokens or len(times))


def _carries_text(chunk: Mapping[str, Any]) -> bool:
    """A chunk with a choice, and for chat one whose delta has content (vLLM's first chat chunk
    carries only the role: no step's tokens)."""
    choices = chunk.get("choices")
    if not choices:
        return False
    delta = choices[0].get("delta")
    return delta is None or bool(delta.get("content"))


def _nonce() -> str:
    # 48 random bits: no two probes share a prefix block, in a handful of tokens.
    return uuid.uuid4().hex[:12]


async def _completion(client: httpx.AsyncClient, body: Mapping[str, Any]) -> dict[str, Any]:
    return await _json(client, "POST", "/v1/completions", body)


async def _json(client: httpx.AsyncClient, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
    try:
        response = await client.request(method, path, json=body)
    except httpx.HTTPError as exc:
        raise CalibrationError(f"cannot reach {client.base_url}: {exc!r}") from exc
    if response.status_code != 200:
        raise CalibrationError(_refusal(response))
    try:
        answer = response.json()
    except ValueError as exc:
        raise CalibrationError(f"{client.base_url}{path} answered non-JSON: not an OpenAI-compatible replica") from exc
    if not isinstance(answer, dict):
        raise CalibrationError(f"{client.base_url}{path} answered {type(answer).__name__}: not an OpenAI-compatible replica")
    return answer


def _refusal(response: httpx.Response) -> str:
    return (f"{response.request.url} answered {response.status_code}: "
            f"{response.text[:300].strip()}")
