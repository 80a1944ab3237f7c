"""Per-task weights packed into one Python integer per feature, so that a request's scores are sums
of integers in C (``sum(map(table.__getitem__, columns))``) read off as fixed-width fields, not
numpy's take, product and reduce: between two requests of a busy gateway the cache is cold, and
numpy's per-call machinery cost more there than the arithmetic (``python -m
loadtests.benchmarks.overhead.cpu_cost``; the words detector's scores, the blend detector's words).

Task k's weight sits in bits [k * FIELD_BITS, (k + 1) * FIELD_BITS), in units of 2**-SCALE_BITS.
Exact for a float16 model (every float16 is a multiple of 2**-24); within 2**-25 a weight for a
float32 one. A 64-bit field holds the sum of thousands of weights of magnitude up to 2**16 without
carrying into the next (2**16 * 2**24 * 8,000 < 2**63); a sum starts from ``Fields.start`` (half
of every field), so each field stays in [0, 2**FIELD_BITS) and unpacks as an unsigned integer."""

from __future__ import annotations

import struct
from collections.abc import Sequence

SCALE_BITS = 24
FIELD_BITS = 64
HALF_FIELD = 1 << (FIELD_BITS - 1)
UNIT = 1 / (1 << SCALE_BITS)


def pack(row: Sequence[float]) -> int:
    """One feature's weights (one per task) as one integer."""
    return sum(round(float(w) * (1 << SCALE_BITS)) << (k * FIELD_BITS) for k, w in enumerate(row))


class Fields:
    """Reads a sum of packed rows started at ``start`` back as one value per task."""

    __slots__ = ("start", "_layout")

    def __init__(self, tasks: int) -> None:
        self.start = sum(HALF_FIELD << (k * FIELD_BITS) for k in range(tasks))
        self._layout = struct.Struct(f"<{tasks}Q")  # Q: an unsigned field of FIELD_BITS

    def raw(self, total: int) -> tuple[int, ...]:
        """Each task's field, still plus ``HALF_FIELD`` (differences between tasks are exact)."""
        return self._layout.unpack(total.to_bytes(self._layout.size, "little"))

    def values(self, total: int) -> list[float]:
        return self.scaled(self.raw(total))

    @staticmethod
    def scaled(raw: tuple[int, ...]) -> list[float]:
        """``raw``'s fields as the values they hold."""
        return [(field - HALF_FIELD) * UNIT for field in raw]
