"""A tiny stand-in for the Kubernetes API server on loopback: serves recorded EndpointSliceList
JSON at the discovery path, records what it was asked, and can be told to fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.loopback_app import serve

SLICES = json.loads((Path(__file__).parent / "fixtures" / "endpointslices.json").read_text())


class FakeApiServer:
    def __init__(self, body: dict[str, Any] | None = None) -> None:
        self.body = copy.deepcopy(body if body is not None else SLICES)
        self.status = 200
        self.requests: list[web.Request] = []
        self._runner: web.AppRunner | None = None
        self.port = 0
        # True: answer a list with the slices the labelSelector matches (else: the whole body).
        self.by_labels = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeApiServer:
        app = web.Application()
        app.router.add_get("/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", self._slices)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _slices(self, request: web.Request) -> web.Response:
        self.requests.append(request)
        if self.status != 200:
            return web.json_response({"kind": "Status", "status": "Failure", "code": self.status}, status=self.status)
        if not self.by_labels:
            return web.json_response(self.body)
        # As the API server does: only the slices whose labels match every k=v of the selector.
        wanted = dict(pair.split("=", 1) for pair in request.query.get("labelSelector", "").split(",") if pair)
        items = [item for item in self.body.get("items", ())
                 if wanted.items() <= ((item.get("metadata") or {}).get("labels") or {}).items()]
        return web.json_response({**self.body, "items": items})
