"""The online verdicts: one sequential test (gateway.parity.sequential) per (variant, task type),
fed by the shadow checks' pairs, and the last pairs' records (hashes, scores, timings; text only
when the operator keeps it). Its table is what ``duet parity status`` prints."""

from __future__ import annotations

import collections
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gateway.config.online_parity import OnlineParitySettings
from gateway.parity.sequential import Conclusion, Design, TestState

Key = tuple[str, str]  # (variant key "model:variant", task type)


@dataclass(frozen=True, slots=True)
class PairRecord:
    """One shadow check's pair. Hashes are sha256 prefixes of the request body and each answer's
    text; ``texts`` only with ``keep_text``."""

    at: float
    variant: str
    task: str
    request_sha256: str
    standard_sha256: str
    candidate_sha256: str
    standard_score: float
    candidate_score: float
    measure: str
    detail: str
    deterministic: bool  # temperature 0 or a seed: both runs reproducible
    standard_ms: float
    candidate_ms: float
    texts: Mapping[str, str] | None = None


@dataclass(slots=True)
class _Entry:
    design: Design
    state: TestState = field(default_factory=TestState)
    epoch: int = 0
    started_at: float = 0.0
    # A conclusion drawn and not yet acted on (the policy change under way): meanwhile the running
    # config still allows the task, which must not read as an offline run allowing it again.
    acting: bool = False


def design_for(settings: OnlineParitySettings, task: str) -> Design:
    return Design(settings.tolerance_for(task), 1 - settings.confidence, settings.bet)


class OnlineVerdicts:
    """Mutable, owned by one gateway's runtime."""

    def __init__(self, records_kept: int = 1000) -> None:
        self._tests: dict[Key, _Entry] = {}
        self._records: collections.deque[PairRecord] = collections.deque(maxlen=records_kept)

    def add(self, record: PairRecord, design: Design, *, allowed_now: bool) -> Conclusion | None:
        """Add a pair; returns the conclusion when this pair drew it (else None). A test whose
        loss verdict was lifted since (``allowed_now``: an explicit offline run allowed the task
        again) starts afresh, as does one whose design changed (a reload)."""
        key = (record.variant, record.task)
        entry = self._tests.get(key)
        lifted = entry is not None and entry.state.conclusion is Conclusion.LOSS and allowed_now and not entry.acting
        if entry is None or lifted or entry.design != design:
            epoch = 0 if entry is None else entry.epoch + 1
            entry = self._tests[key] = _Entry(design, epoch=epoch, started_at=record.at)
        before = entry.state.conclusion
        entry.state = entry.state.add(design, record.standard_score - record.candidate_score)
        self._records.append(record)
        if entry.state.conclusion is before:
            return None
        entry.acting = True
        return entry.state.conclusion

    def acted(self, variant: str, task: str) -> None:
        """The conclusion's policy change is in the running config."""
        entry = self._tests.get((variant, task))
        if entry is not None:
            entry.acting = False

    def state(self, variant: str, task: str) -> TestState | None:
        entry = self._tests.get((variant, task))
        return None if entry is None else entry.state

    def evidence(self, variant: str, task: str, recent: int = 50) -> dict[str, Any]:
        """What a written verdict carries: the test's parameters and state, and its last pairs."""
        entry = self._tests[(variant, task)]
        pairs = [asdict(r) for r in self._records if (r.variant, r.task) == (variant, task)][-recent:]
        for pair in pairs:
            pair.pop("texts", None)
        return {"variant": variant, "task": task, "test": "betting (always-valid)", "design": asdict(entry.design),
                "state": {**asdict(entry.state), "mean_loss": entry.state.mean_loss}, "epoch": entry.epoch,
                "started_at": entry.started_at, "recent_pairs": pairs}

    def table(self) -> list[dict[str, Any]]:
        """One row per (variant, task): pairs, mean loss, each side's evidence as a fraction of the
        threshold (1 = concluded), the conclusion."""
        rows = []
        for (variant, task), entry in sorted(self._tests.items()):
            state, design = entry.state, entry.design
            rows.append({
                "variant": variant, "task": task, "pairs": state.pairs, "mean_loss": round(state.mean_loss, 4),
                "tolerance": design.tolerance, "confidence": round(1 - design.alpha, 4),
                "evidence_loss": round(state.log_wealth_loss / design.threshold, 4),
                "evidence_parity": round(state.log_wealth_parity / design.threshold, 4),
                "conclusion": state.conclusion.value, "epoch": entry.epoch,
            })
        return rows

    def records(self) -> list[PairRecord]:
        return list(self._records)
