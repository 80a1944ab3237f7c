"""docs/routing.md's "When clients name no task" table: what it is rendered from and how (the
committed table is checked with every section by tests/loadtests/sections/test_registry.py)."""

from __future__ import annotations

from loadtests.benchmarks.unnamed import render as docs


def test_the_share_and_the_keyed_tasks_come_from_the_command():
    assert docs.unnamed_share("duet replay --sweep 0.5 --unnamed-share 0.25 --seeds 3") == 0.25
    assert docs.unnamed_share("duet replay --sweep 0.5") == 0.0
    assert docs.keyed_tasks("duet replay --unnamed-share 1 --keyed-tasks coding,chat") == ("coding", "chat")
    assert docs.keyed_tasks("duet replay --unnamed-share 1") == ()


def test_the_committed_sweeps_hold_both_ends_for_a_pairing():
    shares = {(r["replicas"], r["unnamed_share"]) for r in docs.load()}
    assert ("h100-70b:standard=4,fast=2", 0.0) in shares and ("h100-70b:standard=4,fast=2", 1.0) in shares


def _sweep(share: float, duet: float, baseline: float, keyed: tuple[str, ...] = ()) -> dict:
    exact = {"kind": "exact", "ci95": 0.0, "nonmonotone_seeds": 0}
    option = f" --unnamed-share {share:g}" if share else ""
    option += f" --keyed-tasks {','.join(keyed)}" if keyed else ""
    return {"command": f"duet replay --replicas r{option}", "replicas": "r", "unnamed_share": share, "keyed_tasks": keyed,
            "crossings": [{"constraint": "good_fraction>=0.99", "policies": {
                "duet-fixed": {"load": {**exact, "mean": duet}}, "least-loaded": {"load": {**exact, "mean": baseline}}},
                "comparison": {"subject": "duet-fixed", "best_baseline": "least-loaded",
                               "ratio": {**exact, "mean": round(duet / baseline, 3)}}}]}


def test_rows_go_from_every_task_named_to_none():
    text = docs.render([_sweep(1.0, 0.5, 0.5), _sweep(0.0, 0.8, 0.7)])
    named = text.index("| `r` | 100% | good_fraction>=0.99 | x0.8 | least-loaded x0.7 | 1.14x |")
    unnamed = text.index("| `r` | 0% | good_fraction>=0.99 | x0.5 | least-loaded x0.5 | 1x |")
    assert named < unnamed and "--unnamed-share 1" in text


def test_a_keyed_sweep_follows_the_unkeyed_one_and_says_which_tasks_were_keyed():
    text = docs.render([_sweep(1.0, 0.6, 0.55, ("coding",)), _sweep(1.0, 0.5, 0.5), _sweep(0.0, 0.8, 0.7)])
    unkeyed = text.index("| `r` | 0% | good_fraction>=0.99 | x0.5 |")
    keyed = text.index("| `r` | 0%; coding keyed | good_fraction>=0.99 | x0.6 | least-loaded x0.55 |")
    assert unkeyed < keyed and "--keyed-tasks coding" in text
