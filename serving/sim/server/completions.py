"""POST /v1/chat/completions and /v1/completions: validate like vLLM, run the request through
the engine model, answer (streamed or not) in vLLM's shape, and misbehave when told to."""

from __future__ import annotations

import asyncio
import random
import time
import zlib
from typing import Any

from serving.sim.answers.output import Choice, ToolPlan
from serving.sim.answers.script import AnswerScript, ScriptedAnswer
from serving.sim.answers.tools import arguments_json, chosen_tool
from serving.sim.dialects import vllm_bodies
from serving.sim.dialects.api_request import BadRequest, Call, parse_call
from serving.sim.engine.events import Event, Finished, Refusal, SimRequest, TokensOut
from serving.sim.profile import Profile
from serving.sim.server import asgi
from serving.sim.server.faults import FaultSwitch, RequestFate
from serving.sim.server.metrics import SimMetrics
from serving.sim.server.runtime import EngineRuntime
from serving.sim.tokens import prefix_hashes

FAULT_MESSAGES = {429: "Too many requests (simulated)", 500: "Internal server error (simulated)",
                  503: "Service unavailable (simulated)"}


class CompletionService:
    """Serves both completion endpoints for one simulated replica."""

    def __init__(self, profile: Profile, served_name: str, runtime: EngineRuntime, metrics: SimMetrics,
                 faults: FaultSwitch, seed: int, script: AnswerScript | None = None) -> None:
        self.profile = profile
        self.script = script
        self.served_name = served_name
        self.runtime = runtime
        self.metrics = metrics
        self.faults = faults
        self._rng = random.Random(seed ^ 0xC0FFEE)
        self.fingerprint = f"vllm-{vllm_bodies.VLLM_VERSION}-{zlib.crc32(profile.name.encode()):08x}"

    async def handle(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send, *, chat: bool) -> None:
        headers = asgi.request_headers(scope)
        raw = await asgi.read_body(receive)
        fate = self.faults.fate(headers)
        if fate.fail_status is not None:
            status = fate.fail_status
            return await asgi.respond(send, status, vllm_bodies.error(status, FAULT_MESSAGES.get(status, "Simulated error")))
        if fate.hang:
            return await asgi.wait_disconnect(receive)
        try:
            call = parse_call(raw, chat=chat, headers=headers, template=self.profile.chat_template)
            self._validate(call)
        except BadRequest as exc:
            status = 404 if exc.param == "model" else 400
            return await asgi.respond(send, status, vllm_bodies.error(status, str(exc), exc.param))
        await self._run(call, fate, receive, send)

    def _validate(self, call: Call) -> None:
        if call.model is not None and call.model != self.served_name:
            raise BadRequest(f"The model `{call.model}` does not exist. Valid aliases: {self.served_name}.", "model")
        limit, prompt = self.profile.engine.max_model_len, call.prompt_tokens
        if prompt > limit:
            # vLLM tokenizes at most limit + 1 tokens of an over-long prompt, hence "at least".
            counted = min(prompt, limit + 1)
            raise BadRequest(
                f"This model's maximum context length is {limit} tokens. However, your prompt contains at "
                f"least {counted} input tokens, which exceeds this limit even without any output tokens. "
                f"Please reduce the length of the input prompt. (parameter=input_tokens, value={counted})",
                "input_tokens")
        if call.max_tokens is not None and prompt + call.max_tokens > limit:
            # Wording by analogy with the captured prompt-too-long error (this case was not captured).
            raise BadRequest(
                f"This model's maximum context length is {limit} tokens. However, you requested "
                f"{call.max_tokens} output tokens and your prompt contains {prompt} input tokens, for a total "
                f"of {prompt + call.max_tokens} tokens. Please reduce the length of the input prompt or the "
                f"number of requested output tokens. (parameter=max_tokens, value={call.max_tokens})", "max_tokens")
        if call.n > 1 and call.temperature == 0:
            raise BadRequest(f"n must be 1 when using greedy sampling, got {call.n}.")

    async def _run(self, call: Call, fate: RequestFate, receive: asgi.Receive, send: asgi.Send) -> None:
        rid = f"{'chatcmpl' if call.chat else 'cmpl'}-{self._hex_id()}"
        scripted = self.script.answer_for(call.last_user_message) if self.script is not None else None
        text = scripted.text if scripted is not None and scripted.tool_name is None else None
        choices = [Choice(i, self._tool_plan(call, scripted), self._rng.getrandbits(32), text) for i in range(call.n)]
        queue: asyncio.Queue[Event] = asyncio.Queue()
        ids = await self._submit(call, rid, choices, queue, send)
        if ids is None:
            return
        watcher = asyncio.ensure_future(asgi.wait_disconnect(receive))
        watcher.add_done_callback(lambda _: self._abort(ids))
        try:
            if call.stream:
                await self._stream(call, rid, choices, ids, queue, fate, send)
            else:
                await self._respond_full(call, rid, choices, ids, queue, fate, send)
        finally:
            watcher.cancel()
            self._abort(ids)

    async def _submit(self, call: Call, rid: str, choices: list[Choice], queue: asyncio.Queue[Event],
                      send: asgi.Send) -> dict[str, int] | None:
        """Queue one engine request per choice; answers 503 and returns None if refused."""
        max_tokens = call.max_tokens or self.profile.engine.max_model_len - call.prompt_tokens
        hashes = prefix_hashes(call.prompt_text, self.profile.engine.block_size)
        ids: dict[str, int] = {}
        for choice in choices:
            request = SimRequest(f"{rid}-{choice.index}", call.prompt_tokens, max_tokens, call.min_tokens,
                                 call.ignore_eos, choice.natural_tokens(call.output_tokens), call.task, hashes,
                                 call.priority, remote_decode=call.remote_decode, remote_prefill=call.remote_prefill)
            refusal = self.runtime.submit(request, queue)
            if refusal is not None:
                self._abort(ids)
                self.metrics.rejected += refusal is Refusal.QUEUE_FULL
                message = ("The waiting queue is full; retry later." if refusal is Refusal.QUEUE_FULL
                           else f"Request refused: {refusal.value}")
                await asgi.respond(send, 503, vllm_bodies.error(503, message))
                return None
            ids[request.request_id] = choice.index
        self.metrics.observe_params(max_tokens, call.n)
        return ids

    async def _stream(self, call: Call, rid: str, choices: list[Choice], ids: dict[str, int],
                      queue: asyncio.Queue[Event], fate: RequestFate, send: asgi.Send) -> None:
        writer = vllm_bodies.ChunkWriter(rid, int(time.time()), self.served_name, call.chat, call.include_usage,
                                       call.continuous_usage, call.prompt_tokens, self.fingerprint)
        await asgi.start_stream(send)
        pending, started = len(choices), [False] * len(choices)
        while pending:
            batch = await _drain(queue)
            for j, event in enumerate(batch):
                choice = choices[ids[event.request_id]]
                if isinstance(event, Finished) and event.reason == "error":  # vLLM's GenerationError, streamed
                    await asgi.stream_chunk(send, b"data: " + vllm_bodies.error(500, vllm_bodies.GENERATION_ERROR)
                                            + b"\n\n" + vllm_bodies.DONE)
                    await asgi.end_stream(send)
                    return
                if isinstance(event, TokensOut):
                    done = _finish_in(batch, j, event.request_id)
                    if call.chat and not started[choice.index]:
                        started[choice.index] = True
                        await asgi.stream_chunk(send, writer.role(choice.index))
                    await _send_chunk(send, self._chunk(writer, choice, event.count, done))
                    await _maybe_die(fate, sum(c.tokens for c in choices), send, started=True)
                elif not _tokens_before(batch, j, event.request_id):
                    await _send_chunk(send, self._chunk(writer, choice, 0, event))
                if isinstance(event, Finished):
                    pending -= 1
        if call.include_usage:
            await asgi.stream_chunk(send, writer.final_usage(sum(c.tokens for c in choices)))
        await asgi.stream_chunk(send, vllm_bodies.DONE)
        await asgi.end_stream(send)

    def _chunk(self, writer: vllm_bodies.ChunkWriter, choice: Choice, count: int, done: Finished | None) -> bytes:
        """The chunk for one engine output of ``choice`` (``count`` tokens, ``done`` if it ends
        the choice); empty when vLLM sends none (tool markup that the parser holds back)."""
        final = done is not None and done.reason == "stop"  # the last token is EOS
        reason = None if done is None else choice.finish_reason(done.reason)
        if not writer.chat:
            return writer.text_delta(choice.index, choice.take(count, final), choice.tokens, reason)
        delta, called = choice.chat_delta(count, final)
        if called is not None:
            self.metrics.observe_tool_parse(streaming=True, called=called)
        if delta is None and done is None:
            return b""
        return writer.chat_delta(choice.index, delta or {}, choice.tokens, reason)

    async def _respond_full(self, call: Call, rid: str, choices: list[Choice], ids: dict[str, int],
                            queue: asyncio.Queue[Event], fate: RequestFate, send: asgi.Send) -> None:
        finished: dict[int, Finished] = {}
        while len(finished) < len(choices):
            batch = await _drain(queue)
            for j, event in enumerate(batch):
                choice = choices[ids[event.request_id]]
                if isinstance(event, TokensOut):
                    done = _finish_in(batch, j, event.request_id)
                    choice.take(event.count, final=done is not None and done.reason == "stop")
                    await _maybe_die(fate, sum(c.tokens for c in choices), send, started=False)
                else:
                    finished[choice.index] = event
        if any(done.reason == "error" for done in finished.values()):  # vLLM's GenerationError
            await asgi.respond(send, 500, vllm_bodies.error(500, vllm_bodies.GENERATION_ERROR))
            return
        use = vllm_bodies.usage(call.prompt_tokens, sum(c.tokens for c in choices))
        created = int(time.time())
        handoff = self._handoff(rid, call, finished)
        if call.chat:
            bodies = [vllm_bodies.chat_choice(c.index, self._message(c), c.finish_reason(finished[c.index].reason))
                      for c in choices]
            body = vllm_bodies.chat_completion(rid, created, self.served_name, bodies, use, self.fingerprint, handoff)
        else:
            bodies = [vllm_bodies.completion_choice(c.index, "".join(c.texts), finished[c.index].reason) for c in choices]
            body = vllm_bodies.completion(rid, created, self.served_name, bodies, use, self.fingerprint, handoff)
        await asgi.respond(send, 200, body)

    def _handoff(self, rid: str, call: Call, finished: dict[int, Finished]) -> dict[str, Any] | None:
        """The ``kv_transfer_params`` of a prefill that handed its KV off (None otherwise)."""
        if not call.remote_decode or not all(done.kv_ready for done in finished.values()):
            return None
        return vllm_bodies.handoff_params(rid, self.fingerprint, call.prompt_tokens, self.profile.engine.block_size)

    def _message(self, choice: Choice) -> dict[str, Any]:
        message, called = choice.message()
        if called is not None:
            self.metrics.observe_tool_parse(streaming=False, called=called)
        return message

    def _tool_plan(self, call: Call, scripted: ScriptedAnswer | None = None) -> ToolPlan | None:
        if scripted is not None:
            return self._scripted_tool_plan(call, scripted)
        # "auto" after a tool's result: the simulated model answers it (an agent's loop ends).
        answers = call.after_tool and call.tool_choice == "auto"
        tool = chosen_tool(list(call.tools), call.tool_choice) if call.chat and not answers else None
        if tool is None:
            return None
        name, schema, named = tool
        return ToolPlan(f"chatcmpl-tool-{self._hex_id()}", name, arguments_json(schema), named,
                        required=call.tool_choice == "required")

    def _scripted_tool_plan(self, call: Call, scripted: ScriptedAnswer) -> ToolPlan | None:
        """The script's call, when it scripts one and the request offers tools."""
        if scripted.tool_name is None or not call.tools or call.tool_choice == "none":
            return None
        return ToolPlan(f"chatcmpl-tool-{self._hex_id()}", scripted.tool_name, scripted.tool_arguments,
                        named=isinstance(call.tool_choice, dict), required=call.tool_choice == "required")

    def _abort(self, ids: dict[str, int]) -> None:
        for request_id in ids:
            self.runtime.abort(request_id)

    def _hex_id(self) -> str:
        """vLLM 0.32's request ids: 16 hex digits."""
        return f"{self._rng.getrandbits(64):016x}"


async def _drain(queue: asyncio.Queue[Event]) -> list[Event]:
    """Wait for the next event, then take every event already queued (one engine step's)."""
    batch = [await queue.get()]
    while not queue.empty():
        batch.append(queue.get_nowait())
    return batch


def _finish_in(batch: list[Event], j: int, request_id: str) -> Finished | None:
    """The Finished event of ``request_id`` later in the same batch, if any (it rides on the
    last text chunk, as in vLLM)."""
    for event in batch[j + 1 :]:
        if event.request_id == request_id:
            return event if isinstance(event, Finished) else None
    return None


def _tokens_before(batch: list[Event], j: int, request_id: str) -> bool:
    return any(isinstance(e, TokensOut) and e.request_id == request_id for e in batch[:j])


async def _send_chunk(send: asgi.Send, chunk: bytes) -> None:
    if chunk:  # an output the tool parser holds back sends nothing
        await asgi.stream_chunk(send, chunk)


async def _maybe_die(fate: RequestFate, tokens: int, send: asgi.Send, *, started: bool) -> None:
    """Cut the connection once ``tokens`` reach the fate's limit. The server closes a
    connection whose response has started when the app raises, so a non-streamed response
    is started first (the client then sees headers and a truncated body)."""
    if fate.die_after_tokens is None or tokens < fate.die_after_tokens:
        return
    if not started:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", asgi.JSON)]})
        await send({"type": "http.response.body", "body": b'{"id":', "more_body": True})
    raise asgi.SimulatedCrash(f"simulated crash after {tokens} tokens")
