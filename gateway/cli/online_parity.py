"""Online parity's tools, composed by the command shell: the task verifiers of quantize.evals
(``judge``) and the policy writer of ``duet parity --write-policy`` (``record``), behind the
protocols of gateway.parity.ports, so the gateway's runtime never imports quantize.

A verdict is written as ``duet parity`` writes a report's: the variant's ``allowed_tasks`` and
``allowed_tasks_source`` lines change (the source names ``online`` and the sha256 of the evidence
file written beside the config, ``parity-online/``). Opening a task on a shadow-stage variant
also sets its ``rollout`` line to a canary with a share of 1 for the task."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gateway.cli.parity import config_problem
from gateway.parity.ports import PairScore, ParityTools, Revision
from quantize.errors import ParityError
from quantize.evals.checking.sandbox import Sandbox
from quantize.evals.online import judge_pair
from quantize.parity.policy import PolicyTarget, write_policy

EVIDENCE_DIR = "parity-online"


class Judge:
    """quantize.evals.online as a PairJudge; the sandbox is built on first use (detecting the
    isolation available runs processes)."""

    def __init__(self) -> None:
        self._sandbox: Sandbox | None = None

    def __call__(self, task: str, request: Mapping[str, Any], standard: Mapping[str, Any],
                 candidate: Mapping[str, Any]) -> PairScore:
        outcome = judge_pair(task, request, standard, candidate, sandbox=self._sandbox_once)
        return PairScore(outcome.standard, outcome.candidate, outcome.measure, outcome.detail)

    def _sandbox_once(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox


def record(config_path: str, revision: Revision) -> str:
    """Write ``revision`` into the config at ``config_path`` with its evidence; returns the source."""
    path = Path(config_path)
    evidence = json.dumps(dict(revision.evidence), sort_keys=True, separators=(",", ":"), default=str)
    sha = hashlib.sha256(evidence.encode()).hexdigest()
    folder = path.parent / EVIDENCE_DIR
    folder.mkdir(exist_ok=True)
    (folder / f"{revision.variant.replace(':', '-')}-{revision.task}-{sha[:12]}.json").write_text(evidence + "\n")
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    verdict = "allowed" if revision.allowed else "not allowed"
    report = {"tasks": {revision.task: {"verdict": verdict}}, "metadata": {"date": f"online {date}"}, "report_sha256": sha}
    model, _, variant = revision.variant.partition(":")
    if revision.allowed:
        _open_rollout(path, model, variant, revision.task)
    change = write_policy(PolicyTarget(path, f"{model}/{variant}", config_problem), report)
    return change.source


def tools() -> ParityTools:
    return ParityTools(Judge(), record)


def _open_rollout(path: Path, model: str, variant: str, task: str) -> None:
    """The variant's ``rollout`` line becomes a canary taking all of ``task`` (besides the shares it
    had): a text edit of that key alone, checked to load and to change nothing else."""
    text = path.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    spec = raw["models"][model]["variants"][variant]
    shares = dict((spec.get("rollout") or {}).get("canary_shares") or {}) | {task: 1.0}
    line = "rollout: " + json.dumps({"stage": "canary", "canary_shares": shares})
    new_text = _with_key_line(text, ["models", model, "variants", variant], "rollout", line)
    problem = config_problem(new_text, str(path))
    if problem is not None:
        raise ParityError(f"{path}: opening {task} on {model}/{variant} would not load: {problem}")
    before, after = yaml.safe_load(text), yaml.safe_load(new_text)
    for parsed in (before, after):
        parsed["models"][model]["variants"][variant].pop("rollout", None)
    if before != after:
        raise ParityError(f"{path}: opening {task} would change more than {model}/{variant}'s rollout")
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as f:
        f.write(new_text)
    os.replace(temporary, path)


def _with_key_line(text: str, at: list[str], key: str, line: str) -> str:
    """``text`` with the mapping at ``at``'s ``key`` (its key line and value lines) replaced by
    ``line`` at the mapping's indentation, or ``line`` added as its last key. Lines from the
    composed YAML's marks, so comments elsewhere stay."""
    node = yaml.compose(text)
    for name in at:
        node = next(v for k, v in node.value if k.value == name)
    if node.flow_style:
        raise ParityError(f"{'.'.join(at)} is written in flow style; edit its rollout by hand")
    lines = text.splitlines(keepends=True)
    indent = node.value[0][0].start_mark.column
    found = next(((k, v) for k, v in node.value if k.value == key), None)
    new = " " * indent + line + "\n"
    if found is not None:
        start, end = found[0].start_mark.line, _line_after(lines, found[1])
        return "".join(lines[:start] + [new] + lines[end:])
    end = _line_after(lines, node.value[-1][1])
    return "".join(lines[:end] + [new] + lines[end:])


def _line_after(lines: list[str], node: yaml.Node) -> int:
    """The first line after ``node``'s value: a block collection ends where the next key's
    indentation starts (its end mark is there), a scalar or flow value within its last line."""
    line, column = int(node.end_mark.line), int(node.end_mark.column)
    if line >= len(lines) or not lines[line][:column].strip():
        return line
    return line + 1
