"""A fake Kubernetes API server on loopback for InferencePool discovery: it serves one
``InferencePool`` (inference.networking.k8s.io/v1), lists pods by ``labelSelector`` with a
``resourceVersion``, and streams watch events (one JSON object a line) from a version on, as the
real API server does. A real cluster cannot run on this machine; this server stands in for one.

The test drives it: ``put_pod`` / ``delete_pod`` change pods (an event each), ``end_watches``
ends the open watches as a server timeout would, ``expire`` compacts history so that resuming
from an older version answers 410 Gone (as an ERROR event, or as the watch's HTTP status)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from aiohttp import web

from tests.loopback_app import serve

NAMESPACE = "duet"
T = TypeVar("T")


def pool(name: str = "smollm2", match_labels: dict[str, str] | None = None, ports: tuple[int, ...] = (8000,)) -> dict[str, Any]:
    return {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"selector": {"matchLabels": match_labels or {"duet.dev/model": "smollm2"}},
                     "targetPorts": [{"number": p} for p in ports],
                     "endpointPickerRef": {"name": "duet-epp", "port": {"number": 9002}}}}


def pod(name: str, variant: str | None, ip: str, *, ready: bool = True, model: str = "smollm2") -> dict[str, Any]:
    labels = {"duet.dev/model": model, "app.kubernetes.io/name": "vllm"}
    if variant is not None:
        labels["duet.dev/variant"] = variant
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "status": {"phase": "Running", "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _matches(obj: dict[str, Any], selector: str) -> bool:
    labels = obj["metadata"].get("labels") or {}
    pairs = [term.split("=", 1) for term in selector.split(",") if term]
    return all(labels.get(key) == value for key, value in pairs)


class FakePoolApi:
    def __init__(self, inference_pool: dict[str, Any] | None = None) -> None:
        self.pool: dict[str, Any] | None = inference_pool if inference_pool is not None else pool()
        self.pods: dict[str, dict[str, Any]] = {}
        self.version = 100
        self.history: list[tuple[int, str, dict[str, Any]]] = []  # (version, type, pod)
        self.compacted = 0  # watches from a version below this answer 410
        self.gone_as_status = False  # 410 as the watch's HTTP status rather than an ERROR event
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._changed = asyncio.Condition()
        self._ending = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def watches(self) -> list[dict[str, str]]:
        return [query for path, query in self.requests if query.get("watch") == "1"]

    def lists(self) -> list[dict[str, str]]:
        return [query for path, query in self.requests if path.endswith("/pods") and query.get("watch") != "1"]

    async def put_pod(self, obj: dict[str, Any]) -> None:
        kind = "MODIFIED" if obj["metadata"]["name"] in self.pods else "ADDED"
        await self._record(kind, obj)

    async def delete_pod(self, name: str) -> None:
        await self._record("DELETED", self.pods[name])

    async def end_watches(self) -> None:
        async with self._changed:
            self._ending += 1
            self._changed.notify_all()

    async def expire(self) -> None:
        """Compact history past every version handed out: open watches get a 410 ERROR event."""
        async with self._changed:
            self.compacted = self.version + 1
            self._changed.notify_all()

    async def _record(self, kind: str, obj: dict[str, Any]) -> None:
        async with self._changed:
            self.version += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.version)
            if kind == "DELETED":
                self.pods.pop(obj["metadata"]["name"], None)
            else:
                self.pods[obj["metadata"]["name"]] = obj
            self.history.append((self.version, kind, obj))
            self._changed.notify_all()

    async def start(self) -> FakePoolApi:
        app = web.Application()
        app.router.add_get("/apis/inference.networking.k8s.io/v1/namespaces/{namespace}/inferencepools/{name}", self._pool)
        app.router.add_get("/api/v1/namespaces/{namespace}/pods", self._pods)
        self._runner, self.port = await serve(app, shutdown_timeout=0.1)
        return self

    async def stop(self) -> None:
        await self.end_watches()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _pool(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, dict(request.query)))
        if self.pool is None or request.match_info["name"] != self.pool["metadata"]["name"]:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        return web.json_response(self.pool)

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, dict(request.query)))
        selector = request.query.get("labelSelector", "")
        if request.query.get("watch") == "1":
            return await self._watch(request, selector)
        items = [p for p in self.pods.values() if _matches(p, selector)]
        return web.json_response({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": str(self.version)},
                                  "items": items})

    async def _watch(self, request: web.Request, selector: str) -> web.StreamResponse:
        since = int(request.query.get("resourceVersion") or self.version)
        if since < self.compacted and self.gone_as_status:
            return web.json_response({"kind": "Status", "code": 410, "reason": "Expired"}, status=410)
        response = web.StreamResponse()
        await response.prepare(request)
        with contextlib.suppress(ConnectionResetError):  # the watcher stopped and closed the stream
            await self._stream(response, since, selector, float(request.query.get("timeoutSeconds", "30")))
        return response

    async def _stream(self, response: web.StreamResponse, since: int, selector: str, timeout: float) -> None:
        ending = self._ending
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if since < self.compacted:
                status = {"kind": "Status", "code": 410, "reason": "Expired", "message": f"too old resource version: {since}"}
                await response.write(json.dumps({"type": "ERROR", "object": status}).encode() + b"\n")
                break
            for version, kind, obj in [h for h in self.history if h[0] > since]:
                since = version
                if _matches(obj, selector):
                    await response.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")
                elif kind == "MODIFIED":  # it no longer matches: the watch says it left
                    await response.write(json.dumps({"type": "DELETED", "object": obj}).encode() + b"\n")
            if self._ending != ending or loop.time() >= deadline:
                break
            news = lambda seen=since: self.version > seen or self.compacted > seen or self._ending != ending  # noqa: E731
            async with self._changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait_for(news), timeout=max(0.0, deadline - loop.time()))
        await response.write_eof()


class FakePoolApiThread:
    """The fake API server on its own event loop in a thread, for tests that drive processes
    synchronously; ``call`` runs one of its coroutines there and waits (bounded)."""

    def __init__(self, api: FakePoolApi) -> None:
        self.api = api
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-pool-api", daemon=True)

    def __enter__(self) -> FakePoolApiThread:
        self._thread.start()
        self.call(self.api.start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.call(self.api.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)
