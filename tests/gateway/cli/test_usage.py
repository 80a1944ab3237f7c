"""duet usage --savings: what it asks the gateway for, what it prints, and bad input answered
with the reason and an exit status (2: the command line; 1: the gateway refused)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from gateway.cli import main as duet

ROW = {"requests": 4, "fast_requests": 3, "fast_share": 0.75, "gpu_seconds": 1.5, "gpu_usd": 0.001,
       "standard_gpu_seconds": 6.0, "standard_gpu_usd": 0.004, "saved_usd": 0.003, "saved_share": 0.75}
REPORT = {"object": "savings", "months": ["2026-11", "2026-12"],
          "keys": [{"key_id": "key_a", "tenant": "acme", **ROW}], "tenants": [{"tenant": "acme", **ROW}],
          "total": ROW, "parity": [{"variant": "m:fast", "task": "code", "status": "revoked", "conclusion": "loss",
                                    "pairs": 40, "revised_at": 1_796_000_000.0}]}


@pytest.fixture(autouse=True)
def admin_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUET_ADMIN_KEY", "admin-key-for-tests")


@contextmanager
def gateway(status: int, payload: dict[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """A loopback server answering every GET with ``payload``; yields its URL and the paths asked."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            assert self.headers["authorization"] == "Bearer admin-key-for-tests"
            asked.append(self.path)
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_savings_asks_for_the_period_key_and_tenant_and_prints_the_tables(capsys: pytest.CaptureFixture[str]) -> None:
    with gateway(200, REPORT) as (url, asked):
        assert duet(["usage", "--url", url, "--savings", "--tenant", "acme", "--since", "2026-11",
                     "--month", "2026-12"]) == 0
    (path,) = asked
    assert urlparse(path).path == "/v1/duet/savings"
    assert parse_qs(urlparse(path).query) == {"tenant": ["acme"], "since": ["2026-11"], "month": ["2026-12"]}
    out = capsys.readouterr().out
    assert "savings for 2026-11 to 2026-12" in out
    assert "key_a  acme" in out and "75.0%" in out and "0.003000" in out
    assert "m:fast   code  revoked  2026-11-30 00:53  loss" in out


def test_savings_as_json_is_the_gateways_report(capsys: pytest.CaptureFixture[str]) -> None:
    with gateway(200, REPORT) as (url, _):
        assert duet(["usage", "--url", url, "--savings", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == REPORT


@pytest.mark.parametrize("argv", [["--month", "2026-13"], ["--savings", "--since", "december"]])
def test_a_malformed_month_is_refused_before_asking(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        duet(["usage", "--url", "http://127.0.0.1:9", *argv])
    assert ended.value.code == 2
    assert "is not a month: write YYYY-MM" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--tenant", "acme"], ["--since", "2026-01"]])
def test_savings_options_need_savings(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert duet(["usage", "--url", "http://127.0.0.1:9", *argv]) == 2
    assert "need --savings" in capsys.readouterr().err


def test_the_gateways_refusal_is_printed_with_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    refusal = {"error": {"message": "since (2027-01) is after the last month (2026-12).", "param": "since"}}
    with gateway(400, refusal) as (url, _):
        assert duet(["usage", "--url", url, "--savings", "--since", "2027-01", "--month", "2026-12"]) == 1
    err = capsys.readouterr().err
    assert "HTTP 400" in err and "since (2027-01) is after the last month" in err


def test_without_the_admin_key_it_says_which_variable_to_set(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("DUET_ADMIN_KEY")
    assert duet(["usage", "--url", "http://127.0.0.1:9", "--savings"]) == 2
    assert "$DUET_ADMIN_KEY is not set" in capsys.readouterr().err
