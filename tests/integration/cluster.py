"""A gateway in front of simulated replicas, all real processes on loopback."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.sim.server.testing import SimProcess

DEMO = Path(__file__).resolve().parents[2] / "deploy" / "config" / "demo.yaml"


@dataclass
class Cluster:
    gateway: GatewayProcess
    sims: dict[str, SimProcess]
    config_path: Path

    @property
    def url(self) -> str:
        return self.gateway.url

    def rewrite_config(self, edit: Callable[[dict[str, Any]], None]) -> None:
        raw = yaml.safe_load(self.config_path.read_text())
        edit(raw)
        self.config_path.write_text(yaml.safe_dump(raw, sort_keys=False))


def demo_config(urls: dict[str, str], **state: Any) -> dict[str, Any]:
    """The demo config pointed at ``urls``, with the fast variant eligible for chat and coding as
    well: these tests exercise the gateway's mechanics (budgets, fallbacks, faults, reloads) with
    both variants in play. The demo itself keeps fast off chat and coding (its parity report
    refuses them): tests/gateway/cli/test_up.py and test_parity_sim.py test that. Task detection is
    off: a short prompt such as "Say hello in five words." is not confidently chat to the shipped
    detector, whose abstention then keeps it off the fast variant, which these tests need in play;
    detection's routing has its own tests (tests/gateway/flow/test_task_detection_routing.py)."""
    raw = yaml.safe_load(DEMO.read_text())
    raw["models"]["smollm2"]["variants"]["fast"]["allowed_tasks"] = ["chat", "coding", "agent", "extraction"]
    raw["routing"]["task_detector"] = {"enabled": False}
    for name, spec in raw["models"]["smollm2"]["variants"].items():
        spec["replicas"] = [{"url": urls[name]}]
    raw["state"].update(state)
    return raw


@contextmanager
def cluster(
    tmp: Path,
    profiles: dict[str, tuple[str, ...]],
    *,
    state: dict[str, Any] | None = None,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[Cluster]:
    """``profiles``: variant -> (sim profile, extra sim args...); ``edit`` changes the config first."""
    with ExitStack() as stack:
        sims = {}
        for variant, (profile, *args) in profiles.items():
            served = f"smollm2-{variant}"
            sims[variant] = stack.enter_context(SimProcess(profile, "--served-model-name", served, *args))
        config_path = tmp / "duet.yaml"
        raw = demo_config({v: s.url for v, s in sims.items()}, **(state or {}))
        if edit is not None:
            edit(raw)
        config_path.write_text(yaml.safe_dump(raw, sort_keys=False))
        gateway = stack.enter_context(GatewayProcess(config_path, log_path=tmp / "gateway.log"))
        yield Cluster(gateway, sims, config_path)


def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        time.sleep(0.02)
