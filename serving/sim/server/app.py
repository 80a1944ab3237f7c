"""The simulated replica's HTTP surface: a raw ASGI app with vLLM's routes, plus the admin
routes ``GET/POST /sim/faults``."""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from serving.sim.answers.script import AnswerScript
from serving.sim.dialects import pooling, vllm_bodies
from serving.sim.dialects.anthropic import Messages
from serving.sim.dialects.api_request import BadRequest, parse_call
from serving.sim.dialects.openai_responses import Responses
from serving.sim.engine.engine import Engine
from serving.sim.engine.kvtransfer import TransferFaults
from serving.sim.profile import Profile
from serving.sim.server import asgi, over_chat
from serving.sim.server.completions import CompletionService
from serving.sim.server.faults import FaultError, Faults, FaultSwitch
from serving.sim.server.metrics import SimMetrics
from serving.sim.server.runtime import EngineRuntime
from serving.sim.tokens import chat_prompt_text, token_ids_of_length

METRICS_TYPE = b"text/plain; version=0.0.4; charset=utf-8"

Handler = Callable[[asgi.Scope, asgi.Receive, asgi.Send], Awaitable[None]]


class SimApp:
    """One simulated vLLM replica as an ASGI application."""

    def __init__(self, profile: Profile, *, served_name: str | None = None, time_scale: float = 1.0,
                 seed: int = 0, faults: Faults | None = None, script: AnswerScript | None = None,
                 scheduling: str = "fcfs", transfer_faults: TransferFaults | None = None) -> None:
        self.profile = profile
        self.served_name = served_name or profile.served_model_name
        self.metrics = SimMetrics(profile, self.served_name)
        self.engine = Engine(profile, seed=seed, step_observer=self.metrics.observe_step, scheduling=scheduling,
                             transfer_faults=transfer_faults)
        self.metrics.bind(self.engine)
        self.runtime = EngineRuntime(self.engine, time_scale=time_scale, observer=self.metrics.observe)
        self.faults = FaultSwitch(faults or Faults(), seed)
        self.engine.slowdown = self.faults.current.slowdown
        self.completions = CompletionService(profile, self.served_name, self.runtime, self.metrics, self.faults, seed,
                                             script)
        self.responses_api = Responses()
        self.created = int(time.time())
        self._perm_id = f"modelperm-{random.Random(seed).getrandbits(64):016x}"
        self.routes: dict[tuple[str, str], Handler] = {
            ("POST", "/v1/chat/completions"): self._chat,
            ("POST", "/v1/completions"): self._completion,
            ("GET", "/v1/models"): self._models,
            ("POST", "/tokenize"): self._tokenize,
            ("POST", "/detokenize"): self._detokenize,
            ("POST", "/v1/embeddings"): self._embeddings,
            ("POST", "/v1/messages"): self._messages,
            ("POST", "/v1/responses"): self._responses,
            ("GET", "/health"): self._health,
            ("GET", "/load"): self._load,
            ("GET", "/version"): self._version,
            ("GET", "/metrics"): self._metrics,
            ("GET", "/sim/faults"): self._get_faults,
            ("POST", "/sim/faults"): self._set_faults,
        }

    async def __call__(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        if scope["type"] != "http":
            return
        handler = self.routes.get((scope["method"], scope["path"]))
        if handler is not None:
            return await handler(scope, receive, send)
        known = any(path == scope["path"] for _, path in self.routes)
        status, detail = (405, "Method Not Allowed") if known else (404, "Not Found")
        await asgi.respond(send, status, orjson.dumps({"detail": detail}))

    async def _lifespan(self, receive: asgi.Receive, send: asgi.Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.runtime.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.runtime.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _chat(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await self.completions.handle(scope, receive, send, chat=True)

    async def _completion(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await self.completions.handle(scope, receive, send, chat=False)

    async def _messages(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await over_chat.serve(Messages(), self.completions, scope, receive, send)

    async def _responses(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await over_chat.serve(self.responses_api, self.completions, scope, receive, send)

    async def _models(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await asgi.respond(send, 200, vllm_bodies.models(self.profile, self.served_name, self.created, self._perm_id))

    async def _tokenize(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        body = orjson.loads(await asgi.read_body(receive) or b"{}")
        chat = "messages" in body
        raw = orjson.dumps({**body, "max_tokens": 1}) if chat else orjson.dumps({"prompt": body.get("prompt", "")})
        try:
            call = parse_call(raw, chat=chat, headers={}, template=self.profile.chat_template)
        except BadRequest as exc:
            return await asgi.respond(send, 400, vllm_bodies.error(400, str(exc), exc.param))
        text = chat_prompt_text(body["messages"]) if chat else call.prompt_text
        ids = token_ids_of_length(text, call.prompt_tokens)
        await asgi.respond(send, 200, vllm_bodies.tokenize(ids, self.profile.engine.max_model_len))

    async def _detokenize(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await self._pooled(receive, send, lambda body: pooling.detokenize(body))

    async def _embeddings(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        hex_id = f"{random.getrandbits(64):016x}"
        await self._pooled(receive, send, lambda body: pooling.embeddings(body, self.served_name, hex_id))

    async def _pooled(self, receive: asgi.Receive, send: asgi.Send, answer: Callable[[dict[str, Any]], bytes]) -> None:
        """A whole-body route that checks the model name as vLLM does."""
        try:
            body = orjson.loads(await asgi.read_body(receive) or b"{}")
            if not isinstance(body, dict):
                raise BadRequest("Input should be a valid dictionary")
            if body.get("model") not in (None, self.served_name):
                raise BadRequest(f"The model `{body['model']}` does not exist.", "model")
            payload = answer(body)
        except orjson.JSONDecodeError as exc:
            return await asgi.respond(send, 400, vllm_bodies.error(400, f"JSON decode error: {exc}"))
        except BadRequest as exc:
            status = 404 if exc.param == "model" else 400
            return await asgi.respond(send, status, vllm_bodies.error(status, str(exc), exc.param))
        await asgi.respond(send, 200, payload)

    async def _health(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        if self.faults.current.hang:
            return await asgi.wait_disconnect(receive)
        await asgi.respond(send, 200, b"", b"application/json")  # vLLM: 200, empty body

    async def _load(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await asgi.respond(send, 200, orjson.dumps({"server_load": self.engine.in_flight()}))

    async def _version(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await asgi.respond(send, 200, orjson.dumps({"version": vllm_bodies.VLLM_VERSION}))

    async def _metrics(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await asgi.respond(send, 200, self.metrics.render(), METRICS_TYPE)

    async def _get_faults(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        await asgi.respond(send, 200, orjson.dumps(self.faults.current.as_json()))

    async def _set_faults(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        try:
            changes = orjson.loads(await asgi.read_body(receive) or b"{}")
            if not isinstance(changes, dict):
                raise FaultError("body: a JSON object of fault settings")
            self.faults.current = self.faults.current.updated(changes)
        except (FaultError, orjson.JSONDecodeError) as exc:
            return await asgi.respond(send, 400, vllm_bodies.error(400, str(exc)))
        self.runtime.set_slowdown(self.faults.current.slowdown)
        await asgi.respond(send, 200, orjson.dumps(self.faults.current.as_json()))
