"""Security properties of a running gateway with API keys on: keys hashed at rest and compared in
constant time, admin routes behind their own key, replica URLs only from config, client headers
not passed upstream, limits on headers and concurrent requests per key, and logs free of keys
and prompts. Recording replicas show exactly what reaches upstream."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import socket
import stat
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psutil
import pytest

from gateway.access import keys as keys_module
from gateway.access.keys import KeyRing, new_key
from gateway.api.app import create_fastapi, served_routes
from gateway.api.gate import ROUTES, SMALL_BODY_BYTES, Guard, Route
from tests.tls_certs import make_certificates

from .cluster import wait_until
from .recording_replica import RecordingReplica, gateway_over_recorders
from .schemathesis_run import run_schemathesis

ADMIN_KEY = "admin-" + uuid.uuid4().hex
BODY = {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
# What the gateway itself sends a replica; nothing else from the client may reach it.
UPSTREAM_HEADERS = {"host", "content-type", "content-length", "x-request-id", "x-duet-task"}


MAX_BODY = 128 * 1024


def with_keys(raw: dict[str, Any], failed_auth_per_min: int = 10_000) -> None:
    """Keys on; this module's tests present many wrong keys from one address, so the failed-auth
    limit is set out of their way (its own test sets it)."""
    raw["access"] = {"require_keys": True, "keys_file": "keys.json", "failed_auth_per_min": failed_auth_per_min,
                     "tiers": {"basic": {"max_concurrent_requests": 2}, "batch": {"priority": "batch"},
                               "metered": {"requests_per_min": 1000, "tokens_per_min": 1_000_000},
                               "thrifty": {"monthly_spend_limit_usd": 2.5 * hold_usd(raw)}}}
    raw["server"].update({"max_body_bytes": MAX_BODY, "metrics": "admin"})


def hold_usd(raw: dict[str, Any]) -> float:
    """What one request of ``BODY`` holds of its key's spend limit: its ceiling cost at the dearest
    variant (``gateway.access.reservation``: body bytes / 4 input tokens, max_tokens output)."""
    prices = [v["price"] for v in raw["models"]["smollm2"]["variants"].values()]
    input_tokens = -(-len(json.dumps(BODY).encode()) // 4)
    return max(input_tokens * p["input_per_mtok"] + BODY["max_tokens"] * p["output_per_mtok"] for p in prices) / 1e6


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("security")
    with gateway_over_recorders(tmp, edit=with_keys, env={"DUET_ADMIN_KEY": ADMIN_KEY}) as (gateway, replicas):
        yield gateway, replicas, tmp


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def post(gateway, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:  # type: ignore[no-untyped-def]
    return httpx.post(gateway.url + "/v1/chat/completions", json=body, headers=headers, timeout=10)


def make_key(gateway, tier: str = "basic") -> tuple[str, str]:  # type: ignore[no-untyped-def]
    reply = httpx.post(gateway.url + "/admin/keys", json={"name": f"k-{uuid.uuid4().hex[:6]}", "tier": tier},
                       headers=auth(ADMIN_KEY), timeout=10)
    assert reply.status_code == 201, reply.text
    return reply.json()["key"], reply.json()["id"]


# --- keys ----------------------------------------------------------------------------------------

def test_keys_are_stored_only_as_hashes_in_a_private_file(keyed):
    gateway, _, tmp = keyed
    secret, key_id = make_key(gateway)
    stored = (tmp / "keys.json").read_text()
    assert secret not in stored and secret[8:] not in stored
    record = next(k for k in json.loads(stored)["keys"] if k["id"] == key_id)
    assert record["hash"] == hashlib.sha256(secret.encode()).hexdigest()
    assert stat.S_IMODE((tmp / "keys.json").stat().st_mode) == 0o600
    listed = httpx.get(gateway.url + "/admin/keys", headers=auth(ADMIN_KEY), timeout=10).json()["data"]
    assert all("hash" not in k and "key" not in k for k in listed)


def test_a_presented_key_is_compared_in_constant_time(monkeypatch):
    secret, record = new_key("k", "basic", 0.0)
    compared: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys_module.hmac, "compare_digest", spy)
    ring = KeyRing([record])
    assert ring.find(secret) == record
    assert compared == [(record.hash, hashlib.sha256(secret.encode()).hexdigest())]
    # A wrong key is looked up by its own hash: nothing about a stored hash is compared or leaked.
    assert ring.find(secret + "x") is None


def test_admin_routes_need_the_admin_key_and_the_admin_key_is_not_an_api_key(keyed):
    gateway, _, _ = keyed
    user_key, _ = make_key(gateway)
    for method, path in (("GET", "/admin/keys"), ("POST", "/admin/reload"), ("GET", "/v1/duet/usage")):
        for headers in ({}, auth(user_key), auth(ADMIN_KEY + "x")):
            reply = httpx.request(method, gateway.url + path, headers=headers, timeout=10)
            assert reply.status_code == 401, (method, path, reply.text)
    assert post(gateway, BODY, auth(ADMIN_KEY)).status_code == 401
    assert post(gateway, BODY, auth(user_key)).status_code == 200


def test_the_dry_run_needs_a_key_and_plans_for_that_keys_tier(keyed):
    """The dry run goes through the same lifecycle as the proxy: the key is checked, and a tier
    held to batch plans as batch."""
    gateway, _, _ = keyed
    url = gateway.url + "/v1/duet/route"
    assert httpx.post(url, json=BODY, timeout=10).status_code == 401
    assert httpx.post(url, json=BODY, headers=auth("sk-duet-unknown"), timeout=10).status_code == 401
    basic, _ = make_key(gateway)
    batch, _ = make_key(gateway, "batch")
    planned = httpx.post(url, json=BODY, headers=auth(basic), timeout=10)
    assert planned.status_code == 200 and planned.json()["request"]["priority"] == "interactive"
    held = httpx.post(url, json=BODY, headers={**auth(batch), "x-duet-priority": "interactive"}, timeout=10)
    assert held.status_code == 200 and held.json()["request"]["priority"] == "batch"


def test_a_keys_tasks_name_the_task_of_its_requests_that_name_none(keyed):
    """The operator names the task once, on the key of the application that sends it; the dry run
    (the proxy's own lifecycle) shows it as the task and where it came from. An unknown task is
    refused when the key is made, not at its first request."""
    gateway, _, tmp = keyed
    made = httpx.post(gateway.url + "/admin/keys", json={"name": "pipeline", "tier": "basic", "tasks": ["extraction"]},
                      headers=auth(ADMIN_KEY), timeout=10)
    assert made.status_code == 201 and made.json()["tasks"] == ["extraction"], made.text
    stored = next(k for k in json.loads((tmp / "keys.json").read_text())["keys"] if k["id"] == made.json()["id"])
    assert stored["tasks"] == ["extraction"]
    url = gateway.url + "/v1/duet/route"
    planned = httpx.post(url, json=BODY, headers=auth(made.json()["key"]), timeout=10).json()["request"]
    assert (planned["task"], planned["task_source"]) == ("extraction", "key")
    plain, _ = make_key(gateway)
    assert httpx.post(url, json=BODY, headers=auth(plain), timeout=10).json()["request"]["task_source"] != "key"
    named = httpx.post(url, json=BODY, headers={**auth(made.json()["key"]), "x-duet-task": "chat"}, timeout=10)
    assert named.json()["request"]["task_source"] == "header"
    refused = httpx.post(gateway.url + "/admin/keys", json={"name": "x", "tier": "basic", "tasks": ["poetry"]},
                         headers=auth(ADMIN_KEY), timeout=10)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "tasks"


def test_admin_routes_are_off_without_an_admin_key_even_on_an_open_gateway(tmp_path):
    with gateway_over_recorders(tmp_path, env={"DUET_ADMIN_KEY": ""}) as (gateway, _):
        reply = httpx.post(gateway.url + "/admin/reload", headers=auth("anything"), timeout=10)
        assert reply.status_code == 403 and reply.json()["error"]["code"] == "admin_disabled"


# --- the gate: every route's key and body limit ------------------------------------------------

def raw_status(gateway, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> int:  # type: ignore[no-untyped-def]
    """The status of one request written by hand (a declared length the body never meets, a
    chunked body), read as soon as the status line arrives."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: duet\r\n{lines}\r\n".encode() + body)
        answer = b""
        while b"\r\n" not in answer and (piece := sock.recv(65536)):
            answer += piece
    return int(answer.split(b" ", 2)[1])


def chunked(size: int) -> bytes:
    piece = b"x" * 8192
    pieces = [piece] * (size // len(piece) + 1)
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"


def credential(route: Route, user_key: str) -> dict[str, str]:
    """What each guard accepts: the admin key for admin routes (and /metrics, set to admin here)."""
    return {Guard.OPEN: {}, Guard.KEY: auth(user_key)}.get(route.guard, auth(ADMIN_KEY))


def test_the_gates_table_names_every_route_the_gateway_serves() -> None:
    served = served_routes(create_fastapi(lambda: None))  # type: ignore[arg-type,return-value]
    assert served == {(r.method, r.path) for r in ROUTES.routes}
    assert {"/v1/chat/completions", "/v1/completions", "/admin/keys/{key_id}", "/metrics"} <= {p for _, p in served}
    with pytest.raises(RuntimeError, match="/v1/new"):
        ROUTES.covering(served | {("GET", "/v1/new")})


@pytest.mark.parametrize("route", ROUTES.routes, ids=lambda r: f"{r.method} {r.path}")
def test_every_route_wants_its_key_and_refuses_an_oversized_body_before_reading_it(keyed, route: Route) -> None:
    gateway, _, _ = keyed
    user_key, _ = make_key(gateway)
    path = route.path.replace("{key_id}", "key_0")
    url = gateway.url + path
    if route.guard is Guard.OPEN:
        assert httpx.request(route.method, url, timeout=10).status_code in (200, 503)
    else:
        for headers in ({}, auth("sk-duet-" + "x" * 43)):
            assert httpx.request(route.method, url, headers=headers, timeout=10).status_code == 401
    if route.guard in (Guard.ADMIN, Guard.METRICS):  # metrics are set to admin here
        # A user key is not enough, and the body is never looked at: one that fails validation
        # is 401, not 422.
        refused = httpx.request(route.method, url, headers=auth(user_key), content=b'{"nam', timeout=10)
        assert refused.status_code == 401
    limit = MAX_BODY if route.large_body else SMALL_BODY_BYTES
    # A declared length past the limit: 413 though no byte of the body was sent.
    declared = {**credential(route, user_key), "content-type": "application/json", "content-length": str(limit + 1)}
    assert raw_status(gateway, route.method, path, declared) == 413
    # A chunked body is read up to the limit only.
    streamed = {**credential(route, user_key), "content-type": "application/json", "transfer-encoding": "chunked"}
    assert raw_status(gateway, route.method, path, streamed, chunked(limit)) == 413


def test_schemathesis_over_every_route_with_keys_on_gets_no_5xx_and_does_not_crash_the_gateway(keyed, tmp_path):
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway)
    before = sum(len(r.requests) for r in replicas.values())
    generated = run_schemathesis(gateway.url, tmp_path, api_key=key, admin_key=ADMIN_KEY)
    assert generated >= 1000
    # Valid generated requests got past the key check and through to the replicas.
    assert sum(len(r.requests) for r in replicas.values()) - before >= 20
    assert gateway.process is not None and gateway.process.poll() is None
    assert httpx.get(gateway.url + "/health", timeout=5).status_code == 200
    assert "unexpected error" not in gateway.log_path.read_text()


def test_the_proxy_takes_a_chunked_body_within_the_limit(keyed):
    gateway, _, _ = keyed
    key, _ = make_key(gateway)
    body = json.dumps(BODY).encode()
    reply = httpx.post(gateway.url + "/v1/chat/completions", content=iter([body[:10], body[10:]]),
                       headers={**auth(key), "content-type": "application/json"}, timeout=10)
    assert reply.status_code == 200, reply.text


def test_metrics_set_to_admin_need_the_admin_key(keyed):
    gateway, _, _ = keyed
    assert httpx.get(gateway.url + "/metrics", timeout=10).status_code == 401
    assert b"duet_requests" in httpx.get(gateway.url + "/metrics", headers=auth(ADMIN_KEY), timeout=10).content


def test_a_flood_of_bad_keys_costs_flat_cpu_and_memory_and_real_keys_keep_working(tmp_path):
    """3,000 unknown keys from one address, in two rounds: 30 are told 401 (the limit), the rest
    429 with Retry-After unchecked; the second round costs the gateway no more CPU than the first
    and no memory, and a real key from the same address is served throughout."""
    edit = functools.partial(with_keys, failed_auth_per_min=30)
    with gateway_over_recorders(tmp_path, edit=edit, env={"DUET_ADMIN_KEY": ADMIN_KEY}) as (gateway, _):
        key, _ = make_key(gateway)
        assert gateway.process is not None
        process = psutil.Process(gateway.process.pid)
        with httpx.Client(base_url=gateway.url, timeout=10) as client:
            def flood(first: int) -> tuple[Counter[int], float]:
                before = process.cpu_times()
                seen: Counter[int] = Counter()
                for i in range(first, first + 1500):
                    reply = client.post("/v1/chat/completions", json=BODY, headers=auth(f"sk-duet-flood-{i:06d}"))
                    seen[reply.status_code] += 1
                    assert reply.status_code == 401 or int(reply.headers["retry-after"]) >= 1
                after = process.cpu_times()
                return seen, (after.user + after.system) - (before.user + before.system)

            first, cpu_first = flood(0)
            assert first == {401: 30, 429: 1470}
            assert client.post("/v1/chat/completions", json=BODY, headers=auth(key)).status_code == 200
            rss = process.memory_info().rss
            second, cpu_second = flood(1500)
            assert second == {429: 1500}
            print(f"bad-key flood: gateway CPU {cpu_first / 1.5:.3f} then {cpu_second / 1.5:.3f} ms per "
                  f"request; RSS {process.memory_info().rss - rss:+d} bytes")
            assert cpu_second <= cpu_first * 1.5 + 0.3
            assert process.memory_info().rss - rss < 8 * 1024 * 1024
            assert client.post("/v1/chat/completions", json=BODY, headers=auth(key)).status_code == 200


def test_https_replicas_are_served_over_verified_tls(tmp_path):
    """Both variants' replicas behind TLS with a CA made for the test: the gateway checks them
    healthy and proxies to them over TLS (non-stream and stream) once the config names the CA."""
    files = make_certificates(tmp_path)

    def trust(raw: dict[str, Any]) -> None:
        for variant in raw["models"]["smollm2"]["variants"].values():
            variant["ca_bundle"] = str(files.ca)

    with gateway_over_recorders(tmp_path, edit=trust, tls=files) as (gateway, replicas):
        assert all(r.url.startswith("https://localhost:") for r in replicas.values())
        for pinned in ("smollm2:standard", "smollm2:fast"):
            assert post(gateway, {**BODY, "model": pinned}, {}).status_code == 200
            streamed = post(gateway, {**BODY, "model": pinned, "stream": True}, {})
            assert streamed.status_code == 200 and streamed.text.endswith("data: [DONE]\n\n")
        assert all(len(r.requests) == 2 for r in replicas.values())


# --- where requests go, and what goes with them --------------------------------------------------

def test_no_request_field_or_header_can_point_the_gateway_at_another_url(keyed):
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway)
    seen = {variant: len(rep.requests) for variant, rep in replicas.items()}
    with RecordingReplica() as canary:
        hostport = canary.url.removeprefix("http://")
        fields = {"api_base": canary.url, "base_url": canary.url, "url": canary.url, "endpoint": canary.url,
                  "extra_body": {"api_base": canary.url}}
        headers = {**auth(key), "host": hostport, "x-forwarded-host": hostport, "x-forwarded-proto": "http",
                   "forwarded": f"host={hostport}", "x-duet-replica": canary.url, "x-duet-upstream": canary.url,
                   "x-original-url": canary.url + "/v1/chat/completions"}
        served = httpx.post(gateway.url + "/v1/chat/completions", json={**BODY, **fields}, headers=headers, timeout=10)
        assert served.status_code == 200
        for model in (canary.url, f"smollm2@{hostport}", "http://127.0.0.1:1/v1", "../../smollm2"):
            refused = post(gateway, {**BODY, "model": model}, auth(key))
            assert refused.status_code == 404
        # An absolute-form request target naming the canary.
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
            body = json.dumps(BODY).encode()
            head = (f"POST {canary.url}/v1/chat/completions HTTP/1.1\r\nHost: {hostport}\r\nAuthorization: Bearer {key}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
            sock.sendall(head.encode() + body)
            answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 ")
        assert canary.requests == []
    assert all(r.path in ("/v1/chat/completions", "/v1/completions")
               for variant, rep in replicas.items() for r in rep.requests[seen[variant]:])


def test_client_headers_do_not_reach_the_replica(keyed):
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway)
    sent = {**auth(key), "cookie": "session=secret", "proxy-authorization": "Basic c2VjcmV0", "te": "trailers",
            "keep-alive": "timeout=5", "x-forwarded-for": "10.0.0.1", "x-real-ip": "10.0.0.1",
            "x-duet-replica": "smollm2/standard/0", "x-duet-variant": "standard", "x-duet-anything": "1",
            "x-sim-fail": "500", "x-api-key": "secret", "openai-organization": "org"}
    before = {v: len(r.requests) for v, r in replicas.items()}
    reply = post(gateway, BODY, sent)
    assert reply.status_code == 200
    assert reply.headers["x-duet-route"] != "pinned"  # x-duet-replica/x-duet-variant pin nothing
    arrived = [r for v, rep in replicas.items() for r in rep.requests[before[v]:]]
    assert len(arrived) == 1
    assert set(arrived[0].headers) <= UPSTREAM_HEADERS, arrived[0].headers
    assert arrived[0].headers["x-duet-task"] == "chat"


@pytest.mark.parametrize("claimed", ['abc"; drop', "x" * 300, "id with spaces", "é-accent"])
def test_an_untidy_request_id_is_replaced_not_echoed_or_forwarded(keyed, claimed):
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway)
    reply = httpx.post(gateway.url + "/v1/chat/completions", json=BODY,
                       headers={**auth(key), "x-request-id": claimed.encode("utf-8")}, timeout=10)
    assert reply.status_code == 200
    assert reply.headers["x-request-id"] != claimed and len(reply.headers["x-request-id"]) == 24
    tidy = post(gateway, BODY, {**auth(key), "x-request-id": "req-42.a:b"})
    assert tidy.headers["x-request-id"] == "req-42.a:b"


def test_an_upstream_failure_reaches_the_client_as_a_generic_error_with_the_request_id(keyed):
    """Both replicas answer 500 with text naming an address: the client's 502 names neither the
    replicas, their addresses nor what they said, only the request id; the log has the details."""
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway)
    canary = f"CANARY-UPSTREAM-{uuid.uuid4().hex} db at 10.1.2.3:5432"
    for replica in replicas.values():
        replica.failure = (500, canary.encode())
    try:
        reply = post(gateway, BODY, {**auth(key), "x-request-id": "req-leak-1"})
    finally:
        for replica in replicas.values():
            replica.failure = None
    assert reply.status_code == 502, reply.text
    message = reply.json()["error"]["message"]
    assert "req-leak-1" in message
    for secret in ("CANARY", "10.1.2.3", "smollm2/", "127.0.0.1", *(r.url for r in replicas.values()),
                   *(str(r.port) for r in replicas.values())):
        assert secret not in reply.text, secret
    wait_until(lambda: canary in gateway.log_path.read_text(), what="the upstream's text in the log")
    assert "req-leak-1" in gateway.log_path.read_text()


def test_ratelimit_headers_come_with_answers_and_with_errors_after_admission(keyed):
    """The in-memory quota book's x-ratelimit-* headers (the Redis one: test_redis_gateways.py): on
    an answer, and on the 502 of a request admitted (and counted) before its replicas failed."""
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway, "metered")
    answered = post(gateway, BODY, auth(key))
    assert answered.status_code == 200
    assert answered.headers["x-ratelimit-limit-requests"] == "1000"
    assert answered.headers["x-ratelimit-remaining-requests"] == "999"
    assert answered.headers["x-ratelimit-limit-tokens"] == "1000000"
    for replica in replicas.values():
        replica.failure = (500, b"down")
    try:
        failed = post(gateway, BODY, auth(key))
    finally:
        for replica in replicas.values():
            replica.failure = None
    assert failed.status_code == 502, failed.text
    assert failed.headers["x-ratelimit-remaining-requests"] == "998"
    # The first answer's tokens were charged when it ended: the second request saw them.
    assert int(failed.headers["x-ratelimit-remaining-tokens"]) < 1_000_000
    assert "x-ratelimit-limit-requests" not in post(gateway, BODY, auth(make_key(gateway)[0])).headers  # no limits


# --- limits --------------------------------------------------------------------------------------

def test_headers_over_the_limit_are_431_and_the_gateway_carries_on(keyed):
    gateway, _, _ = keyed
    key, _ = make_key(gateway)
    huge = post(gateway, BODY, {**auth(key), "x-filler": "a" * 40_000})
    assert huge.status_code == 431 and huge.json()["error"]["code"] == "request_header_fields_too_large"
    many = {**auth(key), **{f"x-h{i}": "v" * 100 for i in range(400)}}
    assert post(gateway, BODY, many).status_code == 431
    long_url = httpx.post(gateway.url + "/v1/chat/completions?" + "q" * 40_000, json=BODY, headers=auth(key), timeout=10)
    assert long_url.status_code == 431
    assert httpx.post(gateway.url + "/v1/chat/completions", json=BODY, headers={**auth(key), "x-filler": "a" * 8_000},
                      timeout=10).status_code == 200


def test_a_key_may_hold_only_its_tiers_number_of_concurrent_requests(keyed):
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway)  # tier basic: max_concurrent_requests 2
    other, _ = make_key(gateway)
    arrived_before = sum(len(r.requests) for r in replicas.values())
    for replica in replicas.values():
        replica.delay_s = 2.0
    try:
        with ThreadPoolExecutor(3) as pool:
            held = [pool.submit(httpx.post, gateway.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=30)
                    for _ in range(2)]
            started = threading.Event()

            def third() -> httpx.Response:
                while sum(len(r.requests) for r in replicas.values()) < arrived_before + 2:  # both held ones arrived
                    started.wait(0.02)
                return httpx.post(gateway.url + "/v1/chat/completions", json=BODY, headers=auth(key), timeout=30)

            refused = pool.submit(third).result()
            unrelated = pool.submit(httpx.post, gateway.url + "/v1/chat/completions", json=BODY, headers=auth(other), timeout=30)
            assert refused.status_code == 429 and refused.json()["error"]["param"] == "max_concurrent_requests"
            assert int(refused.headers["retry-after"]) >= 1
            assert [f.result().status_code for f in held] == [200, 200]
            assert unrelated.result().status_code == 200  # the limit is per key
    finally:
        for replica in replicas.values():
            replica.delay_s = 0.0
    # Slots come back when requests end, including refused ones: two at once work again.
    with ThreadPoolExecutor(2) as pool:
        again = list(pool.map(lambda _: httpx.post(gateway.url + "/v1/chat/completions", json=BODY, headers=auth(key),
                                                   timeout=30).status_code, range(2)))
    assert again == [200, 200]


def test_requests_in_flight_together_hold_their_cost_against_the_spend_limit(keyed):
    """A spend limit of 2.5 requests' estimates: of six sent at once, three are admitted (each holding
    its estimate while the replicas take 2 s) and three are 429 on the limit; checked against
    spend so far (nothing yet), all six would pass."""
    gateway, replicas, _ = keyed
    key, _ = make_key(gateway, "thrifty")
    raw = json.dumps(BODY).encode()
    for replica in replicas.values():
        replica.delay_s = 2.0
    try:
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda _: httpx.post(
                gateway.url + "/v1/chat/completions", content=raw, timeout=30,
                headers={**auth(key), "content-type": "application/json"}), range(6)))
    finally:
        for replica in replicas.values():
            replica.delay_s = 0.0
    assert sorted(a.status_code for a in answers) == [200] * 3 + [429] * 3
    assert all(a.json()["error"]["param"] == "monthly_budget_usd" for a in answers if a.status_code == 429)  # the wire name kept


# --- logs ----------------------------------------------------------------------------------------

def test_logs_hold_no_keys_and_no_prompts_by_default(keyed):
    gateway, _, _ = keyed
    key, _ = make_key(gateway)
    prompt = "CANARY-PROMPT-" + uuid.uuid4().hex
    wrong = "sk-duet-CANARY-WRONG-" + uuid.uuid4().hex
    chat = {**BODY, "messages": [{"role": "user", "content": prompt}]}
    assert post(gateway, chat, auth(key)).status_code == 200
    assert post(gateway, {**chat, "stream": True}, auth(key)).status_code == 200
    assert post(gateway, {**chat, "max_tokens": -1}, auth(key)).status_code == 400
    assert post(gateway, {**chat, "messages": prompt}, auth(key)).status_code == 400
    assert post(gateway, chat, auth(wrong)).status_code == 401
    assert httpx.post(gateway.url + "/v1/chat/completions", json=chat,
                      headers={**auth(key), "x-duet-task": prompt}, timeout=10).status_code == 400
    assert httpx.get(gateway.url + "/admin/keys", headers=auth(wrong), timeout=10).status_code == 401
    log = gateway.log_path.read_text()
    assert '"logger":"duet.access"' in log  # requests are logged ...
    for secret in (prompt, key, key[8:], wrong, ADMIN_KEY, hashlib.sha256(key.encode()).hexdigest()):
        assert secret not in log  # ... without their prompts or any key
