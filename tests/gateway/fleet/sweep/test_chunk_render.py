"""The chunk-budget section: Duet's best against each baseline's best uniform budget and its
vLLM default, paired seed by seed, over the chunk files and the same pairing's P/D files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.fleet.sweep.chunk_render import combined, duet_rule, load, render, summary, trailing, uniform_budget

PAIRING = "h100-70b:standard=4,fast=2"
LEVELS = ("good_fraction>=0.99", "good_fraction>=0.95")


def crossing(*values: float, kind: str = "exact") -> dict[str, Any]:
    mean = sum(values) / len(values)
    return {"load": {"kind": kind, "mean": mean, "ci95": 0.0, "seeds": len(values), "nonmonotone_seeds": 0},
            "rate_rps": {"kind": kind, "mean": 9 * mean, "ci95": 0.0, "seeds": len(values), "nonmonotone_seeds": 0},
            "runs": [{"kind": kind, "value": v, "nonmonotone": False} for v in values]}


def result(command: str, policies: dict[str, tuple[float, ...]], **protocol: Any) -> dict[str, Any]:
    """A results file whose every policy crosses both levels at the loads given per seed."""
    head = {"command": command, "replicas": PAIRING, "trace": "code,conv", "seeds": 2, "seed": 0, "prior_error": 0.3,
            "output_length": "learned", "loads": [0.4, 1.9], "window": {"name": "heldout", "covered_s": [1500, 2760]}}
    grid = {p: [{"load": 0.4, "rate_rps": 3.6, "good_fraction": 0.99, "ci95": 0.0},
                {"load": 1.9, "rate_rps": 17.1, "good_fraction": 0.9, "ci95": 0.0}] for p in policies}
    crossings = [{"constraint": c, "level": None, "policies": {p: crossing(*v) for p, v in policies.items()}}
                 for c in LEVELS]
    return {**head, **protocol, "policies": list(policies), "grid": grid, "crossings": crossings}


BASELINES = result("duet replay baselines", {"llm-d-default@chunk=2048": (1.0, 1.2), "llm-d-default@chunk=8192": (0.8, 1.0),
                                            "least-loaded@chunk=8192": (0.5, 0.5)})
DUET = result("duet replay duet", {"duet@chunk=standard:2x16384+2048": (1.1, 1.5)})
PD = result("duet replay pd", {"duet": (1.0, 1.0), "duet@pd=2:0:duet": (1.2, 1.2), "duet@pd=2:0:threshold": (2.0, 2.0)})


@pytest.mark.parametrize(("policy", "ours"), [
    ("duet", True), ("duet-fixed@chunk=2048", True), ("duet@pd=2:0:duet", True), ("duet@pd=2:0:threshold", False),
    ("llm-d-default@chunk=2048", False),
])
def test_duets_policies_are_its_own_files_split_by_its_own_rule(policy: str, ours: bool) -> None:
    assert duet_rule(policy) is ours


def test_a_uniform_budget_is_a_baselines_co_located_fleet_at_one_budget() -> None:
    assert uniform_budget("llm-d-default@chunk=4096") == ("llm-d-default", 4096)
    for policy in ("llm-d-default", "duet@chunk=2048", "llm-d-default@chunk=fast:2048", "least-loaded@chunk=2048@pd=2:0:duet"):
        assert uniform_budget(policy) is None


def test_the_pd_files_lend_only_duets_policies() -> None:
    merged = combined(([BASELINES, DUET], [PD]))
    assert merged["policies"] == ["llm-d-default@chunk=2048", "llm-d-default@chunk=8192", "least-loaded@chunk=8192",
                                  "duet@chunk=standard:2x16384+2048", "duet", "duet@pd=2:0:duet"]
    assert set(merged["crossings"][0]["policies"]) == set(merged["policies"])


def test_duets_best_is_set_against_each_baselines_best_uniform_budget_seed_by_seed() -> None:
    rows = summary("p", combined(([BASELINES, DUET], [PD])))
    assert len(rows) == 4  # two baselines x two levels
    best = rows[0]
    # Duet's best by mean: the heterogeneous layout (1.3) over P/D 2:0 (1.2); the threshold rule is no Duet's.
    assert "`duet@chunk=standard:2x16384+2048`" in best and "`llm-d-default@chunk=2048`" in best
    # Per seed 1.1/1.0 and 1.5/1.2 -> 1.1 and 1.25, mean 1.175; against vLLM's default 1.375 and 1.5.
    assert "1.18x ±" in best and "1.44x ±" in best
    assert "**not met**" in best
    assert "`least-loaded@chunk=8192`" in rows[1] and "2.6x ±" in rows[1]


def test_a_pd_file_swept_otherwise_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "chunk").mkdir()
    (tmp_path / "pd").mkdir()
    (tmp_path / "chunk" / "a.json").write_text(json.dumps(BASELINES))
    (tmp_path / "pd" / "same.json").write_text(json.dumps(PD))
    (tmp_path / "pd" / "other.json").write_text(json.dumps({**PD, "seeds": 3}))
    [(pairing, (chunk, pd))] = load(tmp_path / "chunk", tmp_path / "pd")
    assert pairing == PAIRING and len(chunk) == 1 and len(pd) == 1


def test_every_committed_chunk_file_renders_its_command_and_each_policy() -> None:
    pairings = load()
    text = render(pairings)
    for _, (chunk, pd) in pairings:
        for result_ in [*chunk, *pd]:
            assert result_["command"] in text
        for policy in chunk[0]["policies"]:
            assert f"| {policy} |" in text


def test_a_diagnosis_beside_the_sweeps_is_rendered_under_them_and_is_no_sweep(tmp_path: Path) -> None:
    from gateway.fleet.sweep import diagnose

    (found, *_) = diagnose.load()  # a committed knee diagnosis stands in for one of a chunk layout
    (tmp_path / "pd").mkdir()
    (tmp_path / "a.json").write_text(json.dumps(BASELINES))
    (tmp_path / "diagnosis-x.json").write_text(json.dumps(found))
    pairings = load(tmp_path, tmp_path / "pd")
    assert [len(chunk) for _, (chunk, _) in pairings] == [1]
    text = render(pairings, [found])
    assert "Where the remaining misses come from" in text and found["command"] in text


def test_a_load_where_duet_trails_a_baseline_beyond_the_interval_is_named() -> None:
    merged = combined(([BASELINES, DUET], [PD]))
    assert "trails no baseline budget" in trailing(merged)
    merged["grid"]["llm-d-default@chunk=2048"][1] = {"load": 1.9, "rate_rps": 17.1, "good_fraction": 0.95, "ci95": 0.01}
    assert trailing(merged) == ("`duet@chunk=standard:2x16384+2048` trails the best baseline budget at that load by "
                                "more than the interval at x1.9 (5.00 points behind, interval 1.00).")


def test_the_tuning_sweeps_a_layout_was_chosen_on_are_rendered_with_their_commands() -> None:
    tuned = result("duet replay --window tuning", {"duet": (1.0, 1.0)})
    text = render([(PAIRING, ([BASELINES], []))], (), [tuned])
    assert "chosen on the tuning window" in text and "duet replay --window tuning" in text
