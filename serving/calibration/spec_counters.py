"""vLLM's speculative-decoding counters in its ``/metrics`` text (pure: no I/O): what a probe's
requests drafted and had accepted, as the difference of a scrape before and one after.

vLLM 0.32 counts ``vllm:spec_decode_num_drafts_total`` (steps that drafted),
``vllm:spec_decode_num_draft_tokens_total`` and ``vllm:spec_decode_num_accepted_tokens_total``,
one series per engine (summed here); the simulator exports the same names. A record for readers
of a calibration (why a task gains what it gains): the speeds come from timing, not from these.
"""

from __future__ import annotations

from dataclasses import dataclass

_NAMES = {
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted_tokens",
}


@dataclass(frozen=True, slots=True)
class SpecCounters:
    """Drafting steps, draft tokens proposed and draft tokens accepted."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float

    def since(self, before: SpecCounters) -> SpecCounters:
        return SpecCounters(self.drafts - before.drafts, self.draft_tokens - before.draft_tokens,
                            self.accepted_tokens - before.accepted_tokens)

    def acceptance(self) -> float | None:
        """Share of draft tokens accepted, in [0, 1]; None when nothing was drafted."""
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens > 0 else None


def parse_spec_counters(text: str) -> SpecCounters | None:
    """The counters in a Prometheus text exposition; None when it has none of them (a replica
    that does not speculate, or does not export them). Raises ValueError on a counter line
    whose value is not a number."""
    totals = dict.fromkeys(_NAMES.values(), 0.0)
    seen = False
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith("vllm:spec_decode_num_"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name not in _NAMES:
            continue
        after_labels = line[line.rindex("}") + 1:] if "}" in line else line[len(name):]
        totals[_NAMES[name]] += float(after_labels.split()[0])
        seen = True
    return SpecCounters(**totals) if seen else None
