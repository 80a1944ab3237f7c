"""Every task type of the suite: seeded generation (same seed, same items, in any process), the
verifier accepts the generated expected answer and rejects a wrong one; the suite's inputs.
Each task's own cases are in tasks/."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from quantize.errors import SuiteError
from quantize.evals.checking.sandbox import Limits, Sandbox
from quantize.evals.suite import TASK_NAMES, build_suite, task_types
from quantize.evals.tasks.chat import with_reference
from tests.quantize.evals.completions import text

SAMPLES = {"coding": 12}  # coding verification runs a process per item
TYPES = task_types(Sandbox(Limits(wall_s=5.0, cpu_s=2)))


@pytest.mark.parametrize("task", TASK_NAMES)
def test_same_seed_same_items_and_prefixes_agree(task: str) -> None:
    kind = TYPES[task]
    assert kind.generate(5, 40) == kind.generate(5, 40)
    assert kind.generate(5, 40)[:10] == kind.generate(5, 10)
    assert kind.generate(5, 20) != kind.generate(6, 20)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_hundreds_of_distinct_items(task: str) -> None:
    items = TYPES[task].generate(0, 300)
    assert len({item.id for item in items}) == 300
    assert len({json.dumps(item.request, sort_keys=True) for item in items}) >= 100


@pytest.mark.parametrize("task", TASK_NAMES)
def test_verifier_accepts_the_expected_answer_and_rejects_a_wrong_one(task: str) -> None:
    kind = TYPES[task]
    for item in kind.generate(1, SAMPLES.get(task, 100)):
        assert kind.verify(item, kind.reference_answer(item).as_completion()).correct, item.id
        assert not kind.verify(item, kind.wrong_answer(item).as_completion()).correct, item.id


@pytest.mark.parametrize("task", TASK_NAMES)
def test_an_empty_answer_is_wrong(task: str) -> None:
    kind = TYPES[task]
    item = kind.generate(2, 1)[0]
    if task == "chat":
        item = with_reference(item, "a real reference answer")
    assert not kind.verify(item, text("")).correct
    assert not kind.verify(item, {"choices": []}).correct


def test_the_suite_is_the_same_under_another_hash_seed() -> None:
    """Generation must not depend on set or dict order of strings (PYTHONHASHSEED)."""
    script = "from quantize.evals.suite import build_suite; print(build_suite(seed=3, samples=30).sha256())"
    hashes = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": str(h), "PATH": "/usr/bin:/bin"}).stdout for h in (1, 2)}
    assert len(hashes) == 1 and hashes == {build_suite(seed=3, samples=30).sha256() + "\n"}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"samples": 0}, "samples must be"),
    ({"samples": 10**6}, "samples must be"),
    ({"tasks": ["coding", "poetry"]}, "unknown task type"),
])
def test_bad_suite_input_is_refused(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(SuiteError, match=message):
        build_suite(**kwargs)


def test_unknown_suite_is_refused() -> None:
    with pytest.raises(SuiteError, match="unknown suite"):
        build_suite("huge")
