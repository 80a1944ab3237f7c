"""``--write-policy``: record a parity report's verdicts in duet.yaml as a variant's
``allowed_tasks`` (and ``allowed_tasks_source``: the report's date and sha256).

Task types the report evaluated become allowed or not by their verdict; task types it did not
evaluate keep their current status (``all`` counts as allowed), so a run of one task type
updates only that one. Task types the config does not define are left out (reported back).

The file is edited as text: only the variant's two lines change, so comments and layout stay.
A variant written in flow style (``fast: {kind: ...}``) cannot be edited that way; the file is
then rewritten from its parsed form (comments are lost, and the result says so). Either way the
new text must load as a valid config and differ from the old one in those two keys only before
it replaces the file (atomically: the gateway's reload watcher never sees half a file).
Whether it loads is the caller's check (``PolicyTarget.check``): the command shell passes the
gateway's own, so quantize never imports the gateway.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from quantize.errors import ParityError

# (config text, file name for messages) -> what is wrong with it as a duet.yaml, or None when it loads
ConfigCheck = Callable[[str, str], str | None]


@dataclass(frozen=True, slots=True)
class PolicyTarget:
    """Where verdicts are recorded: the duet.yaml at ``path``, its variant ``variant`` (or
    ``model/variant``), and the check the edited text must pass before it replaces the file."""

    path: Path
    variant: str
    check: ConfigCheck


@dataclass(frozen=True, slots=True)
class PolicyChange:
    model: str
    variant: str
    allowed: tuple[str, ...]
    source: str
    skipped: tuple[str, ...]  # evaluated task types the config does not define
    rewritten: bool  # True: the whole file was re-dumped (comments lost)


def write_policy(target: PolicyTarget, report: dict[str, Any]) -> PolicyChange:
    """Record ``report``'s verdicts for the target's variant in the target's file."""
    path = target.path
    text = _read(path)
    raw = yaml.safe_load(text)
    model, variant = _find_variant(raw, target.variant)
    spec = raw["models"][model]["variants"][variant]
    tasks = list(raw.get("routing", {}).get("tasks", {}))
    current = set(tasks) if spec.get("allowed_tasks", "all") == "all" else set(spec["allowed_tasks"])
    verdicts = {task: entry["verdict"] == "allowed" for task, entry in report["tasks"].items()}
    allowed = tuple(t for t in tasks if verdicts.get(t, t in current))
    source = f"duet parity {report['metadata']['date']} report sha256:{report['report_sha256']}"
    try:
        new_text, rewritten = _edited(text, ["models", model, "variants", variant], allowed, source), False
    except _NotBlockStyle:
        new_text, rewritten = _rewritten(raw, model, variant, allowed, source), True
    _check(text, new_text, model, variant, target)
    _replace(path, new_text)
    skipped = tuple(t for t in verdicts if t not in tasks)
    return PolicyChange(model, variant, allowed, source, skipped, rewritten)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParityError(f"--write-policy {path}: cannot read it ({exc})") from exc


def _find_variant(raw: Any, ref: str) -> tuple[str, str]:
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict):
        raise ParityError("--write-policy: the file has no models section")
    wanted_model, _, wanted_variant = ref.rpartition("/")
    found = [(m, v) for m, spec in models.items() for v in (spec or {}).get("variants", {})
             if v == wanted_variant and wanted_model in ("", m)]
    if len(found) != 1:
        known = [f"{m}/{v}" for m, spec in models.items() for v in (spec or {}).get("variants", {})]
        problem = "is ambiguous" if found else "is not in the file"
        raise ParityError(f"--variant {ref} {problem} (variants: {', '.join(known)})")
    return found[0]


class _NotBlockStyle(Exception):
    """The variant is not a block-style mapping the text edit understands."""


def _edited(text: str, key_path: list[str], allowed: tuple[str, ...], source: str) -> str:
    lines = text.splitlines(keepends=True)
    start, end = 0, len(lines)
    for key in key_path:
        at = _child_line(lines, start, end, key)
        if at is None or not re.fullmatch(r"\s*(#.*)?", _after_key(lines[at])):
            raise _NotBlockStyle(key)
        start, end = at + 1, _block_end(lines, at)
    indent = _child_indent(lines, start, end)
    if indent is None:
        raise _NotBlockStyle("empty variant")
    tasks_line = f"{' ' * indent}allowed_tasks: [{', '.join(allowed)}]\n"
    source_line = f"{' ' * indent}allowed_tasks_source: {json.dumps(source)}\n"
    at = _replace_value(lines, start, end, "allowed_tasks", tasks_line)
    if at is None:  # new: after the variant's last line
        at = max(i for i in range(start, end) if _content(lines[i]))
        if not lines[at].endswith("\n"):
            lines[at] += "\n"
        at += 1
        lines.insert(at, tasks_line)
    end = _block_end(lines, start - 1)
    if _replace_value(lines, start, end, "allowed_tasks_source", source_line) is None:
        lines.insert(at + 1, source_line)  # new: right under allowed_tasks
    return "".join(lines)


def _replace_value(lines: list[str], start: int, end: int, key: str, line: str) -> int | None:
    """Replace ``key``'s line and its value's lines by ``line``; returns where, or None when absent."""
    at = _child_line(lines, start, end, key)
    if at is not None:
        lines[at:_block_end(lines, at)] = [line]
    return at


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _child_indent(lines: list[str], start: int, end: int) -> int | None:
    return next((_indent(lines[i]) for i in range(start, end) if _content(lines[i])), None)


def _child_line(lines: list[str], start: int, end: int, key: str) -> int | None:
    indent = _child_indent(lines, start, end)
    pattern = re.compile(rf"""(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*:(\s|$)""")
    for i in range(start, end):
        if _content(lines[i]) and _indent(lines[i]) == indent and pattern.match(lines[i][indent:]):
            return i
    return None


def _after_key(line: str) -> str:
    return line.split(":", 1)[1]


def _block_end(lines: list[str], at: int) -> int:
    """The line after the value of the key on line ``at`` (deeper lines, list items at the same
    indentation, and the blank or comment lines among them). Trailing blank or comment lines
    stay with what follows."""
    indent, end = _indent(lines[at]), at + 1
    for i in range(at + 1, len(lines)):
        if not _content(lines[i]):
            continue
        deeper = _indent(lines[i]) > indent or (_indent(lines[i]) == indent and lines[i].lstrip().startswith("- "))
        if not deeper:
            break
        end = i + 1
    return end


def _rewritten(raw: dict[str, Any], model: str, variant: str, allowed: tuple[str, ...], source: str) -> str:
    spec = raw["models"][model]["variants"][variant]
    spec["allowed_tasks"] = list(allowed)
    spec["allowed_tasks_source"] = source
    return str(yaml.safe_dump(raw, sort_keys=False))


def _check(old: str, new: str, model: str, variant: str, target: PolicyTarget) -> None:
    path = target.path
    problem = target.check(new, str(path))
    if problem is not None:
        raise ParityError(f"--write-policy {path}: the result would not be a valid config: {problem}")
    before, after = yaml.safe_load(old), yaml.safe_load(new)
    for raw in (before, after):
        spec = raw["models"][model]["variants"][variant]
        spec.pop("allowed_tasks", None)
        spec.pop("allowed_tasks_source", None)
    if before != after:
        raise ParityError(f"--write-policy {path}: editing the file would change more than {model}/{variant}'s "
                          "allowed tasks; nothing written")


def _replace(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temporary, path.stat().st_mode & 0o777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
