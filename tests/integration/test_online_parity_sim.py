"""Online parity end to end on two scripted simulators: the candidate answers chat like the
standard for the first N requests and wrongly after. Every fast-served chat request is
shadow-checked (share 1): the fast answer its client received is scored against the standard's,
run as shadow work (each request reaches the fast replica once, the standard once more); the
sequential test revokes chat on fast within the number of pairs its design predicts (computed
here from its parameters), the config file gets the verdict with its evidence, the running
gateway reloads it and live chat moves to standard, while every live request meets its budget."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.cli import main as duet
from quantize.evals.items import EvalItem
from quantize.evals.tasks.chat import ChatTask

from .cluster import cluster, wait_until

CLEAN = 12  # requests the candidate answers right before it starts failing chat
TOLERANCE, CONFIDENCE, BET = 0.05, 0.95, 0.5
FRESH = itertools.count()
BUDGET = {"x-duet-latency-budget-ms": "5000", "x-duet-task": "chat"}


def predicted_pairs(clean: int) -> int:
    """The betting test's wealth against parity after ``clean`` pairs without a loss, then one
    loss per pair, reaches 1/alpha after this many losing pairs: each clean pair multiplies it by
    1 - lam*T, each loss by 1 + lam*(1 - T), lam = bet / (1 + T)."""
    lam = BET / (1 + TOLERANCE)
    needed = math.log(1 / (1 - CONFIDENCE)) - clean * math.log(1 - lam * TOLERANCE)
    return math.ceil(needed / math.log(1 + lam * (1 - TOLERANCE)))


def scripts(tmp: Path, items: list[EvalItem]) -> dict[str, Path]:
    task = ChatTask()
    paths = {}
    for variant, wrong_from in (("standard", len(items)), ("fast", CLEAN)):
        rules = [{"equals": item.last_user_message(),
                  "text": (task.wrong_answer(item) if i >= wrong_from else task.reference_answer(item)).text}
                 for i, item in enumerate(items)]
        paths[variant] = tmp / f"{variant}.json"
        paths[variant].write_text(json.dumps({"rules": rules}))
    return paths


def online(raw: dict[str, Any]) -> None:
    fast = raw["models"]["smollm2"]["variants"]["fast"]
    fast["allowed_tasks"] = ["chat", "agent", "extraction"]
    fast["allowed_tasks_source"] = "an offline run that the live traffic will disprove"
    raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": 1.0}}, "tolerance": TOLERANCE,
                            "confidence": CONFIDENCE, "bet": BET, "max_in_flight": 1, "slack_wait_s": 10}


def ask(url: str, item: EvalItem) -> httpx.Response:
    body = {"model": "smollm2", **item.request, "temperature": 0, "max_tokens": 32}
    reply = httpx.post(f"{url}/v1/chat/completions", json=body, headers=BUDGET, timeout=30)
    assert reply.status_code == 200, reply.text
    return reply


def fresh() -> EvalItem:
    """A chat question never asked before: a new conversation (a session keeps its variant)."""
    n = next(FRESH)
    return EvalItem(f"fresh-{n}", "chat", {"messages": [{"role": "user", "content": f"Name a colour ({n})."}]}, None)


def pairs(status_file: Path) -> int:
    if not status_file.exists():
        return 0
    rows = json.loads(status_file.read_text())["table"]
    return sum(row["pairs"] for row in rows)


def metric(url: str, name: str, **labels: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def finished(base_url: str) -> float:
    """How many requests a simulated replica finished (its vLLM counter)."""
    text = httpx.get(f"{base_url}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:request_success_total{"))


def test_a_task_the_candidate_starts_failing_is_revoked_as_predicted(tmp_path: Path) -> None:
    predicted = predicted_pairs(CLEAN)
    items = ChatTask().generate(seed=5, n=CLEAN + predicted + 5)
    answers = scripts(tmp_path, items)
    profiles = {v: ("fast-test", "--answers", str(answers[v])) for v in ("standard", "fast")}
    with cluster(tmp_path, profiles, edit=online) as c:
        status_file = c.config_path.parent / "duet-parity-status.json"
        served = []
        for i, item in enumerate(items):
            served.append(ask(c.url, item).headers["x-duet-variant"])
            if served[-1] != "fast":
                break  # revoked: chat goes to standard now
            # One check at a time, in order: the pairs' sequence is the items' (clean, then failing).
            wait_until(lambda n=i + 1: pairs(status_file) == n, timeout_s=20, what=f"pair {i + 1}")
            row = json.loads(status_file.read_text())["table"][0]
            if row["conclusion"] == "loss":
                break
        row = json.loads(status_file.read_text())["table"][0]
        assert (row["variant"], row["task"], row["conclusion"]) == ("smollm2:fast", "chat", "loss")
        assert row["pairs"] == CLEAN + predicted, (row, predicted)  # exactly the design's count
        # The live fast answer was scored, not a second run of it: fast served each request once,
        # the standard ran each pair's shadow side (and any request live after the revocation).
        assert finished(c.sims["fast"].url) == served.count("fast")
        assert finished(c.sims["standard"].url) == CLEAN + predicted + served.count("standard")

        fast = yaml.safe_load(c.config_path.read_text())["models"]["smollm2"]["variants"]["fast"]
        assert fast["allowed_tasks"] == ["agent", "extraction"]
        source = fast["allowed_tasks_source"]
        assert source.startswith("duet parity online ")
        sha = re.search(r"sha256:([0-9a-f]{64})", source).group(1)
        evidence_files = list((c.config_path.parent / "parity-online").glob(f"smollm2-fast-chat-{sha[:12]}.json"))
        assert len(evidence_files) == 1
        evidence = json.loads(evidence_files[0].read_text())
        assert evidence["state"]["pairs"] == CLEAN + predicted and evidence["state"]["conclusion"] == "loss"
        assert all("texts" not in pair for pair in evidence["recent_pairs"])  # hashes, not text
        assert duet(["check", str(c.config_path)]) == 0

        # The running policy has it: live chat goes to standard, and the alert's series is up.
        wait_until(lambda: ask(c.url, fresh()).headers["x-duet-variant"] == "standard", timeout_s=10,
                   what="chat on standard after the revocation")
        assert metric(c.url, "duet_parity_revoked", variant="smollm2:fast", task="chat") == 1
        assert metric(c.url, "duet_shadow_checks_total", result="paired") == CLEAN + predicted
        # Shadow work never cost a live request its budget: every one met it.
        assert metric(c.url, "duet_slo_total", task="chat", result="missed") == 0
        assert metric(c.url, "duet_slo_total", task="chat", result="met") >= CLEAN + predicted


def shadow(raw: dict[str, Any]) -> None:
    """fast in shadow (no live traffic), chat mirrored to it; the test's parameters for opening."""
    fast = raw["models"]["smollm2"]["variants"]["fast"]
    fast["allowed_tasks"] = ["agent"]
    fast["rollout"] = {"stage": "shadow"}
    routing = raw["routing"]
    if not any(p["type"] == "rollout-stage" for p in routing["plugins"]):
        routing["plugins"].append({"type": "rollout-stage", "name": "rollout-stage"})
        for profile in routing["profiles"].values():
            profile["filters"].append("rollout-stage")
    raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": 1.0}}, "tolerance": 0.2, "bet": 0.9,
                            "max_in_flight": 1, "slack_wait_s": 10}


def test_a_shadow_variant_opens_a_task_once_parity_is_concluded(tmp_path: Path) -> None:
    lam = 0.9 / (1 - 0.2)  # the open side's bet: every pair agrees (loss 0), each multiplies by 1 + lam*T
    predicted = math.ceil(math.log(1 / (1 - CONFIDENCE)) / math.log(1 + lam * 0.2))
    items = ChatTask().generate(seed=6, n=predicted + 3)
    answers: dict[str, Path] = {}
    rules = [{"equals": i.last_user_message(), "text": ChatTask().reference_answer(i).text} for i in items]
    for variant in ("standard", "fast"):
        answers[variant] = tmp_path / f"{variant}.json"
        answers[variant].write_text(json.dumps({"rules": rules}))
    profiles = {v: ("fast-test", "--answers", str(answers[v])) for v in ("standard", "fast")}
    with cluster(tmp_path, profiles, edit=shadow) as c:
        status_file = c.config_path.parent / "duet-parity-status.json"
        for i, item in enumerate(items):
            variant = ask(c.url, item).headers["x-duet-variant"]
            if variant == "fast":
                break  # opened
            wait_until(lambda n=i + 1: pairs(status_file) == n, timeout_s=20, what=f"pair {i + 1}")
            if json.loads(status_file.read_text())["table"][0]["conclusion"] == "parity":
                break
        row = json.loads(status_file.read_text())["table"][0]
        assert (row["conclusion"], row["pairs"]) == ("parity", predicted)
        # The standard's live answers were kept; only the shadow variant ran them again.
        assert finished(c.sims["fast"].url) == predicted
        assert finished(c.sims["standard"].url) == predicted
        fast = yaml.safe_load(c.config_path.read_text())["models"]["smollm2"]["variants"]["fast"]
        assert fast["rollout"] == {"stage": "canary", "canary_shares": {"chat": 1.0}}
        assert fast["allowed_tasks"] == ["chat", "agent"]
        wait_until(lambda: ask(c.url, fresh()).headers["x-duet-variant"] == "fast", timeout_s=10,
                   what="chat on fast after it opened")
        assert metric(c.url, "duet_parity_opened", variant="smollm2:fast", task="chat") == 1
