"""What a key has left of its per-minute limits, as the quota book read them in the step that
admitted (or refused) the request, and the headers that tell its client so: OpenAI's names and
formats, so that clients which pace themselves by them (the openai SDK's users, LiteLLM's router)
read Duet's limits as they read OpenAI's.

- ``x-ratelimit-limit-requests`` / ``-tokens``: the tier's ``requests_per_min`` / ``tokens_per_min``;
- ``x-ratelimit-remaining-requests``: what the last 60 s leave after this request was counted;
  ``-tokens``: what they leave of tokens charged so far (a request's tokens are charged when it
  ends, so this one's are not in it yet);
- ``x-ratelimit-reset-requests`` / ``-tokens``: how long until the window is back to its initial
  state (OpenAI's definition), i.e. until the newest second that counted leaves it; a Go-style
  duration ("0s", "850ms", "59.4s", "1m0s") as OpenAI writes them.

Reading them costs O(1): the windows are running totals whose newest second is known
(``gateway.access.window``, and its Lua twin in ``redis_quotas``). A tier without a limit has no
headers for it; a keyless gateway has none at all (``NO_HEADROOM``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.access.window import WINDOW_S


@dataclass(frozen=True, slots=True)
class WindowLeft:
    """One per-minute limit: ``limit``, what is left of it (0 to ``limit``) and the seconds until
    every amount counted has left the window (0.0: nothing counted)."""

    limit: int
    remaining: int
    reset_s: float

    @classmethod
    def of(cls, limit: int, used: int, newest_second: int | None, now: float) -> WindowLeft:
        """From the window's total ``used`` and the second its newest amount was counted in
        (None: empty) at ``now`` (wall-clock seconds)."""
        reset = 0.0 if newest_second is None or used <= 0 else max(0.0, newest_second + WINDOW_S - now)
        return cls(limit, min(limit, max(0, limit - used)), reset)


@dataclass(frozen=True, slots=True)
class Headroom:
    """The key's per-minute limits at admission (None: the tier has no such limit)."""

    requests: WindowLeft | None = None
    tokens: WindowLeft | None = None

    def headers(self) -> tuple[tuple[str, str], ...]:
        """The ``x-ratelimit-*`` headers, none for a limit the tier does not have."""
        out: list[tuple[str, str]] = []
        for kind, left in (("requests", self.requests), ("tokens", self.tokens)):
            if left is not None:
                out += [(f"x-ratelimit-limit-{kind}", str(left.limit)),
                        (f"x-ratelimit-remaining-{kind}", str(left.remaining)),
                        (f"x-ratelimit-reset-{kind}", duration(left.reset_s))]
        return tuple(out)


NO_HEADROOM = Headroom()


def duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration`` prints it (OpenAI's reset format), to the
    millisecond: "0s", "12ms", "1.5s", "6m0s", "1h2m3s"."""
    ms = round(max(0.0, seconds) * 1000)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest // 1000}.{rest % 1000:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    return f"{minutes}m{secs}" if minutes else secs
