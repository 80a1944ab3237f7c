"""Envoy's config for a picker: what its ext_proc filter sends the picker, the response included
or not."""

from __future__ import annotations

from loadtests.launch.envoy import EnvoySettings, envoy_config


def _mode(settings: EnvoySettings) -> dict[str, str]:
    config = envoy_config(10000, 10001, 10002, settings)
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    ext_proc = next(f for f in manager["http_filters"] if f["name"] == "envoy.filters.http.ext_proc")
    mode: dict[str, str] = ext_proc["typed_config"]["processing_mode"]
    return mode


def test_the_picker_sees_the_response_by_default_and_the_request_alone_when_asked():
    assert _mode(EnvoySettings()) == {
        "request_header_mode": "SEND", "response_header_mode": "SEND", "request_body_mode": "FULL_DUPLEX_STREAMED",
        "response_body_mode": "FULL_DUPLEX_STREAMED", "request_trailer_mode": "SEND", "response_trailer_mode": "SEND"}
    alone = _mode(EnvoySettings(response=False))
    assert (alone["response_header_mode"], alone["response_body_mode"], alone["response_trailer_mode"]) == (
        "SKIP", "NONE", "SKIP")
    assert alone["request_body_mode"] == "FULL_DUPLEX_STREAMED" and alone["request_trailer_mode"] == "SEND"
