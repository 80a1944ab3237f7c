"""Duet's own numbers for one load generator's run: its request and token counters from
``/metrics`` (read before and after the run) and its access-log lines for the run's requests
(one JSON line per answered request, with the client's ``x-request-id`` as ``request_id``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Set
from dataclasses import dataclass
from datetime import UTC, datetime

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True, slots=True)
class Counters:
    """Duet's counters at one moment: answered requests by status class, and output tokens."""

    ok: float
    failed: float
    output_tokens: float

    def minus(self, before: Counters) -> Counters:
        return Counters(self.ok - before.ok, self.failed - before.failed, self.output_tokens - before.output_tokens)


@dataclass(frozen=True, slots=True)
class AccessRecord:
    """One access-log line: the request id, status, TTFT (None when no token came) and the end
    time (seconds since the epoch, to the millisecond) and duration."""

    request_id: str
    status: int
    ttft_ms: float | None
    ended_s: float
    duration_ms: float
    output_tokens: int


def read_counters(metrics_text: str) -> Counters:
    """``duet_requests_total`` summed by status (< 400 ok, else failed) and
    ``duet_tokens_total{kind="output"}`` summed over models and variants."""
    ok = failed = tokens = 0.0
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == "duet_requests_total":
                if int(sample.labels["status"]) < 400:
                    ok += sample.value
                else:
                    failed += sample.value
            elif sample.name == "duet_tokens_total" and sample.labels.get("kind") == "output":
                tokens += sample.value
    return Counters(ok, failed, tokens)


def _epoch_s(stamp: str) -> float:
    """``2026-12-04T11:18:34.970Z`` (UTC) as seconds since the epoch."""
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def access_records(lines: Iterable[str], request_ids: Set[str] | None = None,
                   id_prefix: str | None = None) -> list[AccessRecord]:
    """The access-log records among ``lines`` whose request id is in ``request_ids`` or starts
    with ``id_prefix`` (other log lines, and other requests' lines, are skipped)."""
    records = []
    for line in lines:
        if '"duet.access"' not in line:
            continue
        entry = json.loads(line)
        request_id = str(entry.get("request_id"))
        wanted = (request_ids is not None and request_id in request_ids) or (
            id_prefix is not None and request_id.startswith(id_prefix))
        if not wanted:
            continue
        records.append(AccessRecord(request_id, int(entry["status"]), entry.get("ttft_ms"), _epoch_s(entry["ts"]),
                                    float(entry["duration_ms"]), int(entry.get("output_tokens") or 0)))
    return records


def requests_per_s(records: Iterable[AccessRecord]) -> float:
    """Completed requests over the span from the first one's start to the last one's end, as
    the gateway saw them (``nan`` for none)."""
    spans = [(r.ended_s - r.duration_ms / 1000, r.ended_s) for r in records if r.status < 400]
    if not spans:
        return float("nan")
    return len(spans) / (max(end for _, end in spans) - min(start for start, _ in spans))
