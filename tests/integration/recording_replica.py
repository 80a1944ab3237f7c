"""A replica that records what reaches it: every request's method, path, headers and body, answered
with a short vLLM-shaped completion (JSON or SSE). For tests that must see exactly what the gateway
sends upstream (headers passed on, fields passed through, requests that must never arrive)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
import uvicorn
import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.ports import free_port
from tests.tls_certs import TlsFiles

from .cluster import demo_config


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


def _completion(model: str) -> bytes:
    return orjson.dumps({
        "id": "chatcmpl-rec", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    })


def _stream(model: str) -> bytes:
    chunk = {"id": "chatcmpl-rec", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    usage = {**chunk, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    return b"data: " + orjson.dumps(chunk) + b"\n\ndata: " + orjson.dumps(usage) + b"\n\ndata: [DONE]\n\n"


def _event(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _stream_for(path: str, model: str) -> bytes:
    """A stream shaped as the path's API ends one (its framing in gateway/endpoints/): one that does not end
    the way vLLM's does is a cut stream to the gateway, and counts against the replica."""
    if path == "/v1/responses":
        done = {"type": "response.completed", "response": {"id": "resp-rec", "object": "response", "model": model,
                                                           "status": "completed", "output": []}}
        return _event("response.completed", done)
    if path == "/v1/messages":
        return _event("message_stop", {"type": "message_stop"})
    return _stream(model)


class RecordingReplica:
    """uvicorn in a thread on a free loopback port; ``requests`` lists the inference calls."""

    def __init__(self, tls: TlsFiles | None = None) -> None:
        """``tls``: serve https://localhost:port with that certificate instead of plain HTTP."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}" if tls is None else f"https://localhost:{self.port}"
        self.requests: list[Recorded] = []
        # Seconds to wait before answering an inference call (to hold requests open).
        self.delay_s = 0.0
        # (status, body) to answer inference calls with instead of a completion (a failing replica).
        self.failure: tuple[int, bytes] | None = None
        certificate = {} if tls is None else {"ssl_certfile": str(tls.cert), "ssl_keyfile": str(tls.key)}
        config = uvicorn.Config(self._app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                interface="asgi3", **certificate)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["path"] in ("/health", "/metrics"):
            return await self._reply(send, 200, b"", b"text/plain")
        self.requests.append(Recorded(scope["method"], scope["path"], headers, body))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.failure is not None:
            return await self._reply(send, self.failure[0], self.failure[1], b"text/plain")
        try:
            data = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):  # as vLLM does (its validation handler): a 400, not a crash
            error = {"error": {"message": "invalid JSON body", "type": "BadRequestError", "param": None, "code": 400}}
            return await self._reply(send, 400, orjson.dumps(error), b"application/json")
        model = str(data.get("model", ""))
        if data.get("stream"):
            return await self._reply(send, 200, _stream_for(scope["path"], model), b"text/event-stream")
        await self._reply(send, 200, _completion(model), b"application/json")

    @staticmethod
    async def _reply(send: Any, status: int, body: bytes, content_type: bytes) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def start(self) -> RecordingReplica:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise TimeoutError("recording replica did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def __enter__(self) -> RecordingReplica:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


@contextmanager
def gateway_over_recorders(tmp: Path, edit: Callable[[dict[str, Any]], None] | None = None,
                           env: dict[str, str] | None = None, tls: TlsFiles | None = None,
                           ) -> Iterator[tuple[GatewayProcess, dict[str, RecordingReplica]]]:
    """The demo config with a recording replica behind each variant (over TLS with ``tls``), and a
    gateway in front."""
    with ExitStack() as stack:
        replicas = {v: stack.enter_context(RecordingReplica(tls)) for v in ("standard", "fast")}
        raw = demo_config({v: r.url for v, r in replicas.items()})
        if edit is not None:
            edit(raw)
        config_path = tmp / "duet.yaml"
        config_path.write_text(yaml.safe_dump(raw, sort_keys=False))
        gateway = stack.enter_context(GatewayProcess(config_path, log_path=tmp / "gateway.log", env=env))
        yield gateway, replicas
