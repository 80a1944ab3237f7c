"""What one choice writes, token by token: prose, or a tool call in Hermes markup that vLLM's
tool parser turns into ``tool_calls`` (``serving.sim.answers.hermes``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serving.sim.answers import hermes
from serving.sim.dialects import vllm_bodies
from serving.sim.tokens import words


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """The tool call a choice makes: its id, function, arguments (JSON text), and how the
    request asked for it (``named``: a function in ``tool_choice``; ``required``)."""

    call_id: str
    name: str
    arguments: str
    named: bool
    required: bool = False


class Choice:
    """One choice's output as the engine produces it: generated words, a tool call's markup, or
    a scripted ``text`` (``serving.sim.answers.script``)."""

    __slots__ = ("index", "tool", "tokens", "texts", "_words", "_pieces", "_fixed", "_next_piece", "_stream")

    def __init__(self, index: int, tool: ToolPlan | None, seed: int, text: str | None = None) -> None:
        self.index = index
        self.tool = tool
        self.tokens = 0
        self.texts: list[str] = []
        self._words = words(seed)
        written = hermes.markup(tool.name, tool.arguments) if tool else text
        self._pieces = hermes.token_pieces(written) if written is not None else []
        self._fixed = written is not None
        self._next_piece = 0
        self._stream = hermes.StreamParser(tool.call_id) if tool else None

    def natural_tokens(self, hint: int | None = None) -> int | None:
        """Where the model stops on its own: after a tool call's markup or a scripted text, and
        EOS; for generated prose, ``hint`` (None: the engine draws the length from the profile)."""
        return len(self._pieces) + 1 if self._fixed else hint

    def take(self, count: int, final: bool = False) -> str:
        """Text of the next ``count`` tokens. ``final`` marks a natural stop: the last token is
        then EOS, which has no text."""
        self.tokens += count
        with_text = count - 1 if final else count
        if not self._fixed:
            text = "".join(next(self._words) for _ in range(with_text))
        else:
            start = self._next_piece
            self._next_piece += with_text
            text = "".join(self._pieces[start:self._next_piece])
        self.texts.append(text)
        return text

    def chat_delta(self, count: int, final: bool) -> tuple[dict[str, Any] | None, bool | None]:
        """The chat ``delta`` for one engine output of ``count`` tokens (None: vLLM sends no
        chunk for it unless it ends the choice), and whether the tool parser found a call in
        it (None when no parser ran)."""
        text = self.take(count, final)
        if self._stream is None:
            return ({"content": text} if text else None), None
        deltas = self._stream.feed(text)
        return ({"content": None, "tool_calls": deltas} if deltas else None), bool(deltas)

    def message(self) -> tuple[dict[str, Any], bool | None]:
        """The full answer's message, and whether the tool parser found a call (None when no
        parser ran)."""
        text = "".join(self.texts)
        if self.tool is None:
            return vllm_bodies.chat_message(text, []), None
        call = hermes.parse(text)
        # vLLM: named and "required" choices answer content "" beside the call; "auto" null.
        forced = self.tool.named or self.tool.required
        if call is None:
            return vllm_bodies.chat_message(text, []), False
        tool_call = vllm_bodies.tool_call(self.tool.call_id, call.name, call.arguments)
        return vllm_bodies.chat_message("" if forced else None, [tool_call]), True

    def finish_reason(self, reason: str) -> str:
        """OpenAI's rule, as vLLM applies it: a completed call ends with ``tool_calls``, except
        under a named ``tool_choice`` (``stop``)."""
        if self.tool is not None and not self.tool.named and reason == "stop":
            return "tool_calls"
        return reason
