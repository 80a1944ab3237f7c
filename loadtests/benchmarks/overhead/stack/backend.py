"""The fast backend: Debian's nginx with its Lua module serving canned vLLM-shaped answers.

Why nginx: one C worker answers tens of thousands of requests per second on one core, so the
backend is never what a Python gateway (or even a Rust one) is waiting for. Why Lua: the same
``POST /v1/chat/completions`` must answer JSON or SSE depending on ``"stream": true`` in the
body, which plain nginx cannot read (and ``POST /v1/responses`` and ``/v1/messages`` likewise,
with vLLM's Responses and Anthropic Messages events). Why chunked, one flush per event: vLLM streams through
uvicorn with ``Transfer-Encoding: chunked`` and one write per token, so a gateway's per-chunk
work (read, parse, forward) is exercised as it would be in front of vLLM; a single canned
body with ``Content-Length`` would hide exactly the cost the stream benchmark exists to show.
Non-stream answers carry ``Content-Length``, as vLLM's JSON responses do.
"""

from __future__ import annotations

from pathlib import Path

from loadtests.benchmarks.overhead.stack.canned import CannedResponses

NGINX_MODULES_DIR = Path("/usr/lib/nginx/modules")
LUA_MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")


def _lua_string(data: bytes) -> str:
    """A Lua long-bracket literal holding ``data`` verbatim (no escapes are interpreted)."""
    text = data.decode()
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    eq = "=" * level
    # A long bracket drops a newline right after the opening bracket; lead with one so none is lost.
    return f"[{eq}[\n{text}]{eq}]"


def render_canned_lua(canned: CannedResponses) -> str:
    """The Lua module ``canned.lua``: the bodies as strings, loaded once per nginx worker."""
    events = ",\n".join(_lua_string(event) for event in canned.chat_sse_events)
    responses_events = ",\n".join(_lua_string(event) for event in canned.responses_sse_events)
    messages_events = ",\n".join(_lua_string(event) for event in canned.messages_sse_events)
    return (
        "local M = {}\n"
        f"M.chat_json = {_lua_string(canned.chat_json)}\n"
        f"M.models_json = {_lua_string(canned.models_json)}\n"
        f"M.metrics_text = {_lua_string(canned.metrics_text)}\n"
        f"M.sse_events = {{\n{events}\n}}\n"
        f"M.responses_json = {_lua_string(canned.responses_json)}\n"
        f"M.responses_events = {{\n{responses_events}\n}}\n"
        f"M.messages_json = {_lua_string(canned.messages_json)}\n"
        f"M.messages_events = {{\n{messages_events}\n}}\n"
        "return M\n"
    )


def _handler_lua(path: str, json_name: str, events_name: str) -> str:
    """The Lua answering ``POST path``: JSON with Content-Length, or SSE with one chunk flushed per event."""
    return f"""\
-- POST {path}: JSON with Content-Length, or SSE with one chunk flushed per event.
local canned = require "canned"
ngx.req.read_body()
local body = ngx.req.get_body_data() or ""
if string.find(body, '"stream"%s*:%s*true') then
  ngx.header["Content-Type"] = "text/event-stream; charset=utf-8"
  for _, event in ipairs(canned.{events_name}) do
    ngx.print(event)
    ngx.flush(false)
  end
else
  ngx.header["Content-Type"] = "application/json"
  ngx.header["Content-Length"] = #canned.{json_name}
  ngx.print(canned.{json_name})
end
"""


CHAT_HANDLER_LUA = _handler_lua("/v1/chat/completions", "chat_json", "sse_events")
RESPONSES_HANDLER_LUA = _handler_lua("/v1/responses", "responses_json", "responses_events")
MESSAGES_HANDLER_LUA = _handler_lua("/v1/messages", "messages_json", "messages_events")


def render_nginx_conf(run_dir: Path, port: int) -> str:
    """nginx.conf for one worker on 127.0.0.1:``port``, every path inside ``run_dir``."""
    modules = "\n".join(f"load_module {NGINX_MODULES_DIR / name};" for name in LUA_MODULES)
    temp = "\n".join(
        f"  {kind}_temp_path {run_dir / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""\
{modules}
daemon off;
worker_processes 1;
pid {run_dir / 'nginx.pid'};
error_log {run_dir / 'nginx-error.log'} warn;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  client_body_buffer_size 64k;
  lua_package_path "{run_dir}/?.lua;;";
{temp}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location = /v1/chat/completions {{ content_by_lua_file {run_dir / 'chat.lua'}; }}
    location = /v1/responses {{ content_by_lua_file {run_dir / 'responses.lua'}; }}
    location = /v1/messages {{ content_by_lua_file {run_dir / 'messages.lua'}; }}
    location = /v1/models {{
      default_type application/json;
      content_by_lua_block {{ ngx.print(require("canned").models_json) }}
    }}
    location = /metrics {{
      default_type "text/plain; version=0.0.4";
      content_by_lua_block {{ ngx.print(require("canned").metrics_text) }}
    }}
    location = /health {{ return 200; }}
    location / {{ return 404; }}
  }}
}}
"""


def write_backend_files(run_dir: Path, port: int, canned: CannedResponses) -> Path:
    """Write nginx.conf and the Lua files into ``run_dir``; return the path of nginx.conf."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "canned.lua").write_text(render_canned_lua(canned))
    (run_dir / "chat.lua").write_text(CHAT_HANDLER_LUA)
    (run_dir / "responses.lua").write_text(RESPONSES_HANDLER_LUA)
    (run_dir / "messages.lua").write_text(MESSAGES_HANDLER_LUA)
    conf = run_dir / "nginx.conf"
    conf.write_text(render_nginx_conf(run_dir, port))
    return conf


def nginx_command(conf: Path) -> list[str]:
    """The command that runs nginx in the foreground on ``conf``."""
    return ["nginx", "-c", str(conf), "-p", str(conf.parent), "-e", str(conf.parent / "nginx-error.log")]
