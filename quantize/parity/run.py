"""Running the suite on both endpoints: per task type, both endpoints answer every item at the
same time (bounded concurrency per endpoint, greedy), then every answer is verified (coding in
the sandbox, on a thread pool)."""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from quantize.evals.checking.answers import message_text
from quantize.evals.items import EvalItem, Verdict
from quantize.evals.suite import Suite
from quantize.evals.task import TaskType
from quantize.evals.tasks.chat import with_reference
from quantize.parity.client import Completion, Endpoint, complete


@dataclass(frozen=True, slots=True)
class Answered:
    completion: Completion
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class ItemResult:
    item: EvalItem
    standard: Answered
    candidate: Answered


@dataclass(frozen=True, slots=True)
class EndpointTiming:
    """One endpoint on one task type: completion tokens over the wall time of all its requests."""

    completion_tokens: int
    wall_s: float
    errors: int

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0


@dataclass(frozen=True, slots=True)
class TaskRun:
    task: str
    results: tuple[ItemResult, ...]
    standard: EndpointTiming
    candidate: EndpointTiming


@dataclass(frozen=True, slots=True)
class RunSettings:
    concurrency: int = 4  # requests in flight per endpoint
    timeout_s: float = 300.0  # per request
    show_progress: bool = True


async def run_suite(suite: Suite, standard: Endpoint, candidate: Endpoint, types: dict[str, TaskType],
                    settings: RunSettings, client: httpx.AsyncClient) -> list[TaskRun]:
    """Every task type of ``suite``, one after the other (so each has its own wall time)."""
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    runs = []
    with Progress(*columns, disable=not settings.show_progress) as progress, \
            ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for task, items in suite.items.items():
            kind = types[task]
            answers = await asyncio.gather(*(
                _answer_all(client, endpoint, items, kind.max_tokens, settings, progress)
                for endpoint in (standard, candidate)))
            (std_answers, std_timing), (cand_answers, cand_timing) = answers
            bar = progress.add_task(f"{task}: verify", total=len(items))
            results = await asyncio.gather(*(
                _verify_pair(pool, kind, item, s, c, functools.partial(progress.advance, bar))
                for item, s, c in zip(items, std_answers, cand_answers, strict=True)))
            runs.append(TaskRun(task, tuple(results), std_timing, cand_timing))
    return runs


async def _answer_all(client: httpx.AsyncClient, endpoint: Endpoint, items: tuple[EvalItem, ...], max_tokens: int,
                      settings: RunSettings, progress: Progress) -> tuple[list[Completion], EndpointTiming]:
    bar = progress.add_task(f"{items[0].task}: {endpoint.role}", total=len(items))
    gate = asyncio.Semaphore(settings.concurrency)

    async def one(item: EvalItem) -> Completion:
        async with gate:
            done = await complete(client, endpoint, item, max_tokens, settings.timeout_s)
        progress.advance(bar)
        return done

    started = time.perf_counter()
    completions = await asyncio.gather(*(one(item) for item in items))
    wall = time.perf_counter() - started
    timing = EndpointTiming(sum(c.completion_tokens for c in completions), wall,
                            sum(c.error is not None for c in completions))
    return list(completions), timing


async def _verify_pair(pool: ThreadPoolExecutor, kind: TaskType, item: EvalItem, standard: Completion,
                       candidate: Completion, advance: Callable[[], object]) -> ItemResult:
    loop = asyncio.get_running_loop()
    if item.task == "chat":
        # Open questions: the standard's answer is the reference both are scored against.
        item = with_reference(item, message_text(standard.response) if standard.response is not None else "")
    std_verdict, cand_verdict = await asyncio.gather(
        loop.run_in_executor(pool, verify, kind, item, standard),
        loop.run_in_executor(pool, verify, kind, item, candidate))
    advance()
    return ItemResult(item, Answered(standard, std_verdict), Answered(candidate, cand_verdict))


def verify(kind: TaskType, item: EvalItem, completion: Completion) -> Verdict:
    """The task's verdict; a request that failed is wrong, with its error as the detail."""
    if completion.response is None:
        return Verdict(item.id, item.task, False, 0.0, "error", completion.error or "no answer")
    return kind.verify(item, completion.response)

