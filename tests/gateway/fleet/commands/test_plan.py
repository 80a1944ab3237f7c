"""``duet plan`` end to end on a tiny case: the results file, the config it writes (which
``duet deploy render`` then starts that many replicas of), and errors before any replay."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gateway.cli import main
from gateway.deploy.plan import Target, load_plan
from gateway.fleet.capacity.fleet_config import role_groups

ROOT = Path(__file__).resolve().parents[4]
GPU = ROOT / "deploy" / "render" / "h100-70b.yaml"
TINY = ["plan", "--replicas", "h100-70b", "--rate-scale", "0.5", "--span", "30", "--search-seeds", "1",
        "--check-seeds", "2", "--max-replicas", "3", "--baselines", "least-loaded", "--target", "0.9"]


def test_a_tiny_plan_writes_its_results_and_the_counts_deploy_render_uses(tmp_path):
    out, planned = tmp_path / "plan.json", tmp_path / "planned.yaml"
    assert main([*TINY, "--all-standard-max-replicas", "4", "--out", str(out), "--write-config", str(GPU),
                 "--to", str(planned)]) == 0
    results = json.loads(out.read_text())
    assert results["command"].startswith("duet plan --replicas h100-70b ") and "--jobs" not in results["command"]
    assert results["command"].endswith("--all-standard-max-replicas 4") and results["all_standard_max_replicas"] == 4
    assert {name: p["role"] for name, p in results["plans"].items()} == {
        "duet": "duet", "least-loaded": "baseline", "always-standard": "all-standard"}
    duet = results["plans"]["duet"]
    assert duet["search_share"] >= 0.9 and len(duet["check_runs"]) == 2
    assert duet["usd_per_hour"] == 12.0 * duet["replicas"]  # 4 H100s x $3.00 per replica
    assert results["plans"]["always-standard"]["fleet"]["fast"] == 0
    counts = {d.variant: d.replicas for d in load_plan(planned, Target.parse("k8s-gpu")).variants}
    assert counts == duet["fleet"]
    assert yaml.safe_load(planned.read_text())["routing"] == yaml.safe_load(GPU.read_text())["routing"]


def test_a_config_without_the_pairings_variants_is_refused_before_any_replay(tmp_path, capsys):
    raw = yaml.safe_load(GPU.read_text())
    variants = raw["models"]["llama-3-70b"]["variants"]
    variants["quick"] = variants.pop("fast")
    config = tmp_path / "duet.yaml"
    config.write_text(yaml.safe_dump(raw))
    assert main([*TINY, "--write-config", str(config), "--to", str(tmp_path / "o.yaml")]) == 2
    err = capsys.readouterr().err
    assert "models.llama-3-70b.variants: no variant 'fast'" in err and "good" not in err  # no replay ran


def test_write_config_needs_to(capsys):
    assert main([*TINY, "--write-config", str(GPU)]) == 2
    assert "--write-config IN and --to OUT go together" in capsys.readouterr().err


def test_a_tiny_plan_over_tp_sizes_records_each_policys_layout_and_deploy_renders_it(tmp_path):
    out, planned = tmp_path / "plan.json", tmp_path / "planned.yaml"
    assert main([*TINY, "--tp", "fast=2,4", "--out", str(out), "--write-config", str(GPU), "--to", str(planned)]) == 0
    results = json.loads(out.read_text())
    assert "--tp 'fast=2,4'" in results["command"]
    assert results["layouts"]["fast"] == {"tp": [2, 4], "chunk": [None]}
    plans = results["plans"]
    assert [s["layout"]["fast"]["tp"] for s in plans["duet"]["layouts"]] == [4, 2]
    assert [s["layout"] for s in plans["least-loaded"]["layouts"]] == [
        {"standard": {"tp": 4, "chunk": None}, "fast": {"tp": 4, "chunk": None}}]  # one configuration for all
    assert plans["always-standard"]["layout"] == {"standard": {"tp": 4, "chunk": None}}
    duet = plans["duet"]
    gpus = sum(duet["fleet"][v] * duet["layout"][v]["tp"] for v in duet["fleet"])
    assert duet["usd_per_hour"] == 3.0 * gpus
    deployed = {d.variant: d for d in load_plan(planned, Target.parse("k8s-gpu")).variants}
    for variant, layout in duet["layout"].items():
        assert deployed[variant].replicas == duet["fleet"][variant]
        launched = deployed[variant].launched(0)
        assert launched.gpus == layout["tp"] and f"--tensor-parallel-size {layout['tp']}" in " ".join(launched.args)


def test_a_tp_size_the_variant_cannot_hold_is_refused_before_any_replay(capsys):
    assert main([*TINY, "--tp", "fast=1"]) == 2
    err = capsys.readouterr().err
    assert "--tp fast=1: 'h100-70b-fp8' fits at TP 2, 4, 8 only" in err and "good" not in err


def test_a_tiny_plan_over_role_mixes_writes_the_mix_it_chose_and_deploy_renders_its_counts(tmp_path, capsys):
    raw = yaml.safe_load(GPU.read_text())
    raw["models"]["llama-3-70b"].pop("autoscaling")  # an autoscaled variant runs one engine on Kubernetes
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(yaml.safe_dump(raw, sort_keys=False))
    out, planned = tmp_path / "plan.json", tmp_path / "planned.yaml"
    assert main([*TINY, "--roles", "pd+split", "--baselines", "", "--all-standard", "", "--out", str(out),
                 "--write-config", str(fixed), "--to", str(planned)]) == 0
    duet = json.loads(out.read_text())["plans"]["duet"]
    deployed = {d.variant: d for d in load_plan(planned, Target.parse("k8s-gpu")).variants}
    for variant, count in duet["fleet"].items():
        assert sum(g.count for g in deployed[variant].groups) == count
    written = yaml.safe_load(planned.read_text())["models"]["llama-3-70b"]["variants"]
    groups, _ = role_groups(duet)  # what the plan's mix lays over its fleet (none when it chose no mix)
    assert {v for v, s in written.items() if "engine_groups" in s} == {v for v, g in groups.items() if len(g) > 1}
    assert "does not carry" not in capsys.readouterr().err


def test_a_comparator_plan_sizing_one_policy_in_two_roles_keeps_both(tmp_path):
    out = tmp_path / "plan.json"
    args = [*TINY[:TINY.index("--baselines")], *TINY[TINY.index("--target"):]]
    assert main([*args, "--policy", "always-standard", "--baselines", "", "--all-standard", "always-standard",
                 "--all-standard-max-replicas", "4", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert {name: p["role"] for name, p in results["plans"].items()} == {
        "always-standard": "duet", "always-standard (all-standard)": "all-standard"}
    assert "--baselines '' --all-standard always-standard" in results["command"]
