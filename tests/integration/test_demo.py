"""`duet demo` against `duet up --sim`: every request says its task, variant, replica, reason,
latency and replica time against the standard, the two variants both serve, and the footer says
where to look next; `duet up --demo` runs the same once ready."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from gateway.cli.local.demo import DEMO_REQUESTS
from serving.ports import free_port

from .cluster import wait_until
from .test_up import READY_REPLICA, start_up, stop_and_check_replicas_gone

REQUEST_LINE = re.compile(r"task (\S+) \((\S+)\) -> (\S+) on (\S+); why: (\S+)")
OUTCOME_LINE = re.compile(r"(\d+\.\d+) s, HTTP 200, \d+\+\d+ tokens, (\d+\.\d) replica-ms \(on standard: (\d+\.\d)\)")


def test_duet_demo_shows_where_each_request_went_why_and_what_it_cost(tmp_path: Path) -> None:
    port = free_port()
    process, log = start_up(tmp_path, "--sim", "--no-calibrate", "--demo", "--port", str(port))
    replica_ports: list[int] = []
    try:
        wait_until(lambda: "where to look next" in log.read_text(), 120, "the demo run by duet up --demo")
        text = log.read_text()
        replica_ports = [int(p) for _, p in READY_REPLICA.findall(text)]
        command = re.search(r"duet demo --url (\S+) --config (\S+)", text)
        assert command is not None, text
        shown = subprocess.run([sys.executable, "-m", "gateway.cli", "demo", "--url", command.group(1),
                                "--config", command.group(2)], capture_output=True, text=True, timeout=120)
    finally:
        stop_and_check_replicas_gone(process, replica_ports)
    assert shown.returncode == 0, shown.stderr
    decisions = REQUEST_LINE.findall(shown.stdout)
    assert len(decisions) == len(OUTCOME_LINE.findall(shown.stdout)) == len(DEMO_REQUESTS), shown.stdout
    assert {variant for _, _, variant, _, _ in decisions} == {"standard", "fast"}, shown.stdout
    assert {task for task, _, _, _, _ in decisions} >= {"chat", "extraction", "reasoning"}
    assert ("extraction", "header") in {(task, source) for task, source, _, _, _ in decisions}
    assert re.search(r"replica time: [\d.]+ ms, against [\d.]+ ms all on standard \(\d+% (saved|more)", shown.stdout)
    for where in ("/metrics", "duet explain", "docs/routing.md"):
        assert where in shown.stdout
