"""An installed copy of Duet (pip install, not the clone) finds every parity report the default
pair of each proven CPU class needs: the evidence ships in the package, not in docs/."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "gateway", "serving", "quantize", "loadtests")
# Run by the installed copy, from a directory without the clone on its path.
PROBE = """
import json
from gateway.cli.local import replicas, up
from serving.launch import by_variant, load_profiles
from quantize.parity.report import hardware_class

assert "site-packages" in up.__file__ or "installed" in up.__file__, up.__file__
profiles = load_profiles()
found = {}
for machine_class, pair in replicas.DEFAULT_PAIRS.items():
    chosen = [by_variant(profiles, "cpu", name) for name in pair.split(",")]
    reports = up.parity_reports(chosen, machine_class)
    found[machine_class] = {p.variant: hardware_class(reports[p.name]) if p.name in reports else None
                            for p in chosen if p.kind != "full"}
print(json.dumps({"found": found, "unproven": sorted(replicas.UNPROVEN_CLASSES)}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source, target = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("installed")
    for name in SOURCES:  # a copy: the build leaves nothing in the clone, nothing stale gets in
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                            str(source)], capture_output=True, text=True, timeout=280)
    if built.returncode != 0:  # pip's build isolation fetches setuptools>=77 the first time
        pytest.skip(f"pip could not build the package here: {built.stderr.strip().splitlines()[-1:]}")
    return target


def test_the_installed_copy_finds_the_parity_report_of_each_classs_default_fast_variant(installed: Path,
                                                                                        tmp_path: Path) -> None:
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"})
    assert probe.returncode == 0, probe.stderr
    result = json.loads(probe.stdout)
    for machine_class, variants in result["found"].items():
        for variant, measured_on in variants.items():
            if machine_class in result["unproven"]:
                assert measured_on != machine_class, f"{machine_class} is proven for {variant} now: say so"
            else:
                assert measured_on == machine_class, f"{variant} on {machine_class}: no report shipped for the class"
