"""Serving a dialect (``serving.sim.dialects.dialect.Dialect``) through the simulator's chat
endpoint: the dialect's request becomes a chat request, and chat's answer or stream goes back
through the dialect's translation, so timing, faults and scripted answers are chat's."""

from __future__ import annotations

from typing import Any

import orjson

from serving.sim.dialects import vllm_bodies
from serving.sim.dialects.api_request import BadRequest
from serving.sim.dialects.dialect import Dialect, StreamTranslator
from serving.sim.server import asgi
from serving.sim.server.completions import CompletionService


async def serve(dialect: Dialect, completions: CompletionService, scope: asgi.Scope, receive: asgi.Receive,
                send: asgi.Send) -> None:
    try:
        body = orjson.loads(await asgi.read_body(receive) or b"{}")
        if not isinstance(body, dict):
            raise BadRequest("Input should be a valid dictionary")
        chat = dialect.chat_request(body)
    except orjson.JSONDecodeError as exc:
        return await asgi.respond(send, 400, vllm_bodies.error(400, f"JSON decode error: {exc}"))
    except BadRequest as exc:
        if exc.param == "response_id":  # vLLM's answer for a stored response it does not hold
            body = {"error": {"message": str(exc), "type": "invalid_request_error", "param": exc.param, "code": 404}}
            return await asgi.respond(send, 404, orjson.dumps(body))
        return await asgi.respond(send, 400, vllm_bodies.error(400, str(exc), exc.param))
    pending = [{"type": "http.request", "body": orjson.dumps(chat), "more_body": False}]

    async def chat_receive() -> asgi.Message:
        return pending.pop() if pending else await receive()

    await completions.handle(scope, chat_receive, _Translating(dialect, body, send), chat=True)


class _Translating:
    """An ASGI ``send`` that turns the chat endpoint's answer into the dialect's."""

    def __init__(self, dialect: Dialect, body: dict[str, Any], send: asgi.Send) -> None:
        self.dialect, self.body, self.send = dialect, body, send
        self.start: asgi.Message | None = None
        self.translator: StreamTranslator | None = None
        self.buffer = b""

    async def __call__(self, message: asgi.Message) -> None:
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            if message["status"] == 200 and headers.get(b"content-type", b"").startswith(b"text/event-stream"):
                self.translator = self.dialect.stream(self.body)
                await self.send(message)
            else:
                self.start = message
            return
        self.buffer += message.get("body", b"")
        more = message.get("more_body", False)
        if self.translator is not None:
            await self.send({"type": "http.response.body", "body": self._events(), "more_body": more})
        elif not more:
            await self._whole()

    def _events(self) -> bytes:
        assert self.translator is not None
        end = self.buffer.rfind(b"\n\n") + 2
        complete, self.buffer = self.buffer[:end], self.buffer[end:]
        out = []
        for event in complete.split(b"\n\n")[:-1]:
            data = event[6:] if event.startswith(b"data: ") else event
            out.append(self.translator.feed(None if data == b"[DONE]" else orjson.loads(data)))
        return b"".join(out)

    async def _whole(self) -> None:
        assert self.start is not None
        payload = self.buffer
        if self.start["status"] == 200:
            payload = orjson.dumps(self.dialect.full(orjson.loads(payload), self.body))
        await asgi.respond(self.send, self.start["status"], payload)
