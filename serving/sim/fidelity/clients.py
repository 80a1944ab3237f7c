"""How a published scenario's clients reach the engine model, in virtual time: a closed loop of
``concurrency`` clients (each sends its next request when its answer ends, as genai-perf's and
vLLM's benchmarks do with a concurrency limit), against one replica or against a prefill and a
decode replica (1P1D: the prompt on the prefill engine with ``remote_decode``, then the answer
on the decode engine from the transferred KV, as vLLM's P/D proxy sends them).

A P/D request's times are the client's: from its arrival at the prefill engine to the decode
engine's first token and finish.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Event, Finished, SimRequest

# The i-th request a scenario sends: the request id's index -> the request.
RequestMaker = Callable[[int], SimRequest]


def closed_loop(engine: Engine, make: RequestMaker, prompts: int, concurrency: int) -> list[Finished]:
    """``prompts`` requests through one engine, at most ``concurrency`` in flight."""
    sent, done = 0, []
    while sent < min(concurrency, prompts):
        engine.submit(make(sent), 0.0)
        sent += 1
    while (at := engine.next_event_time()) is not None:
        for event in _finished(engine.advance(at)):
            done.append(event)
            if sent < prompts:
                engine.submit(make(sent), event.time)
                sent += 1
    return done


def closed_loop_pd(prefill: Engine, decode: Engine, make: RequestMaker, prompts: int,
                   concurrency: int) -> list[Finished]:
    """``prompts`` requests through a prefill and a decode engine, at most ``concurrency``
    clients' requests in flight across both; each request's finish in the client's times."""
    sent, done = 0, []
    handed: dict[str, Finished] = {}  # request id -> its prefill's finish

    def send(now: float) -> None:
        nonlocal sent
        request = make(sent)
        prefill.submit(dataclasses.replace(request, max_tokens=1, remote_decode=True), now)
        sent += 1

    for _ in range(min(concurrency, prompts)):
        send(0.0)
    while (at := _next(prefill, decode)) is not None:
        for ready in _finished(prefill.advance(at)):
            if not ready.kv_ready:
                raise RuntimeError(f"{ready.request_id}: the prefill ended {ready.reason} without KV to hand off")
            handed[ready.request_id] = ready
            decode.advance(ready.time)
            decode.submit(dataclasses.replace(make(int(ready.request_id[1:])), remote_prefill=True), ready.time)
        for answer in _finished(decode.advance(at)):
            done.append(_client_view(handed.pop(answer.request_id), answer))
            if sent < prompts:
                prefill.advance(answer.time)
                send(answer.time)
    return done


def _client_view(prefill: Finished, answer: Finished) -> Finished:
    """The decode engine's finish, timed from the client's arrival at the prefill engine."""
    before = prefill.e2e_s  # arrival at prefill -> handoff, when the decode request arrives
    ttft = None if answer.ttft_s is None else before + answer.ttft_s
    return dataclasses.replace(answer, ttft_s=ttft, e2e_s=before + answer.e2e_s, queued_s=prefill.queued_s)


def _next(*engines: Engine) -> float | None:
    times = [t for engine in engines if (t := engine.next_event_time()) is not None]
    return min(times) if times else None


def _finished(events: list[Event]) -> list[Finished]:
    return [e for e in events if isinstance(e, Finished)]
