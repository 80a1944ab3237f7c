"""The engine model's vocabulary: what goes in (a request) and what comes out (events).

All times are virtual seconds on the engine's own clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class SimRequest:
    """One sequence to generate, as the engine sees it.

    ``prefix_hashes``: hashes of the prompt's full KV blocks, chained (block i's hash depends on
    blocks 0..i), so two prompts sharing a prefix share leading hashes; empty disables prefix
    caching for this request. ``natural_tokens``: the length the model would stop at on its
    own (EOS); ``None`` lets the engine draw it from the profile. ``task`` selects the
    speculative acceptance rate; ``priority`` orders it under priority scheduling.
    """

    request_id: str
    prompt_tokens: int
    max_tokens: int
    min_tokens: int = 0
    ignore_eos: bool = False
    natural_tokens: int | None = None
    task: str = "chat"
    prefix_hashes: tuple[int, ...] = ()
    priority: int = 0  # vLLM's: lower is scheduled earlier (only under priority scheduling)
    # Disaggregated prefill, as vLLM's ``kv_transfer_params`` ask for it: ``remote_decode``, this
    # engine computes the prompt and its first token and hands the KV off (``do_remote_decode``);
    # ``remote_prefill``, the prompt's KV comes from another engine over the link
    # (``do_remote_prefill``). Neither: the engine does both itself.
    remote_decode: bool = False
    remote_prefill: bool = False


class Refusal(StrEnum):
    """Why ``Engine.submit`` refused a request."""

    QUEUE_FULL = "queue_full"
    TOO_LONG = "too_long"
    DUPLICATE_ID = "duplicate_id"
    # A prefill-role engine asked to decode an answer, or a decode-role engine asked to prefill
    # a prompt (no KV transferred in): the router sent it to the wrong replica.
    PREFILL_ONLY = "prefill_only"
    DECODE_ONLY = "decode_only"


@dataclass(frozen=True, slots=True)
class TokensOut:
    """``count`` new tokens of ``request_id`` became available at ``time`` (one engine step;
    more than one token when speculative drafts were accepted). ``first`` marks the first."""

    request_id: str
    time: float
    count: int
    first: bool


@dataclass(frozen=True, slots=True)
class Finished:
    """A request left the engine: ``reason`` is ``stop``, ``length``, ``abort``, or ``error``
    (vLLM's FINISHED_ERROR: its transferred KV never arrived and the failure policy is to fail;
    it produced no token, and the caller falls back). ``kv_ready``: a ``remote_decode``
    request's prompt KV is computed and ready for a decode engine to pull.

    Times, as vLLM's request metrics define them: ``queued_s`` from reaching the engine (after
    the API server's ``frontend_s``) to first scheduling, ``ttft_s`` from arrival to first token,
    ``e2e_s`` from arrival to finish.
    """

    request_id: str
    time: float
    reason: str
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int
    queued_s: float
    ttft_s: float | None
    e2e_s: float
    preemptions: int = 0
    kv_ready: bool = False


Event = TokensOut | Finished


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """The engine's gauges at one instant (what vLLM's /metrics and /load report)."""

    time: float
    running: int
    waiting: int
    kv_cache_usage: float


@dataclass(slots=True)
class EngineCounters:
    """Monotonic totals since start, as vLLM's ``*_total`` counters (mutable: the engine adds)."""

    prompt_tokens: int = 0
    # Requests that produced their first token, and the sum of their TTFTs (the TTFT histogram's
    # _count and _sum, as a router reads them without the buckets).
    first_tokens: int = 0
    ttft_s_total: float = 0.0
    generation_tokens: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    preemptions: int = 0
    spec_drafts: int = 0
    spec_draft_tokens: int = 0
    spec_accepted_tokens: int = 0
    spec_accepted_per_position: list[int] = field(default_factory=list)  # index = draft position
    steps: int = 0
    # KV handed across engines: transfers received (and their bytes), and those that failed.
    kv_transfers: int = 0
    kv_transfer_bytes: int = 0
    kv_transfer_failures: int = 0
