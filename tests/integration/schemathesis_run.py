"""Runs schemathesis over a live gateway's whole OpenAPI document (its CLI, as a user would) and
returns how many requests it generated. Every generated request must get no 5xx; the hooks in
schemathesis_hooks.py aim the bodies at served models and give each route the key it wants."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_schemathesis(url: str, report_dir: Path, api_key: str, admin_key: str) -> int:
    st = Path(sys.executable).with_name("st")
    done = subprocess.run(
        [str(st), "run", url + "/openapi.json", "--checks", "not_a_server_error", "--max-examples", "50",
         "--workers", "1", "--seed", "1", "--request-timeout", "20", "--report", "junit", "--report-dir", str(report_dir)],
        capture_output=True, text=True, timeout=270,  # under pytest's 300 s: a hang is reported with its output
        env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.integration.schemathesis_hooks", "NO_COLOR": "1",
             "PYTHONPATH": str(REPO), "DUET_TEST_API_KEY": api_key, "DUET_TEST_ADMIN_KEY": admin_key},
        cwd=report_dir,  # schemathesis keeps a cache directory in its working directory
    )
    report = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    counted = re.search(r"(\d+) generated, (\d+) passed", done.stdout)
    assert counted is not None, report
    generated, passed = int(counted.group(1)), int(counted.group(2))
    print(f"schemathesis: {generated} generated, {passed} passed")
    assert passed == generated, report
    return generated
