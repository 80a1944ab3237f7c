"""The nginx/Lua backend's files: its canned answers as Lua, its config kept in the run dir, a handler per API."""

from __future__ import annotations

from pathlib import Path

from loadtests.benchmarks.overhead.measure.wrk import render_script
from loadtests.benchmarks.overhead.stack.backend import render_canned_lua, render_nginx_conf
from loadtests.benchmarks.overhead.stack.canned import API_KEY, canned_responses


def test_lua_long_strings_survive_closing_brackets_in_the_data() -> None:
    lua = render_canned_lua(canned_responses())
    assert lua.count("[[\n") >= 4
    tricky = render_script(b'{"content": "a]]b"}', API_KEY)
    assert "[=[" in tricky and f"Bearer {API_KEY}" in tricky


def test_nginx_conf_keeps_every_path_in_the_run_dir(tmp_path: Path) -> None:
    conf = render_nginx_conf(tmp_path, 18999)
    assert "listen 127.0.0.1:18999" in conf
    for line in conf.splitlines():
        if "_path " in line or line.startswith(("pid ", "error_log ")):
            assert str(tmp_path) in line


def test_the_backend_serves_the_responses_api_from_its_own_handler(tmp_path: Path) -> None:
    from loadtests.benchmarks.overhead.stack.backend import RESPONSES_HANDLER_LUA

    assert "location = /v1/responses" in render_nginx_conf(tmp_path, 18999)
    assert "canned.responses_events" in RESPONSES_HANDLER_LUA and "canned.responses_json" in RESPONSES_HANDLER_LUA
    lua = render_canned_lua(canned_responses())
    assert "M.responses_json = " in lua and "response.completed" in lua
