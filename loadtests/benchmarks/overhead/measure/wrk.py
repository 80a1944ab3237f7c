"""Load generation with Debian's ``wrk``: the Lua script that POSTs the chat body and reports
exact numbers, the command line, and the parser of what the script prints.

The script's ``done`` hook prints one ``WRK_RESULT {...}`` JSON line with wrk's own counters
and its latency histogram's percentiles in microseconds, so nothing is scraped from wrk's
human-readable table (whose units change between us, ms and s).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

RESULT_MARKER = "WRK_RESULT "

_DONE_HOOK = """\
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,"read_errors":%d,'
    .. '"write_errors":%d,"status_errors":%d,"timeouts":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,'
    .. '"mean_us":%.1f,"max_us":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
end
"""


@dataclass(frozen=True, slots=True)
class WrkResult:
    """One wrk run: counts, duration and latency percentiles (microseconds)."""

    requests: int
    duration_us: int
    errors: int
    p50_us: float
    p90_us: float
    p99_us: float
    mean_us: float
    max_us: float

    @property
    def rps(self) -> float:
        """Completed requests per second over the run (errors included, as wrk counts them)."""
        return self.requests / (self.duration_us / 1e6) if self.duration_us else 0.0

    @property
    def p50_ms(self) -> float:
        return self.p50_us / 1000

    @property
    def p99_ms(self) -> float:
        return self.p99_us / 1000


def render_script(body: bytes, api_key: str) -> str:
    """A wrk Lua script POSTing ``body`` as JSON with a bearer key, printing ``WRK_RESULT`` at the end."""
    text = body.decode()
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    eq = "=" * level
    return (
        'wrk.method = "POST"\n'
        f"wrk.body = [{eq}[{text}]{eq}]\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {api_key}"\n'
        f"{_DONE_HOOK}"
    )


def wrk_command(url: str, script: str, connections: int, duration_s: float, timeout_s: float = 10.0) -> list[str]:
    """wrk on one thread (it shares core 0 with the backend) with ``connections`` open at once."""
    return [
        "wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration_s))}s",
        f"--timeout={max(1, round(timeout_s))}s", "-s", script, url,
    ]


def parse_output(stdout: str) -> WrkResult:
    """The ``WRK_RESULT`` line of a wrk run's stdout as a ``WrkResult``.

    Errors are socket errors (connect, read, write, timeout) plus non-2xx/3xx responses.
    Raises ``ValueError`` when the line is missing (wrk failed before its ``done`` hook).
    """
    for line in stdout.splitlines():
        if line.startswith(RESULT_MARKER):
            raw = json.loads(line[len(RESULT_MARKER):])
            break
    else:
        raise ValueError(f"no {RESULT_MARKER.strip()} line in wrk output: {stdout[-500:]!r}")
    errors = sum(raw[key] for key in ("connect_errors", "read_errors", "write_errors", "status_errors", "timeouts"))
    return WrkResult(
        requests=raw["requests"], duration_us=raw["duration_us"], errors=errors,
        p50_us=float(raw["p50_us"]), p90_us=float(raw["p90_us"]), p99_us=float(raw["p99_us"]),
        mean_us=float(raw["mean_us"]), max_us=float(raw["max_us"]),
    )
