"""The measured sections of docs/parity.md, rendered from the committed evidence so no figure in
them is copied by hand (issue #16): the offline reports of the real CPU variants
(``docs/parity-real/<variant>/parity.json``, ``python -m quantize.parity.real``) and the online
runs on real replicas (``docs/parity-real/online-*.json``, ``loadtests.real.online_parity``).
``python -m loadtests.sections`` writes both sections (its registry names these renderers; quantize
imports no load test) and the registry's test checks the docs hold exactly what the files render to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "docs" / "parity-real"
DOCS = ROOT / "docs" / "parity.md"  # where the sections go (loadtests.sections.registry)
# Variants in the order the docs discuss them (others follow, by name).
ORDER = ("fast-spec", "fast-int8-compiled", "fast-int8", "fast-int4", "fast-bnb4")


def offline_reports(evidence: Path = EVIDENCE) -> list[tuple[str, dict[str, Any]]]:
    """(variant, parity.json) of every committed offline report, in ``ORDER``."""
    found = {p.parent.name: json.loads(p.read_text()) for p in evidence.glob("*/parity.json")}
    rank = {v: i for i, v in enumerate(ORDER)}
    return [(v, found[v]) for v in sorted(found, key=lambda v: (rank.get(v, len(ORDER)), v))]


def online_runs(evidence: Path = EVIDENCE) -> list[tuple[str, dict[str, Any]]]:
    """(file name, result) of every online run on real replicas (evidence files left out)."""
    return [(p.name, json.loads(p.read_text())) for p in sorted(evidence.glob("online-*.json"))
            if not p.stem.endswith("-evidence")]


def _cell(t: Mapping[str, Any]) -> str:
    low, high = t["ci95"]
    verdict = "allowed" if t["verdict"] == "allowed" else "**not allowed**"
    return f"{t['candidate_acc']:.0%} / {t['standard_acc']:.0%}, diff {t['diff']:+.2f} [{low:+.2f}, {high:+.2f}]: {verdict}"


def render_offline(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    tasks = list(reports[0][1]["tasks"]) if reports else []
    lines = ["Generated from the committed reports (`docs/parity-real/<variant>/parity.json`; each folder also holds "
             "`parity.md`, `items.jsonl` with every answer, and `parity.png`). Each cell: candidate accuracy / "
             "standard accuracy, the difference with its 95% paired-bootstrap interval, and the verdict.", "",
             "| variant | measured | hardware class | items per task | tolerance | suite wall s |", "|---|---|---|---|---|---|"]
    for variant, report in reports:
        meta = report["metadata"]
        lines.append(f"| {variant} | {meta['date'][:16].replace('T', ' ')} UTC | {meta['hardware']['class']} | "
                     f"{meta['samples']} | {meta['tolerance']:g} | {meta['wall_s']:,.0f} |")
    lines += ["", "| variant | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    for variant, report in reports:
        lines.append(f"| {variant} | " + " | ".join(_cell(report["tasks"][t]) for t in tasks) + " |")
    lines += ["", "The same answer as the standard's, word for word, and chat's output speed on each side (both "
              "replicas loaded, one per core):", "",
              "| variant | same answer: chat | same answer: all tasks | chat tok/s: standard / candidate |",
              "|---|---|---|---|"]
    for variant, report in reports:
        chat, every = report["tasks"]["chat"], report["tasks"].values()
        same = round(sum(t["same_answer"] * t["samples"] for t in every))
        lines.append(f"| {variant} | {round(chat['same_answer'] * chat['samples'])} of {chat['samples']} | "
                     f"{same} of {sum(t['samples'] for t in every)} | "
                     f"{chat['standard_tokens_per_s']:g} / {chat['candidate_tokens_per_s']:g} |")
    return "\n".join(lines)


def render_online(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    lines = ["| file | check method | replicas ready s | pairs | checking s | s per pair | online mean loss | tolerance "
             "| conclusion | offline chat diff [95% CI], items |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, run in runs:
        offline = run["offline"]
        low, high = offline["ci95"]
        lines.append(
            f"| `{name}` | {run.get('check_method', 'resend')} | {run['replicas_ready_s']:,.0f} | {run['pairs']} "
            f"| {run['checking_s']:,.0f} | {run['checking_s'] / run['pairs']:.1f} | {run['online_mean_loss']:.3f} "
            f"| {run['tolerance']:g} | {run['conclusion']} | {offline['diff']:+.2f} [{low:+.2f}, {high:+.2f}], "
            f"{offline['samples']} |")
    return "\n".join(lines)
