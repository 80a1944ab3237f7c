"""The parity gate end to end on simulators: two replicas scripted from the suite (the candidate
wrong on coding only) -> ``duet parity`` -> verdicts -> ``--write-policy`` on a copy of the demo
config that a running gateway serves -> after its hot reload, a coding request with a tight
budget goes to standard while a chat request with the same budget still goes to fast."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from gateway.cli import main as duet
from loadtests.launch.gateway_process import GatewayProcess
from quantize.evals.scripted import answer_rules
from quantize.evals.suite import build_suite, task_types
from serving.sim.server.testing import SimProcess

from .cluster import DEMO, wait_until

SAMPLES, SEED = 6, 11
TOLERANCE = 0.5  # 6 samples prove no more (rule of three: 3 / 6); the candidate still loses all of coding
TIGHT = {"x-duet-latency-budget-ms": "300"}


def script(path: Path, wrong: set[str]) -> Path:
    types = task_types()
    suite = build_suite(seed=SEED, samples=SAMPLES, types=types)
    items = [item for items in suite.items.values() for item in items]
    path.write_text(json.dumps({"rules": answer_rules(items, types, wrong)}))
    return path


@pytest.fixture(scope="module")
def sims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SimProcess]]:
    tmp = tmp_path_factory.mktemp("parity-sims")
    answers = {"standard": script(tmp / "standard.json", set()), "fast": script(tmp / "fast.json", {"coding"})}
    with SimProcess("fast-test", "--served-model-name", "smollm2-standard", "--answers", str(answers["standard"])) as std, \
            SimProcess("fast-test", "--served-model-name", "smollm2-fast", "--answers", str(answers["fast"])) as fast:
        yield {"standard": std, "fast": fast}


def variant_for(gateway: GatewayProcess, task: str) -> str:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Say hello in five words."}], "max_tokens": 16}
    # Each probe its own conversation: a session keeps the variant its first turn was served by.
    headers = {**TIGHT, "x-duet-task": task, "x-session-id": uuid.uuid4().hex}
    reply = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=headers, timeout=30)
    assert reply.status_code == 200, reply.text
    return reply.headers["x-duet-variant"]


def test_parity_verdicts_become_routing(tmp_path: Path, sims: dict[str, SimProcess]) -> None:
    config = tmp_path / "duet.yaml"  # the demo config, comments and all, pointed at the simulators
    text = DEMO.read_text()
    for old, variant in (("http://127.0.0.1:8101", "standard"), ("http://127.0.0.1:8102", "fast")):
        text = text.replace(old, sims[variant].url)
    config.write_text(text)
    with GatewayProcess(config, log_path=tmp_path / "gateway.log") as gateway:
        # The demo config allows fast agent and extraction only (the int4 report refused chat and coding).
        assert variant_for(gateway, "coding") == "standard"
        assert variant_for(gateway, "chat") == "standard"
        assert variant_for(gateway, "extraction") == "fast"

        out = tmp_path / "report"
        assert duet(["parity", "--standard", sims["standard"].url, "--candidate", sims["fast"].url,
                     "--samples", str(SAMPLES), "--seed", str(SEED), "--tolerance", str(TOLERANCE),
                     "--out", str(out), "--no-progress", "--write-policy", str(config), "--variant", "fast"]) == 0

        report = json.loads((out / "parity.json").read_text())
        verdicts = {task: entry["verdict"] for task, entry in report["tasks"].items()}
        assert verdicts == {"chat": "allowed", "coding": "not allowed", "extraction": "allowed", "agent": "allowed",
                            "long-context": "allowed", "reasoning": "allowed"}
        assert report["tasks"]["coding"]["candidate_acc"] == 0.0
        assert all(entry["standard_acc"] == 1.0 for entry in report["tasks"].values())

        fast = yaml.safe_load(config.read_text())["models"]["smollm2"]["variants"]["fast"]
        assert fast["allowed_tasks"] == ["chat", "agent", "extraction", "long-context", "reasoning"]
        assert report["report_sha256"] in fast["allowed_tasks_source"]
        assert report["metadata"]["date"] in fast["allowed_tasks_source"]
        assert "# What the project's parity run proved" in config.read_text()  # the file's comments survive
        assert duet(["check", str(config)]) == 0

        # After the reload, and once the parity run's load has left the replicas' scraped state:
        # coding stays on standard, chat and reasoning (proven by this run) go to fast.
        wanted = {"coding": "standard", "chat": "fast", "reasoning": "fast"}
        wait_until(lambda: {task: variant_for(gateway, task) for task in wanted} == wanted, timeout_s=20,
                   what=f"routing {wanted} after the policy reload")
