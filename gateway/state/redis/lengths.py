"""Output lengths shared through Redis (issue #16): every gateway plans with the distribution of
all gateways' answers, not only the ones it relayed.

Nothing on a request's path waits for Redis: ``add`` queues the answer's bucket in memory and
``expected`` reads a local copy. The replica store's background refresh (``gateway.state.redis.store``) calls
``exchange`` every ``sync_s``: one script folds the queued buckets into the shared histograms
and returns them all, in the same pipeline as the store's own refresh (no round trip of its own).
Until the first exchange answers, and while Redis is away, routing reads the gateway's own
histograms (``RedisStateStore.lengths``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from gateway.state.lengths import BUCKETS, RESCALE_ABOVE, LengthHistogram, LengthSettings, OutputLengths, bucket
from gateway.state.redis.link import Arg

log = logging.getLogger(__name__)


class SharedLengths:
    """``LengthEstimates`` read from the last exchange with Redis; see the module docstring."""

    # Buckets kept per (model, task) while Redis does not answer: beyond them the oldest go.
    pending_limit = 10_000

    def __init__(self, settings: LengthSettings, *, sync_s: float = 1.0) -> None:
        self._settings = settings
        self.sync_s = sync_s
        self._pending: dict[tuple[str, str], list[int]] = {}
        self._shared = OutputLengths(settings)
        self.loaded = False  # an exchange answered at least once

    def add(self, model: str, task: str, tokens: int) -> None:
        queued = self._pending.setdefault((model, task), [])
        queued.append(bucket(tokens))
        if len(queued) > self.pending_limit:
            del queued[:len(queued) - self.pending_limit]

    def expected(self, model: str, task: str) -> int | None:
        return self._shared.expected(model, task)

    def histogram(self, model: str, task: str) -> LengthHistogram | None:
        return self._shared.histogram(model, task)

    def take(self) -> tuple[list[Arg], dict[tuple[str, str], list[int]]]:
        """The script's arguments for the queued buckets (emptied; give them back with
        ``restore`` when Redis did not answer)."""
        taken, self._pending = self._pending, {}
        args: list[Arg] = [self._settings.half_life_samples, RESCALE_ABOVE, BUCKETS]
        for (model, task), buckets in taken.items():
            args += [field_name(model, task), " ".join(map(str, buckets))]
        return args, taken

    def restore(self, taken: dict[tuple[str, str], list[int]]) -> None:
        """Queue again what an exchange that failed took (older first, within the limit)."""
        for key, buckets in taken.items():
            queued = self._pending.setdefault(key, [])
            queued[:0] = buckets
            if len(queued) > self.pending_limit:
                del queued[:len(queued) - self.pending_limit]

    def apply(self, flat: Sequence[bytes]) -> None:
        """Take the shared histograms from the script's reply (HGETALL's flat list)."""
        for i in range(0, len(flat), 2):
            try:
                model, task = json.loads(flat[i])
                histogram = parse(flat[i + 1].decode(), self._settings.half_life_samples)
            except (ValueError, TypeError, IndexError):
                log.warning("output lengths: ignoring a malformed shared histogram %r", flat[i][:80])
                continue
            self._shared.replace(model, task, histogram)
        self.loaded = True


def field_name(model: str, task: str) -> str:
    """A (model, task)'s field in the shared hash, unambiguous whatever the names hold."""
    return json.dumps([model, task], separators=(",", ":"))


def parse(text: str, half_life_samples: float) -> LengthHistogram:
    """A histogram from the script's text: "samples total next_weight bucket:weight ..."."""
    samples, total, next_weight, *cells = text.split()
    weights = [0.0] * BUCKETS
    for cell in cells:
        index, weight = cell.split(":")
        weights[int(index)] = float(weight)
    return LengthHistogram(half_life_samples, weights, float(total), int(samples), float(next_weight))
