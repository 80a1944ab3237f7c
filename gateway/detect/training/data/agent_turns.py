"""Agent requests from public benchmarks, as a client sends them: the tools the agent may call are
given in the system prompt (as BFCL's prompting mode gives them), then the user's turns, with the
calls and results that answered the earlier ones where the package ships them.

- ToolTalk (``nvidia-tooltalk``): each user turn of its conversations after the earlier turns and
  the API calls, results and replies that answered them, with the APIs of the suites the
  conversation uses (their documentation as ToolTalk's own ``to_openai_doc`` writes it, read from
  its source with ``ast``: nothing of the package is imported).
- WebArena (``libwebarena``) and TimeWarp (``browsergym-timewarp``): each task's intent, with the
  browser actions of the harness the benchmark was published with (WebArena's id-based action
  space, ``webarena/browser_env/actions.py``; BrowserGym's high-level action set for TimeWarp)."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Messages = list[dict[str, Any]]
TOOLTALK = "nvidia-tooltalk-26.3/tooltalk"
WEBARENA = "libwebarena-0.0.5/webarena/test.raw.json"
TIMEWARP = "browsergym-timewarp-0.2.1/browsergym/timewarp/data/test.raw.json"


def _tool(name: str, description: str, **parameters: str) -> dict[str, Any]:
    properties = {p: {"type": "string", "description": d} for p, d in parameters.items()}
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(parameters)}}


# WebArena's action space (``ActionTypes`` and its prompts' "click [id]", "type [id] [content]", ...) as
# tools: its names and arguments, each described in a line.
WEBARENA_TOOLS = [
    _tool("click", "Click on an element with a specific id on the webpage.", id="element id"),
    _tool("type", "Type the content into the field with id; press Enter after typing unless press_enter_after is 0.",
          id="element id", content="text to type", press_enter_after="1 or 0"),
    _tool("hover", "Hover over an element with id.", id="element id"),
    _tool("press", "Simulate the pressing of a key combination on the keyboard (e.g., Ctrl+v).", key_comb="keys"),
    _tool("scroll", "Scroll the page up or down.", direction="up or down"),
    _tool("new_tab", "Open a new, empty browser tab."),
    _tool("tab_focus", "Switch the browser's focus to a specific tab using its index.", tab_index="index"),
    _tool("close_tab", "Close the currently active tab."),
    _tool("goto", "Navigate to a specific URL.", url="URL"),
    _tool("go_back", "Navigate to the previously viewed page."),
    _tool("go_forward", "Navigate to the next page (if a previous go_back action was performed)."),
    _tool("stop", "Issue this action when you believe the task is complete, with the answer if one is asked for.",
          answer="the answer, or empty"),
]
# BrowserGym's high-level action set (``browsergym.core.action.highlevel``), which TimeWarp's agents use: its
# names and arguments, each described in a line.
BROWSERGYM_TOOLS = [
    _tool("click", "Click an element.", bid="the element's bid"),
    _tool("dblclick", "Double-click an element.", bid="the element's bid"),
    _tool("fill", "Fill out a form field. It focuses the element and triggers an input event with the entered text.",
          bid="the element's bid", value="text"),
    _tool("select_option", "Select one or multiple options in a <select> element.", bid="the element's bid",
          options="option or options"),
    _tool("hover", "Hover over an element.", bid="the element's bid"),
    _tool("press", "Focus the matching element and press a combination of keys.", bid="the element's bid",
          key_comb="keys"),
    _tool("scroll", "Scroll horizontally and vertically. Amounts in pixels.", delta_x="pixels", delta_y="pixels"),
    _tool("goto", "Navigate to a url.", url="URL"),
    _tool("go_back", "Navigate to the previous page in history."),
    _tool("go_forward", "Navigate to the next page in history."),
    _tool("new_tab", "Open a new tab. It will become the active one."),
    _tool("tab_focus", "Bring tab to front (activate tab).", index="tab index"),
    _tool("tab_close", "Close the current tab."),
    _tool("send_msg_to_user", "Sends a message to the user.", text="the message"),
    _tool("report_infeasible", "Notifies the user that their instructions are infeasible.", reason="why"),
]


def functions_prompt(functions: list[dict[str, Any]]) -> dict[str, Any]:
    """The system message declaring ``functions``, in BFCL's prompting-mode words."""
    return {"role": "system", "content": "You can call the following functions. Here is the list of functions "
                                         "in JSON format:\n" + json.dumps(functions)}


def _user(text: str) -> Messages:
    return [{"role": "user", "content": text}]


def _web_tasks(path: Path, tools: list[dict[str, Any]]) -> Iterator[tuple[str, Messages]]:
    """Each distinct intent once (a template instantiated twice alike is one request)."""
    seen: set[str] = set()
    for task in json.loads(path.read_text(encoding="utf-8")):
        if task["intent"] not in seen:
            seen.add(task["intent"])
            yield str(task["task_id"]), [functions_prompt(tools), *_user(task["intent"])]


def webarena(root: Path) -> Iterator[tuple[str, Messages]]:
    return _web_tasks(root / WEBARENA, WEBARENA_TOOLS)


def timewarp(root: Path) -> Iterator[tuple[str, Messages]]:
    return _web_tasks(root / TIMEWARP, BROWSERGYM_TOOLS)


def _assigned(node: ast.ClassDef) -> dict[str, ast.expr]:
    return {target.id: statement.value for statement in node.body if isinstance(statement, ast.Assign)
            for target in statement.targets if isinstance(target, ast.Name)}


def _openai_doc(name: str, description: str, parameters: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """ToolTalk's ``API.to_openai_doc``: each parameter without its ``required`` flag, those listed."""
    properties = {p: {k: v for k, v in a.items() if k != "required"} for p, a in parameters.items()}
    return {"name": name, "description": description, "parameters": {"type": "object", "properties": properties},
            "required": [p for p, a in parameters.items() if a.get("required")]}


def tooltalk_suites(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Suite name -> its APIs' documentation, read from ToolTalk's ``apis`` modules."""
    docs: dict[str, dict[str, Any]] = {}
    suites: dict[str, list[str]] = {}
    for path in sorted((root / TOOLTALK / "apis").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ClassDef):
                continue
            values = _assigned(node)
            if "description" in values and "parameters" in values:
                docs[node.name] = _openai_doc(node.name, ast.literal_eval(values["description"]),
                                              ast.literal_eval(values["parameters"]))
            if "name" in values and isinstance(apis := values.get("apis"), ast.List):
                suites[ast.literal_eval(values["name"])] = [e.id for e in apis.elts if isinstance(e, ast.Name)]
    return {suite: [docs[api] for api in apis if api in docs] for suite, apis in suites.items()}


def _answered(turn: dict[str, Any], at: int) -> Messages:
    """An assistant turn of ToolTalk as a client holds it: its calls, their results, then its reply."""
    calls = turn.get("apis") or []
    ids = [f"call_{at}_{k}" for k in range(len(calls))]
    out: Messages = []
    if calls:
        out.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": i, "type": "function", "function": {"name": c["request"]["api_name"],
                                                       "arguments": json.dumps(c["request"]["parameters"])}}
            for i, c in zip(ids, calls, strict=True)]})
        out += [{"role": "tool", "tool_call_id": i, "content": json.dumps(c["response"] or {"error": c["exception"]})}
                for i, c in zip(ids, calls, strict=True)]
    return [*out, {"role": "assistant", "content": turn.get("text") or ""}]


def tooltalk(root: Path) -> Iterator[tuple[str, Messages]]:
    """Each user turn of each conversation (the golden and the easy ones), after what came before it."""
    suites = tooltalk_suites(root)
    for folder in ("tooltalk", "easy"):
        for path in sorted((root / TOOLTALK / "data" / folder).glob("*.json")):
            conversation = json.loads(path.read_text(encoding="utf-8"))
            functions = [doc for suite in conversation["suites_used"] for doc in suites.get(suite, [])]
            messages: Messages = [functions_prompt(functions)]
            for at, turn in enumerate(conversation["conversation"]):
                if turn["role"] == "user":
                    messages = [*messages, *_user(turn["text"])]
                    yield f"{folder}/{path.stem}/{at}", messages
                else:
                    messages = [*messages, *_answered(turn, at)]
