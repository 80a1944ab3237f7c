"""The real online-parity run's orchestration, on the launch profiles' simulated twins: replicas,
a gateway checking every fast-served chat request, live traffic until the test concludes (here a
few requests), and the result beside the offline report's interval."""

from __future__ import annotations

import json
from pathlib import Path

from loadtests.real.online_parity import main


def test_the_run_writes_pairs_time_and_the_offline_comparison(tmp_path: Path) -> None:
    out = tmp_path / "online.json"
    assert main(["--sim", "--max-requests", "3", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["sim"] and result["variant"] == "fast-int8"
    assert 1 <= result["pairs"] <= 3 and len(result["trace"]) == result["pairs"]
    assert result["offline"]["verdict"] == "not allowed" and result["tolerance"] == 0.15
    assert all(row["served_by"] == "fast" for row in result["trace"])
    assert result["checking_s"] > 0
