"""The detector's guess and its abstention, through classify and the router: a reasoning
prompt the detector is sure of never reaches a variant whose parity refuses reasoning, and an
unsure one goes only where every plausible task is allowed (deploy/render/h100-70b.yaml's
split: fast allowed chat, coding, agent, extraction)."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from gateway.config import load_config, parse_config
from gateway.config.active import ActiveConfig
from gateway.detect import TaskDetector
from gateway.detect.training.train import TASKS, document
from gateway.domain import Health, ReplicaState
from gateway.endpoints import ChatBody
from gateway.errors import ConfigError
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


@pytest.mark.parametrize(("kind", "text"), [("words", "Write a funny poem about houseplants."),
                                           ("blend", "Say hello in five words.")])
def test_a_confident_chat_prompt_may_go_fast(kind, text):
    p = plan(config({"kind": kind}), text)
    assert p.profile.task == "chat" and p.profile.task_source == "detector"
    assert "fast" in {r.variant for r in p.decision.ranked}


def test_the_blend_detector_keeps_reasoning_where_the_words_one_is_confidently_wrong():
    """A short puzzle from no source either trained on (one of those the issue's new user tried):
    the words detector calls it chat with confidence (fast would take it); the blend detector,
    the default, keeps reasoning plausible (it abstained while trained on 27 sources; on 35 it calls
    it reasoning), so it goes to standard only."""
    puzzle = "You are in a race and you overtake the second person. What position are you in now?"
    words = plan(config({"kind": "words"}), puzzle)
    assert words.profile.task_source == "detector" and words.profile.task != "reasoning"
    blend = plan(config(), puzzle)
    assert blend.profile.task_source in ("abstained", "detector") and "reasoning" in blend.profile.tasks_to_allow
    assert {r.variant for r in blend.decision.ranked} == {"standard"}


@pytest.mark.parametrize("text", GSM)
def test_a_header_overrides_the_detector_in_routing(text):
    p = plan(config(), text, {"x-duet-task": "chat"})
    assert (p.profile.task, p.profile.task_source) == ("chat", "header")


def test_a_teams_model_file_named_in_the_config_replaces_the_shipped_one(tmp_path):
    """``routing.task_detector.model``: the file ``duet detect train`` writes. A model that knows
    one feature (the word "zebra" means reasoning) decides what the shipped one would call chat."""
    weights = np.zeros((1, len(TASKS)))
    weights[0, TASKS.index("reasoning")] = 8.0
    model = document(["u:zebra"], weights, np.zeros(len(TASKS)), {"threshold": 0.6, "floor": 0.05})
    (tmp_path / "team.json").write_text(json.dumps(model))
    raw = yaml.safe_load(yaml.safe_dump(DEMO))
    raw["routing"]["task_detector"] = {"kind": "words", "model": "team.json"}
    (tmp_path / "duet.yaml").write_text(yaml.safe_dump(raw))
    cfg = load_config(tmp_path / "duet.yaml")
    assert cfg.policy.detection.detector is not TaskDetector.builtin() and cfg.policy.detection.threshold == 0.6
    assert plan(cfg, "Tell me about the zebra.").profile.task == "reasoning"


@pytest.mark.parametrize(("kind", "content", "problem"), [
    ("words", None, "cannot read"), ("words", "{", "not a model file"), ("blend", "[1]", "not a model file"),
    ("words", '{"tasks": ["chat"]}', "not a words task detector model"),
    ("blend", '{"tasks": ["chat"]}', "not a blend model")])
def test_a_bad_model_file_is_a_path_named_config_error(tmp_path, kind, content, problem):
    if content is not None:
        (tmp_path / "team.json").write_text(content)
    raw = yaml.safe_load(yaml.safe_dump(DEMO))
    raw["routing"]["task_detector"] = {"kind": kind, "model": "team.json"}
    (tmp_path / "duet.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=problem) as caught:
        load_config(tmp_path / "duet.yaml")
    assert caught.value.path == "routing.task_detector.model"
