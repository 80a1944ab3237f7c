"""coding: write a small function from a generated spec; the answer's code runs against
generated unit tests in the sandbox (``quantize.evals.checking.sandbox``)."""

from __future__ import annotations

from typing import Any

from quantize.evals.checking.answers import code_block, message_text
from quantize.evals.checking.sandbox import Sandbox
from quantize.evals.items import EvalItem, ModelAnswer, Verdict, verdict
from quantize.evals.task import chat_request, item_rng
from quantize.evals.tasks.coding_specs import SPECS, FunctionSpec

SHOWN_EXAMPLES = 2
HIDDEN_TESTS = 4


class CodingTask:
    name = "coding"
    max_tokens = 256

    def __init__(self, sandbox: Sandbox | None = None) -> None:
        self._sandbox = sandbox  # built on first use: detecting isolation runs processes

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox

    def generate(self, seed: int, n: int) -> list[EvalItem]:
        return [self._item(seed, i) for i in range(n)]

    def _item(self, seed: int, index: int) -> EvalItem:
        rng = item_rng(self.name, seed, index)
        spec = rng.choice(SPECS)
        name = rng.choice(spec.names)
        constants = spec.constants(rng)
        source = spec.source.format(name=name, **constants)
        function = _compile(source, name)
        calls = _distinct_calls(spec, rng, SHOWN_EXAMPLES + HIDDEN_TESTS)
        cases = [(f"{name}({', '.join(map(repr, args))})", function(*args)) for args in calls]
        examples = "\n".join(f"{call} == {result!r}" for call, result in cases[:SHOWN_EXAMPLES])
        prompt = (f"Write a Python function `{spec.signature.format(name=name)}` that "
                  f"{spec.description.format(**constants)}.\nExamples:\n{examples}\n"
                  "Answer with the complete function in one ```python code block.")
        tests = [f"assert {call} == {result!r}, {call!r}" for call, result in cases]
        return EvalItem(f"coding-{seed}-{index}", self.name, chat_request(prompt),
                        {"function": name, "tests": tests, "reference": source})

    def verify(self, item: EvalItem, response: dict[str, Any]) -> Verdict:
        code = code_block(message_text(response))
        if not code.strip():
            return verdict(item, False, "no-code", "no code in the answer")
        result = self.sandbox.run(code, list(item.expected["tests"]))
        answer = f"{result.status}:{result.passed}/{result.total}"
        return verdict(item, result.ok, answer, result.detail, score=1.0 if result.ok else 0.0)

    def reference_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(f"```python\n{item.expected['reference']}```")

    def wrong_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(f"```python\ndef {item.expected['function']}(*args):\n    return None\n```")


def _compile(source: str, name: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # our own template, not model output
    return namespace[name]


def _distinct_calls(spec: FunctionSpec, rng: Any, count: int) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    for _ in range(count * 10):
        args = spec.arguments(rng)
        if args not in calls:
            calls.append(args)
        if len(calls) == count:
            break
    return calls
