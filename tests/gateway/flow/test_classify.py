from pathlib import Path

import pytest
import yaml

from gateway.config import load_config, parse_config
from gateway.detect import TaskDetector
from gateway.endpoints import ChatBody, CompletionBody
from gateway.errors import InvalidRequest, ModelNotFound
from gateway.flow.classify import DetectionMemo, classify, has_code, resolve_model
from gateway.flow.plan import Inbound

DEMO_PATH = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
CONFIG = load_config(DEMO_PATH)


def _with_detector(section: dict) -> object:
    raw = yaml.safe_load(DEMO_PATH.read_text())
    raw["routing"]["task_detector"] = section
    return parse_config(yaml.safe_dump(raw))


RULES_ONLY = _with_detector({"enabled": False})


def chat(content="hello", **fields):
    return ChatBody.model_validate({"model": "smollm2", "messages": [{"role": "user", "content": content}], **fields})


def profile(body, headers=None, tokens=10, config=CONFIG, key_tasks=()):
    return classify(Inbound(body, headers or {}), resolve_model(config, body.model), config.policy, tokens,
                    key_tasks=key_tasks)


@pytest.mark.parametrize(
    ("name", "variant"),
    [("smollm2", None), ("smollm2:fast", "fast"), ("smollm2:standard", "standard"), ("fast", "fast")],
)
def test_model_names_resolve_to_pins(name, variant):
    assert resolve_model(CONFIG, name).pinned_variant == variant


def test_unknown_model_is_404():
    with pytest.raises(ModelNotFound) as info:
        resolve_model(CONFIG, "gpt-9")
    assert info.value.status == 404 and info.value.param == "model"


TASK_CASES = [
    (chat(), {}, 10, "chat", "default"),
    (chat(tools=[{"type": "function", "function": {"name": "f"}}]), {}, 10, "agent", "rule:has_tools"),
    (chat("Fix this:\n```python\nprint(1)\n```"), {}, 10, "coding", "rule:has_code"),
    (chat("def add(a, b):\n    return a + b\nmake it typed"), {}, 10, "coding", "rule:has_code"),
    (chat("summarise"), {}, 1600, "long-context", "rule:input_tokens_over_1500"),
    (chat(), {"x-duet-task": "reasoning"}, 10, "reasoning", "header"),
]


@pytest.mark.parametrize(("body", "headers", "tokens", "task", "source"), TASK_CASES)
def test_without_the_detector_task_from_header_then_rules_then_default(body, headers, tokens, task, source):
    p = profile(body, headers, tokens, config=RULES_ONLY)
    assert (p.task, p.task_source) == (task, source)
    assert p.task_confidence is None and p.plausible_tasks == frozenset()


GSM = ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
       "How many clips did Natalia sell altogether in April and May?")
DETECTOR_CASES = [
    (chat(GSM), {}, 40, "reasoning", "detector"),
    (chat("Write a Python function to merge two sorted lists."), {}, 15, "coding", "detector"),
    (chat("Extract the fields as JSON (name, date, amount) from the text below.\n\nINVOICE #4411\nBill to: "
          "Summit Foods, Lyon\nDate: 2025-03-02\nTotal due: $1200.00"), {}, 60, "extraction", "detector"),
    (chat(tools=[{"type": "function", "function": {"name": "f"}}]), {}, 10, "agent", "rule:has_tools"),
    (chat("summarise"), {}, 1600, "long-context", "rule:input_tokens_over_1500"),
    (chat(GSM), {"x-duet-task": "chat"}, 40, "chat", "header"),
]


@pytest.mark.parametrize(("body", "headers", "tokens", "task", "source"), DETECTOR_CASES)
def test_task_from_header_then_shape_rules_then_detector(body, headers, tokens, task, source):
    p = profile(body, headers, tokens)
    assert (p.task, p.task_source) == (task, source)
    assert (p.task_confidence is None) == (source != "detector")


def test_a_header_always_overrides_the_detector():
    for text in (GSM, "Write a Python function to merge two sorted lists.", "hello"):
        for task in CONFIG.policy.tasks:
            p = profile(chat(text), {"x-duet-task": task})
            assert (p.task, p.task_source, p.plausible_tasks) == (task, "header", frozenset())


def test_an_unsure_detection_abstains_and_names_every_task_its_size_allows():
    raw = yaml.safe_load(DEMO_PATH.read_text())
    raw["routing"]["task_detector"] = {"threshold": 1.0}  # nothing is that sure: always abstain
    config = parse_config(yaml.safe_dump(raw))
    p = profile(chat(GSM), tokens=40, config=config)
    assert p.task_source == "abstained" and p.task == "reasoning"
    every = frozenset(config.policy.tasks) & frozenset(config.policy.detection.detector.tasks)
    assert p.tasks_to_allow == every - {"long-context"}  # 40 tokens: under the long-context rule's 1,500


def test_unknown_task_header_is_400():
    with pytest.raises(InvalidRequest, match="Unknown task type"):
        profile(chat(), {"x-duet-task": "poetry"})


def test_budgets_from_headers_override_task_defaults():
    p = profile(chat(), {"x-duet-latency-budget-ms": "300", "x-slo-ttft-ms": "50", "x-slo-tpot-ms": "20"})
    assert (p.budget.latency_ms, p.budget.ttft_ms, p.budget.tpot_ms) == (300, 50, 20)
    default = profile(chat())
    assert (default.budget.latency_ms, default.budget.ttft_ms) == (30000, 2000)


@pytest.mark.parametrize("value", ["-5", "0", "abc", "inf", "nan"])
def test_bad_budget_header_is_400_naming_it(value):
    with pytest.raises(InvalidRequest) as info:
        profile(chat(), {"x-duet-latency-budget-ms": value})
    assert info.value.param == "x-duet-latency-budget-ms"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({}, 128), ({"max_tokens": 16}, 16), ({"max_tokens": 1000}, 128), ({"max_tokens": 1000, "ignore_eos": True}, 1000),
     ({"max_tokens": 1000, "min_tokens": 700}, 700), ({"max_completion_tokens": 64}, 64)],
)
def test_expected_output_tokens(fields, expected):
    assert profile(chat(**fields)).expected_output_tokens == expected


class Learned:
    def expected(self, model, task):
        return {("smollm2", "chat"): 300}.get((model, task))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({}, 300), ({"max_tokens": 1000}, 300), ({"max_tokens": 200}, 200), ({"max_tokens": 1000, "ignore_eos": True}, 1000),
     ({"max_tokens": 1000, "min_tokens": 700}, 700)],
)
def test_a_learned_length_replaces_the_typical_one_within_max_tokens(fields, expected):
    body, target = chat(**fields), resolve_model(CONFIG, "smollm2")
    assert classify(Inbound(body, {}), target, CONFIG.policy, 10, Learned()).expected_output_tokens == expected
    # Tasks with no estimate yet keep their configured typical length.
    coding = classify(Inbound(body, {"x-duet-task": "coding"}), resolve_model(CONFIG, "smollm2"), CONFIG.policy, 10, Learned())
    assert coding.expected_output_tokens == classify(Inbound(body, {"x-duet-task": "coding"}), resolve_model(CONFIG, "smollm2"),
                                                     CONFIG.policy, 10).expected_output_tokens


def test_completions_prompt_with_code():
    """A completion's prompt is read by the detector as a user turn: the words detector is sure this
    is code; the blend detector (the default) keeps coding plausible, whether it abstains (as when
    trained on 27 sources) or answers (on 35)."""
    body = CompletionBody.model_validate({"model": "smollm2", "prompt": "import os\nos.listdir()"})
    assert profile(body, config=_with_detector({"kind": "words"})).task == "coding"
    blend = profile(body)
    assert blend.task_source in ("abstained", "detector") and "coding" in blend.tasks_to_allow


def test_has_code_scans_head_and_tail_of_long_texts():
    filler = "word " * 10_000
    assert has_code([filler + "\n```js\nx()\n```"])
    assert not has_code([filler])


class CountingDetector(TaskDetector):
    """The shipped model, counting its calls."""

    def __init__(self) -> None:
        shipped = TaskDetector.builtin()
        super().__init__(shipped.tasks, shipped._vocabulary, shipped._weights, shipped._bias, shipped.meta)
        self.calls = 0

    def detect_messages(self, messages):
        self.calls += 1
        return super().detect_messages(messages)


def test_a_memo_detects_once_per_detector_and_answers_the_same():
    first, other, body, memo = CountingDetector(), CountingDetector(), chat("Solve for x: 3x + 4 = 19."), DetectionMemo()
    answers = [memo.detect(first, body, body.prompt_view()) for _ in range(3)]
    assert first.calls == 1 and answers[0] == answers[2] == first.detect_messages(body.messages)
    memo.detect(other, body, body.prompt_view())  # another model (a reload): detected again
    assert other.calls == 1


def test_a_prompt_under_the_long_context_rule_is_never_long_context_by_detection():
    """The demo config defines long-context as a prompt over 1,500 tokens: a shorter one may not
    be made long-context, or keep it plausible, by the detector, even when it abstains."""
    raw = yaml.safe_load(DEMO_PATH.read_text())
    raw["routing"]["task_detector"] = {"threshold": 1.0}  # always abstain: every task it may be
    abstaining = parse_config(yaml.safe_dump(raw))
    p = profile(chat("summarise the attached report"), tokens=40, config=abstaining)
    assert p.task_source == "abstained" and "long-context" not in p.tasks_to_allow
    assert p.tasks_to_allow == frozenset(abstaining.policy.tasks) - {"long-context"}
    for text in (GSM, "hello", "Write a Python function to merge two sorted lists."):
        sure = profile(chat(text), tokens=40)
        assert sure.task != "long-context" and "long-context" not in sure.tasks_to_allow
    assert profile(chat("summarise"), tokens=1600).task == "long-context"  # over the size: the rule's


def test_a_key_naming_one_task_names_it_for_requests_that_name_none():
    """The operator's word for the key's application replaces the detector's guess (GSM8K's
    puzzle reads as reasoning), with nothing else plausible; shapes and the header still win."""
    for config in (CONFIG, RULES_ONLY):
        p = profile(chat(GSM), tokens=40, config=config, key_tasks=("extraction",))
        assert (p.task, p.task_source, p.tasks_to_allow) == ("extraction", "key", frozenset({"extraction"}))
    assert profile(chat(GSM), {"x-duet-task": "chat"}, 40, key_tasks=("extraction",)).task_source == "header"
    tools = chat(tools=[{"type": "function", "function": {"name": "f"}}])
    assert profile(tools, key_tasks=("coding",)).task == "agent"
    assert profile(chat("summarise"), tokens=1600, key_tasks=("coding",)).task == "long-context"


def test_a_key_naming_several_tasks_leaves_the_detector_to_choose_among_them():
    p = profile(chat(GSM), tokens=40, key_tasks=("chat", "coding"))
    assert p.task in {"chat", "coding"} and p.task_source in {"detector", "abstained"}
    assert p.tasks_to_allow <= {"chat", "coding"}
    raw = yaml.safe_load(DEMO_PATH.read_text())
    raw["routing"]["task_detector"] = {"threshold": 1.0}  # always abstain: every task it may be
    abstaining = parse_config(yaml.safe_dump(raw))
    unsure = profile(chat(GSM), tokens=40, config=abstaining, key_tasks=("chat", "coding"))
    assert unsure.task_source == "abstained" and unsure.tasks_to_allow == frozenset({"chat", "coding"})


def test_a_key_task_the_config_no_longer_defines_is_no_word_at_all():
    p, unkeyed = profile(chat(GSM), tokens=40, key_tasks=("poetry",)), profile(chat(GSM), tokens=40)
    assert (p.task, p.task_source, p.tasks_to_allow) == (unkeyed.task, unkeyed.task_source, unkeyed.tasks_to_allow)
    assert profile(chat(GSM), tokens=40, key_tasks=("poetry", "coding")).task_source == "key"
    # A key naming only a size-defined task: a short prompt is not one by the config's definition.
    short = profile(chat("hello"), tokens=10, key_tasks=("long-context",))
    assert short.task != "long-context" and short.task_source != "key"
