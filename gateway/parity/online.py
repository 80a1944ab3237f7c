"""Online parity as the running gateway holds it: the shadow checks (sampling hook and runner),
the verdicts, their metrics, the live table's status file, and what a conclusion does:

- the loss exceeds the tolerance: the task leaves the variant's ``allowed_tasks`` in the config
  file (written with its evidence by the command shell's recorder, as ``duet parity
  --write-policy`` does) and the running policy through the hot-reload path (in memory when the
  gateway runs without a file, or the write failed); ``duet_parity_revoked`` goes to 1. The task
  comes back only through an explicit offline run (``duet parity --write-policy``).
- parity holds for a ``shadow``-stage variant: the task opens on it (``allowed_tasks`` plus a
  canary share of 1 for the task), the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from gateway.config.types import DuetConfig
from gateway.domain import Rollout, RolloutStage, Variant
from gateway.flow.exchange import Attempt, Exchange
from gateway.outcome import Outcome
from gateway.parity.journal import Journal, Revised
from gateway.parity.metrics import ParityMetrics
from gateway.parity.ports import ParityTools, Revision
from gateway.parity.sequential import Conclusion
from gateway.parity.shadow import OnConclusion, ShadowChecks, ShadowParts
from gateway.parity.verdicts import OnlineVerdicts

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PolicyHost:
    """The running gateway as online parity changes its policy: its config file (None: none),
    the config it runs, its reload from the file, and switching to a config in memory."""

    config_path: str | None
    config: Callable[[], DuetConfig]
    reload: Callable[[], Awaitable[bool]]
    apply: Callable[[DuetConfig], Awaitable[None]]


def with_task(config: DuetConfig, variant_key: str, task: str, *, allowed: bool) -> DuetConfig:
    """``config`` with ``task`` taken off (or, for a shadow variant, opened on) ``variant_key``."""
    model_name, _, name = variant_key.partition(":")
    model = config.models[model_name]
    variant = model.variants[name]
    everything = frozenset(config.policy.tasks)
    current = everything if variant.allowed_tasks is None else variant.allowed_tasks
    changed: Variant
    if allowed:
        shares = dict(variant.rollout.canary_shares) | {task: 1.0}
        rollout = Rollout(RolloutStage.CANARY, tuple(sorted(shares.items())))
        changed = dataclasses.replace(variant, allowed_tasks=current | {task}, rollout=rollout)
    else:
        changed = dataclasses.replace(variant, allowed_tasks=current - {task})
    models = {**config.models, model_name: dataclasses.replace(model, variants={**model.variants, name: changed})}
    return dataclasses.replace(config, models=models)


class OnlineParity:
    """Built once by the runtime; ``dispatched`` and ``done`` are its hook subscribers."""

    def __init__(self, host: PolicyHost, tools: ParityTools, metrics: ParityMetrics,
                 parts: Callable[[OnConclusion], ShadowParts], journal: Journal) -> None:
        self._host = host
        self._journal = journal
        self._tools = tools
        self._metrics = metrics
        self.verdicts = OnlineVerdicts(host.config().online_parity.records_kept)
        self.checks = ShadowChecks(parts(self._concluded), self.verdicts, on_pair=self._write_status)

    def dispatched(self, exchange: Exchange, attempt: Attempt) -> None:
        self.checks.dispatched(exchange, attempt)

    def done(self, exchange: Exchange, outcome: Outcome) -> None:
        self.checks.done(exchange, outcome)

    async def stop(self) -> None:
        await self.checks.stop()

    async def _concluded(self, variant: str, task: str, conclusion: Conclusion) -> None:
        try:
            await self._act(variant, task, conclusion)
        finally:
            self.verdicts.acted(variant, task)

    async def _act(self, variant: str, task: str, conclusion: Conclusion) -> None:
        config = self._host.config()
        model, _, name = variant.partition(":")
        current = config.models[model].variants[name]
        if conclusion is Conclusion.LOSS and current.allows(task):
            await self._change(Revision(variant, task, False, self.verdicts.evidence(variant, task)))
            self._metrics.revoked.labels(variant, task).set(1)
            self._journal.record(Revised(variant, task, False, time.time()))
        elif conclusion is Conclusion.PARITY and current.rollout.stage is RolloutStage.SHADOW:
            await self._change(Revision(variant, task, True, self.verdicts.evidence(variant, task)))
            self._metrics.opened.labels(variant, task).set(1)
            self._journal.record(Revised(variant, task, True, time.time()))
        else:
            log.info("online parity: %s on %s concluded %s; policy unchanged", task, variant, conclusion.value)

    async def _change(self, revision: Revision) -> None:
        """Record the revision in the file and reload; in memory when that is not possible."""
        verb = "opened" if revision.allowed else "revoked"
        path = self._host.config_path
        if path is not None:
            try:
                source = await asyncio.to_thread(self._tools.record, path, revision)
                if await self._host.reload() and self._applied(revision):
                    log.warning("online parity %s %s on %s (%s)", verb, revision.task, revision.variant, source)
                    return
                log.error("online parity: the reload did not apply the %s %s; applying it in memory", verb, revision.task)
            except Exception:  # the running policy must change even when the file cannot
                log.exception("online parity: could not record %s %s on %s in %s; applying it in memory",
                              verb, revision.task, revision.variant, path)
        await self._host.apply(with_task(self._host.config(), revision.variant, revision.task, allowed=revision.allowed))
        log.warning("online parity %s %s on %s (in memory)", verb, revision.task, revision.variant)

    def _applied(self, revision: Revision) -> bool:
        model, _, name = revision.variant.partition(":")
        variant = self._host.config().models[model].variants[name]
        return variant.allows(revision.task) == revision.allowed

    def _write_status(self) -> None:
        """The live table for ``duet parity status`` (atomically: a reader never sees half)."""
        target = self._host.config().online_parity.status_file
        if target is None:
            return
        status = {"written_at": time.time(), "table": self.verdicts.table()}
        path = Path(target)
        try:
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                json.dump(status, f, indent=1)
            os.replace(temporary, path)
        except OSError as exc:  # the table is for people; the verdicts go on without it
            log.warning("online parity: cannot write the status file %s: %s", path, exc)
