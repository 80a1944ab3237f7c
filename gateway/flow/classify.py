"""Building a RequestProfile: explicit signals first (pinned model name, ``x-duet-*`` and llm-d
``x-slo-*`` headers), then the policy's task rules and the task detector, then the task's
defaults.

The task: the ``x-duet-task`` header; else tools present and a prompt over the long-context rule's
size (rules ``has_tools``, ``input_tokens_over``); else the task the request's API key names
(its operator's word for the application behind it), or the detector among the several it names;
else the detector, which abstains when unsure (every task plausible); with the detector off, the
rules in order and the default task."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.config.policy import DetectorSettings, Policy, Signal, TaskRule
from gateway.config.types import DuetConfig, ModelSpec
from gateway.detect import Detection, Detector
from gateway.domain import Budget, Priority, RequestProfile
from gateway.endpoints import ChatBody, PromptView, RequestBody
from gateway.errors import InvalidRequest, ModelNotFound
from gateway.state.lengths import NO_ESTIMATES, LengthEstimates

TASK_HEADER = "x-duet-task"
PRIORITY_HEADER = "x-duet-priority"
# header -> Budget field; llm-d's names are accepted beside Duet's.
BUDGET_HEADERS = (
    ("x-duet-latency-budget-ms", "latency_ms"),
    ("x-duet-ttft-budget-ms", "ttft_ms"),
    ("x-slo-ttft-ms", "ttft_ms"),
    ("x-slo-tpot-ms", "tpot_ms"),
)
_CODE = re.compile(
    r"```|^\s*(?:def |class |import |from \S+ import |function |#include|public |const |let |fn |package )",
    re.MULTILINE,
)
# Code markers sit near the top or bottom of a prompt; scanning everything would cost O(prompt).
_CODE_SCAN_CHARS = 16_384


@dataclass(frozen=True, slots=True)
class Target:
    """The logical model a request names, and the variant it pins (if it names one)."""

    model: ModelSpec
    pinned_variant: str | None


def resolve_model(config: DuetConfig, name: str) -> Target:
    model = config.models.get(name)
    if model is not None:
        return Target(model, None)
    logical = name.split(":", 1)[0]
    model = config.models.get(logical)
    if model is not None and name in model.pins:
        return Target(model, model.pins[name])
    for model in config.models.values():  # a bare variant name is a pin too
        if name in model.variants:
            return Target(model, name)
    raise ModelNotFound(f"The model `{name}` does not exist.", param="model")


def has_code(texts: Iterable[str]) -> bool:
    for text in texts:
        head, tail = text[:_CODE_SCAN_CHARS], text[-_CODE_SCAN_CHARS:]
        if _CODE.search(head) or (len(text) > _CODE_SCAN_CHARS and _CODE.search(tail)):
            return True
    return False


@dataclass(frozen=True, slots=True)
class TaskGuess:
    """A request's task and where it came from: ``header``, ``rule:<signal>``, ``detector``,
    ``key``, ``abstained`` or ``default``; the detector's confidence and the other tasks it may be."""

    task: str
    source: str
    confidence: float | None = None
    plausible: frozenset[str] = frozenset()


class DetectionMemo:
    """One request's detection, kept across its plans: a request waiting for a slot is planned
    again at every wake-up (``Director.admit``), and an escalation plans it once more, with the
    same messages; the detector (blend, the default: ~50-250 µs a call compiled, ~0.3-1.4 ms not;
    docs/results/task-detector-latency.json) runs once. Run again only for another detector
    (a reload can change the threshold and floor, applied after, but shares the shipped model)."""

    __slots__ = ("_detector", "_detection")

    def __init__(self) -> None:
        self._detector: Detector | None = None
        self._detection: Detection | None = None

    def detect(self, detector: Detector, body: RequestBody, prompt: PromptView) -> Detection:
        if self._detection is None or self._detector is not detector:
            self._detection, self._detector = _detect(detector, body, prompt), detector
        return self._detection


def _detect(detector: Detector, body: RequestBody, prompt: PromptView) -> Detection:
    if isinstance(body, ChatBody):
        return detector.detect_messages(body.messages)
    return detector.detect_prompt("\n".join(prompt.texts))


class Arrival(Protocol):
    """What classify reads of a request as it arrived (``gateway.flow.plan.Inbound``): its body,
    lower-cased headers, where it keeps its detection between plans, and its prompt's texts."""

    @property
    def body(self) -> RequestBody: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def detection(self) -> DetectionMemo: ...

    @property
    def prompt(self) -> PromptView: ...


def find_task(policy: Policy, arrival: Arrival, *, tools: bool, input_tokens: int,
              key_tasks: Collection[str] = ()) -> TaskGuess:
    """The task of a request that names none (see the module docstring for the order), reusing
    the request's earlier detection if it was planned before. ``key_tasks``: the tasks its API
    key names (empty: any). Shape rules come first: a key's word is about its application, a
    shape is a fact about this request (a coding tool's 50k-token file is still a long document)."""
    stated = [t for t in key_tasks if t in policy.tasks]  # a task since removed from the config is no word
    detection = policy.detection
    if detection is None:
        if len(stated) == 1:
            return TaskGuess(stated[0], "key")
        task, source = infer_task(policy.rules, policy.default_task, tools=tools, texts=arrival.prompt.texts,
                                  input_tokens=input_tokens)
        return TaskGuess(task, source)
    task, source = infer_task(policy.shape_rules, "", tools=tools, texts=(), input_tokens=input_tokens)
    if task:
        return TaskGuess(task, source)
    # A key naming only size-defined tasks (``Policy.sized_tasks``) says nothing of a prompt under their size.
    keyed = [t for t in stated if t not in policy.sized_tasks]
    if len(keyed) == 1:
        return TaskGuess(keyed[0], "key")
    return detect_task(detection, arrival, frozenset(keyed) if keyed else policy.detectable_tasks)


def detect_task(settings: DetectorSettings, arrival: Arrival, tasks: Collection[str]) -> TaskGuess:
    """The detector's answer over the config's tasks; ``abstained`` when below the threshold."""
    found = arrival.detection.detect(settings.detector, arrival.body, arrival.prompt).among(tasks)
    plausible = found.plausible(settings.threshold, settings.floor)
    source = "abstained" if found.confidence < settings.threshold else "detector"
    return TaskGuess(found.task, source, round(found.confidence, 4), plausible if len(plausible) > 1 else frozenset())


def infer_task(rules: tuple[TaskRule, ...], default: str, *, tools: bool, texts: Sequence[str],
               input_tokens: int) -> tuple[str, str]:
    """First matching rule's task and ``rule:<signal>``; else the default task and ``default``."""
    code: bool | None = None
    for rule in rules:
        if rule.signal is Signal.HAS_TOOLS and tools:
            return rule.task, "rule:has_tools"
        if rule.signal is Signal.HAS_CODE:
            code = has_code(texts) if code is None else code
            if code:
                return rule.task, "rule:has_code"
        if rule.signal is Signal.INPUT_TOKENS_OVER and input_tokens > rule.threshold:
            return rule.task, f"rule:input_tokens_over_{rule.threshold}"
    return default, "default"


def _header_number(headers: Mapping[str, str], name: str) -> float | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0 or number == float("inf"):
        raise InvalidRequest(f"Header '{name}' must be a positive number of milliseconds, got '{value}'.", param=name)
    return number


def classify(
    arrival: Arrival,
    target: Target,
    policy: Policy,
    input_tokens: int,
    lengths: LengthEstimates = NO_ESTIMATES,
    key_tasks: Collection[str] = (),
) -> RequestProfile:
    """``arrival.headers`` must have lower-case names. ``lengths``: the output lengths learned from
    finished requests, which replace the task's configured typical length once known. The
    detector runs at a request's first plan only (``arrival.detection``). ``key_tasks``: the
    tasks the request's API key names (``ApiKey.tasks``); the header still overrides them."""
    body, headers = arrival.body, arrival.headers
    tools = bool(getattr(body, "tools", None))
    explicit = headers.get(TASK_HEADER)
    if explicit is not None:
        if explicit not in policy.tasks:
            known = ", ".join(sorted(policy.tasks))
            raise InvalidRequest(f"Unknown task type '{explicit}' in {TASK_HEADER}; known: {known}.", param=TASK_HEADER)
        guess = TaskGuess(explicit, "header")
    else:
        guess = find_task(policy, arrival, tools=tools, input_tokens=input_tokens, key_tasks=key_tasks)
    task = guess.task
    defaults = policy.tasks[task]
    budgets = {"latency_ms": defaults.latency_ms, "ttft_ms": defaults.ttft_ms, "tpot_ms": defaults.tpot_ms}
    for header, field in BUDGET_HEADERS:
        value = _header_number(headers, header)
        if value is not None:
            budgets[field] = value
    max_output = body.output_limit()
    typical = lengths.expected(target.model.name, task) or defaults.expected_output_tokens
    return RequestProfile(
        model=target.model.name,
        task=task,
        task_source=guess.source,
        input_tokens=input_tokens,
        max_output_tokens=max_output,
        expected_output_tokens=_expected_output(body, max_output, typical),
        has_tools=tools,
        stream=bool(body.stream),
        pinned_variant=target.pinned_variant,
        budget=Budget(**budgets),
        priority=_priority(headers, defaults.priority),
        task_confidence=guess.confidence,
        plausible_tasks=guess.plausible,
    )


def _expected_output(body: RequestBody, max_output: int | None, typical: int) -> int:
    """A forced length (ignore_eos, or min_tokens) is what will be generated; otherwise the task's
    typical length (learned, or configured), capped by max_tokens."""
    if body.ignore_eos and max_output:
        return max_output
    planned = typical if max_output is None else min(max_output, typical)
    return max(planned, body.min_tokens or 0, 1)


def _priority(headers: Mapping[str, str], default: Priority) -> Priority:
    value = headers.get(PRIORITY_HEADER)
    if value is None:
        return default
    try:
        return Priority(value)
    except ValueError:
        allowed = [p.value for p in Priority]
        raise InvalidRequest(f"Header '{PRIORITY_HEADER}' must be one of {allowed}.", param=PRIORITY_HEADER) from None
