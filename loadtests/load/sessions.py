"""Requests that repeat a growing prefix: multi-turn conversations and agent loops.

Each turn resends the whole history, as chat clients and agent frameworks do, so turn n+1's
prompt starts with turn n's: the traffic a prefix cache and session routing exist for. Every
request of one session carries the same ``x-session-id``. The assistant's earlier answers are
synthesised text of the length that was generated (a client would resend the model's own text;
its length, not its words, decides what the cache holds).

Pure: a ``Conversation`` is a value; each step returns the next request and the next state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from loadtests.load.scenarios import AGENT_TOOLS, ChatRequest, ScenarioSettings, chat_body, slo_headers
from loadtests.load.streaming import ToolCall

SESSION_HEADER = "x-session-id"
# Room left in the window for the chat template's tokens per message.
TEMPLATE_ALLOWANCE = 64


@dataclass(frozen=True, slots=True)
class Conversation:
    """One session's history so far and its approximate prompt tokens."""

    session_id: str
    task: str
    messages: tuple[dict[str, Any], ...]
    tokens: int
    turns: int = 0

    def fits(self, more_tokens: int, max_context: int) -> bool:
        """Whether ``more_tokens`` (the next messages and the answer) still fit the window."""
        return self.tokens + more_tokens + TEMPLATE_ALLOWANCE * (self.turns + 2) <= max_context

    def request(self, settings: ScenarioSettings, output_tokens: int, **extra: Any) -> ChatRequest:
        """The turn's request: the whole history, the session header, the task's SLO headers."""
        headers = {**slo_headers(self.task, settings.slos.get(self.task), settings.time_scale),
                   SESSION_HEADER: self.session_id}
        body = chat_body(settings.model, list(self.messages), output_tokens, settings.forced_length, **extra)
        return ChatRequest(self.task, body, headers, output_tokens)

    def then(self, *messages: dict[str, Any], tokens: int) -> Conversation:
        """The history with ``messages`` (of ``tokens`` tokens together) appended."""
        return replace(self, messages=self.messages + messages, tokens=self.tokens + tokens, turns=self.turns + 1)


def start_conversation(settings: ScenarioSettings, session_id: str, task: str, context_tokens: int,
                       seed: int) -> Conversation:
    """A session whose first message is ``context_tokens`` of shared context (a document, a
    system prompt): the prefix every later turn repeats."""
    text = settings.synthesizer.text(max(1, context_tokens), "prose", seed)
    return Conversation(session_id, task, ({"role": "system", "content": text},), context_tokens)


def ask(settings: ScenarioSettings, conversation: Conversation, question_tokens: int, seed: int) -> Conversation:
    """The conversation with the user's next question appended (the request is ``request``'s)."""
    text = settings.synthesizer.text(max(1, question_tokens), "prose", seed)
    return conversation.then({"role": "user", "content": text}, tokens=question_tokens)


def answered(settings: ScenarioSettings, conversation: Conversation, answer_tokens: int, seed: int) -> Conversation:
    """The conversation after the assistant answered with ``answer_tokens`` tokens."""
    text = settings.synthesizer.text(max(1, answer_tokens), "prose", seed)
    return replace(conversation, messages=conversation.messages + ({"role": "assistant", "content": text},),
                   tokens=conversation.tokens + answer_tokens)


def agent_step(settings: ScenarioSettings, conversation: Conversation, call: ToolCall | None, result_tokens: int,
               seed: int) -> Conversation:
    """After the assistant asked for a tool: its call and the tool's result of ``result_tokens``
    tokens appended (a call the model did not make in the right form is made up, as an agent
    framework would retry it)."""
    call = call or ToolCall(f"call_{seed}", "search_documents", '{"query": "next"}')
    assistant = {"role": "assistant", "content": None, "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]}
    tool = {"role": "tool", "tool_call_id": call.id, "content": settings.synthesizer.text(result_tokens, "prose", seed)}
    return conversation.then(assistant, tool, tokens=result_tokens + 16)


def agent_request(settings: ScenarioSettings, conversation: Conversation, output_tokens: int, final: bool) -> ChatRequest:
    """An agent turn: the tools offered, a call expected until the ``final`` answer."""
    return conversation.request(settings, output_tokens, tools=list(AGENT_TOOLS),
                                tool_choice="none" if final else "auto")
