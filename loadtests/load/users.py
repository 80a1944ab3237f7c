"""Locust users, one class per task type, and the trace-replay user.

Each request streams; besides the request itself (``POST chat [task]``, response time = end to end,
failed on an HTTP error, a stream error or no token), TTFT and TPOT are fired as request events of
their own (types ``TTFT`` and ``TPOT``, named by task), so locust's tables, charts and CSVs show
them per task. Every request also becomes one JSON line in ``--duet-records`` for the SLO report.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import gevent
import orjson
import requests
from locust import User, between, constant, task

from loadtests.load.context import LoadContext
from loadtests.load.scenarios import ChatRequest, agent_first_turn, agent_second_turn, single_turn
from loadtests.load.sessions import Conversation, agent_request, agent_step, answered, ask, start_conversation
from loadtests.load.streaming import StreamResult, read_stream
from loadtests.scoring.slo import RequestRecord


class DuetUser(User):
    """Sends streamed chat requests to ``--host`` and reports what it measured."""

    abstract = True
    task_type: ClassVar[str] = "chat"
    wait_time = between(0.5, 2.0)

    def on_start(self) -> None:
        self.http = requests.Session()

    def on_stop(self) -> None:
        self.http.close()

    @property
    def load(self) -> LoadContext:
        """The run's shared state (``User.context`` is locust's own, for request-event context)."""
        shared: LoadContext = self.environment.duet
        return shared

    def next_seed(self) -> int:
        return int(self.load.options.duet_seed) * 1_000_000 + next(self.load.seeds)

    def send(self, request: ChatRequest, lag_s: float = 0.0) -> StreamResult:
        """Send one request, fire its locust events, write its record; returns what it measured."""
        ctx = self.load
        started_s = ctx.elapsed()
        ctx.in_flight += 1
        try:
            result, headers = self._post(request)
        finally:
            ctx.in_flight -= 1
        variant = self._variant(headers, result)
        record = RequestRecord(
            task=request.task, variant=variant, started_s=started_s, ok=not result.error and result.ttft_s is not None,
            ttft_s=result.ttft_s, latency_s=result.latency_s, input_tokens=result.input_tokens or 0,
            output_tokens=result.output_tokens, itl_s=result.itl_s, lag_s=lag_s, error=result.error,
        )
        self._fire(request, record)
        ctx.sink.write(record, {"replica": headers.get("x-duet-replica", ""), "wanted_output_tokens": request.output_tokens})
        return result

    def _post(self, request: ChatRequest) -> tuple[StreamResult, Any]:
        url = f"{(self.host or '').rstrip('/')}/v1/chat/completions"
        headers = {"content-type": "application/json", "authorization": f"Bearer {self.load.options.duet_api_key}",
                   **request.headers}
        started = time.perf_counter()
        try:
            with self.http.post(url, data=orjson.dumps(request.body), headers=headers, stream=True, timeout=600) as response:
                if response.status_code != 200:
                    error = f"HTTP {response.status_code}: {response.text[:300]}"
                    return _failed(started, error), response.headers
                # chunk_size=None yields each chunk as it arrives (a fixed size would wait to fill it).
                chunks = response.iter_content(chunk_size=None)
                return read_stream(chunks, time.perf_counter, started), response.headers
        except requests.RequestException as exc:
            return _failed(started, f"{type(exc).__name__}: {exc}"), {}

    def _variant(self, headers: Any, result: StreamResult) -> str:
        """From Duet's ``x-duet-variant``; for other gateways, the ``--duet-variant-map`` entry of the
        upstream they name (LiteLLM's ``x-litellm-model-api-base``) or of the served model name."""
        if headers.get("x-duet-variant"):
            return str(headers["x-duet-variant"])
        mapping = self.load.variant_map
        for key in (str(headers.get("x-litellm-model-api-base", "")).rstrip("/"), result.model):
            if key and key in mapping:
                return mapping[key]
        return result.model or "unknown"

    def _fire(self, request: ChatRequest, record: RequestRecord) -> None:
        fire = self.environment.events.request.fire
        error = None if record.ok else RuntimeError(record.error or "no token streamed")
        fire(request_type="POST", name=request.name, response_time=record.latency_s * 1e3,
             response_length=record.output_tokens, exception=error, context={"variant": record.variant})
        if record.ttft_s is not None:
            fire(request_type="TTFT", name=request.task, response_time=record.ttft_s * 1e3, response_length=0,
                 exception=None, context={"variant": record.variant})
        if record.tpot_s is not None:
            fire(request_type="TPOT", name=request.task, response_time=record.tpot_s * 1e3, response_length=0,
                 exception=None, context={"variant": record.variant})


def _failed(started: float, error: str) -> StreamResult:
    return StreamResult(ttft_s=None, latency_s=time.perf_counter() - started, output_tokens=0, input_tokens=None,
                        itl_s=(), error=error)


class CodingUser(DuetUser):
    """Code completion: prompt and output lengths drawn from the Azure code trace."""

    task_type = "coding"
    weight = 2

    @task
    def complete(self) -> None:
        inputs, outputs = self.load.lengths("coding")
        self.send(single_turn(self.load.settings, "coding", inputs, outputs, self.next_seed()))


class ChatUser(DuetUser):
    """Conversation: lengths drawn from the Azure conversation trace."""

    task_type = "chat"
    weight = 3

    @task
    def chat(self) -> None:
        inputs, outputs = self.load.lengths("chat")
        self.send(single_turn(self.load.settings, "chat", inputs, outputs, self.next_seed()))


class AgentUser(DuetUser):
    """Two turns with a tool: the model calls ``search_documents``, then answers from its result."""

    task_type = "agent"
    weight = 1

    @task
    def solve(self) -> None:
        inputs, outputs = self.load.lengths("chat")
        # Both turns fit the window: the question, the tool's result and the answer a quarter each at most
        # (the rest is the tool schema, the call and the chat template).
        quarter = self.load.max_context // 4
        seed = self.next_seed()
        first = agent_first_turn(self.load.settings, min(inputs, 2000, quarter), seed)
        result = self.send(first)
        if result.error:
            return
        result_tokens = self.load.rng.randint(min(200, quarter), min(1500, quarter))
        answer = min(outputs, quarter)
        self.send(agent_second_turn(self.load.settings, first, result.tool_calls, result_tokens, answer, seed))


class ExtractionUser(DuetUser):
    """Long-document extraction: a quarter to a half of the context window in, a short answer out."""

    task_type = "extraction"
    weight = 1

    @task
    def extract(self) -> None:
        window = self.load.max_context
        inputs = self.load.rng.randint(window // 4, window // 2)
        outputs = self.load.rng.randint(64, 384)
        self.send(single_turn(self.load.settings, "extraction", inputs, outputs, self.next_seed()))


class ConversationUser(DuetUser):
    """A multi-turn conversation: a shared context (the chat trace's prompt length, up to a
    quarter of the window), then questions; each turn resends the whole history with the session's
    ``x-session-id``. A conversation that would outgrow the window, or has run ``MAX_TURNS``
    turns, ends and a new one starts."""

    task_type = "chat"
    weight = 1  # not in the default mix (DuetShape): name it (``locust ... ConversationUser``) to run it
    MAX_TURNS: ClassVar[int] = 8

    def on_start(self) -> None:
        super().on_start()
        self.conversation: Conversation | None = None

    @task
    def turn(self) -> None:
        ctx = self.load
        inputs, outputs = ctx.lengths("chat")
        question, answer = ctx.rng.randint(30, 150), min(outputs, ctx.max_context // 8)
        conversation = self.conversation
        if conversation is None or conversation.turns >= self.MAX_TURNS or not conversation.fits(
                question + answer, ctx.max_context):
            seed = self.next_seed()
            conversation = start_conversation(ctx.settings, f"conv-{seed}", "chat", min(inputs, ctx.max_context // 4), seed)
        conversation = ask(ctx.settings, conversation, question, self.next_seed())
        result = self.send(conversation.request(ctx.settings, answer))
        # A failed turn ends the conversation (a client would show the error, not go on).
        self.conversation = None if result.error else answered(ctx.settings, conversation, result.output_tokens or answer,
                                                               self.next_seed())


class AgentLoopUser(DuetUser):
    """An agent loop: a task with a tool offered; the model calls it, the tool's result goes back,
    the next turn runs on the whole history, until a final answer after 1-4 calls or the window
    is full. One session (``x-session-id``) per task."""

    task_type = "agent"
    weight = 1  # not in the default mix (DuetShape): name it (``locust ... AgentLoopUser``) to run it

    @task
    def solve(self) -> None:
        ctx = self.load
        inputs, outputs = ctx.lengths("chat")
        seed = self.next_seed()
        window = ctx.max_context
        conversation = ask(ctx.settings, start_conversation(ctx.settings, f"agent-{seed}", "agent",
                                                            min(inputs, window // 4), seed), 60, seed + 1)
        calls = ctx.rng.randint(1, 4)
        for step in range(calls + 1):
            result_tokens = ctx.rng.randint(100, max(100, window // 8))
            final = step == calls or not conversation.fits(24 + result_tokens + min(outputs, window // 8), window)
            answer = min(outputs, window // 8) if final else 24
            result = self.send(agent_request(ctx.settings, conversation, answer, final))
            if result.error or final:
                return
            conversation = agent_step(ctx.settings, conversation, result.tool_calls[0] if result.tool_calls else None,
                                      result_tokens, self.next_seed())


class TraceReplayUser(DuetUser):
    """Replays the trace schedule: takes the next arrival, waits for its time, sends it as its task.

    With enough of these users the replay is open-loop (arrivals do not wait for answers); when all
    are busy the next arrival leaves late, and its record's ``lag_s`` says by how much.
    """

    wait_time = constant(0)
    weight = 1

    @task
    def replay(self) -> None:
        ctx = self.load
        arrival = next(ctx.arrivals, None)
        if arrival is None:
            gevent.sleep(0.5)  # schedule exhausted: idle until the shape ends the test
            return
        # Counted from the moment it is taken, so the shape never ends the test between take and send.
        ctx.in_flight += 1
        try:
            gevent.sleep(max(0.0, arrival.at_s - ctx.elapsed()))
            lag_s = max(0.0, ctx.elapsed() - arrival.at_s)
            request = single_turn(ctx.settings, arrival.task, arrival.input_tokens, arrival.output_tokens, self.next_seed())
            self.send(request, lag_s=lag_s)
        finally:
            ctx.in_flight -= 1


TASK_USERS: tuple[type[DuetUser], ...] = (CodingUser, ChatUser, AgentUser, ExtractionUser)
# Users whose requests repeat a growing prefix in one session (prefix-cache and session routing).
SESSION_USERS: tuple[type[DuetUser], ...] = (ConversationUser, AgentLoopUser)
