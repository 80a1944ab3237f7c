"""The detector's guess and its abstention, through classify and the router: a reasoning
prompt the detector is sure of never reaches a variant whose parity refuses reasoning, and an
unsure one goes only where every plausible task is allowed (deploy/render/h100-70b.yaml's
split: fast allowed chat, coding, agent, extraction)."""

from pathlib import Path

import pytest
import yaml

from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.domain import Health, ReplicaState
from gateway.endpoints import ChatBody
from gateway.flow import Inbound, View, plan_request

DEMO = yaml.safe_load((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())
GSM = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did "
    "Natalia sell altogether in April and May?",
    "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?",
    "A train leaves at 3:15 going 80 km/h; another leaves 2 hours later at 100 km/h. When does it catch up?",
]


def config(detector: dict | None = None):
    raw = yaml.safe_load(yaml.safe_dump(DEMO))
    raw["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["chat", "coding", "agent", "extraction"]
    if detector is not None:
        raw["routing"]["task_detector"] = detector
    return parse_config(yaml.safe_dump(raw))


def plan(cfg, text: str, headers: dict | None = None):
    body = ChatBody.model_validate({"model": "smollm2", "messages": [{"role": "user", "content": text}]})
    view = View({r.id: ReplicaState(r.id, health=Health.UP) for r in cfg.replicas})
    return plan_request(ActiveConfig.of(cfg), Inbound(body, headers or {}), view)


@pytest.mark.parametrize("text", GSM)
def test_a_confident_reasoning_prompt_never_reaches_a_variant_refusing_reasoning(text):
    cfg = config()
    p = plan(cfg, text)
    assert (p.profile.task, p.profile.task_source) == ("reasoning", "detector")
    variants = cfg.models["smollm2"].variants
    assert p.decision.ranked and all(variants[r.variant].allows("reasoning") for r in p.decision.ranked)


def test_an_abstained_request_goes_only_where_every_plausible_task_is_allowed():
    cfg = config({"threshold": 1.0})  # always abstain
    p = plan(cfg, "Tell me a joke about cats.")
    assert p.profile.task_source == "abstained" and "reasoning" in p.profile.tasks_to_allow
    variants = cfg.models["smollm2"].variants
    assert p.decision.ranked and all(variants[r.variant].allows_all(p.profile.tasks_to_allow) for r in p.decision.ranked)


def test_a_confident_chat_prompt_may_go_fast():
    p = plan(config(), "Write a funny poem about houseplants.")
    assert p.profile.task == "chat" and p.profile.task_source == "detector"
    assert "fast" in {r.variant for r in p.decision.ranked}


@pytest.mark.parametrize("text", GSM)
def test_a_header_overrides_the_detector_in_routing(text):
    p = plan(config(), text, {"x-duet-task": "chat"})
    assert (p.profile.task, p.profile.task_source) == ("chat", "header")
