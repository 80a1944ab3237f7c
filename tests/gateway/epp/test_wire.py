"""The ext_proc messages the endpoint picker reads and writes (GIE's protocol v1.0.0)."""

from __future__ import annotations

import orjson
import pytest
from envoy.config.core.v3 import base_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from google.protobuf import json_format, struct_pb2

from gateway.epp import wire
from gateway.epp.wire import BodyMode
from gateway.errors import RateLimited


def headers_request(pairs: dict[str, str], **fields: object) -> ext_proc.ProcessingRequest:
    values = [base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs.items()]
    return ext_proc.ProcessingRequest(request_headers=ext_proc.HttpHeaders(headers=base_pb2.HeaderMap(headers=values)),
                                      **fields)


def test_headers_are_read_lower_cased_from_raw_value_or_value() -> None:
    request = headers_request({":path": "/v1/chat/completions", "X-Duet-Task": "coding"})
    request.request_headers.headers.headers.add(key="x-old", value="kept")
    assert wire.header_map(request.request_headers) == {":path": "/v1/chat/completions", "x-duet-task": "coding",
                                                       "x-old": "kept"}


@pytest.mark.parametrize(("mode", "expected"), [(4, BodyMode.FULL_DUPLEX), (2, BodyMode.BUFFERED), (1, BodyMode.UNSUPPORTED),
                                                (0, BodyMode.UNSUPPORTED), (None, BodyMode.FULL_DUPLEX)])
def test_body_mode_from_the_protocol_config(mode: int | None, expected: BodyMode) -> None:
    fields = {} if mode is None else {"protocol_config": ext_proc.ProtocolConfiguration(request_body_mode=mode)}
    assert wire.body_mode(headers_request({}, **fields)) is expected


def metadata(namespace: str, value: object) -> base_pb2.Metadata:
    struct = struct_pb2.Struct()
    struct.update(value)  # type: ignore[arg-type]
    return base_pb2.Metadata(filter_metadata={namespace: struct})


@pytest.mark.parametrize(("hint", "expected"), [
    ({"x-gateway-destination-endpoint-subset": ["10.0.0.1:8000", "10.0.0.2:8000"]}, ("10.0.0.1:8000", "10.0.0.2:8000")),
    ({"x-gateway-destination-endpoint-subset": "10.0.0.1:8000, 10.0.0.2:8000"}, ("10.0.0.1:8000", "10.0.0.2:8000")),
    ({"x-gateway-destination-endpoint-subset": []}, ()),
    ({"something-else": "x"}, None),
])
def test_subset_hint(hint: dict[str, object], expected: tuple[str, ...] | None) -> None:
    request = headers_request({}, metadata_context=metadata("envoy.lb.subset_hint", hint))
    assert wire.subset_hint(request) == expected
    assert wire.subset_hint(headers_request({})) is None


def response_request(status: int, *, served_metadata: str | None = None, address: str | None = None,
                     details: str | None = None) -> ext_proc.ProcessingRequest:
    values = [base_pb2.HeaderValue(key=":status", raw_value=str(status).encode())]
    request = ext_proc.ProcessingRequest(response_headers=ext_proc.HttpHeaders(headers=base_pb2.HeaderMap(headers=values)))
    if served_metadata is not None:
        request.metadata_context.CopyFrom(metadata("envoy.lb", {"x-gateway-destination-endpoint-served": served_metadata}))
    attributes = {k: v for k, v in (("upstream.address", address), ("response.code_details", details)) if v is not None}
    if attributes:
        request.attributes["envoy.filters.http.ext_proc"].update(attributes)
    return request


def test_the_served_endpoint_comes_from_the_protocols_metadata_first_then_envoys_attribute() -> None:
    assert wire.response_head(response_request(200, served_metadata="10.0.0.2:80", address="10.0.0.1:80")).served == "10.0.0.2:80"
    assert wire.response_head(response_request(200, address="10.0.0.1:80")).served == "10.0.0.1:80"
    head = wire.response_head(response_request(200))
    assert head.served is None and head.via_upstream and head.status == 200


def test_envoys_own_replies_are_told_apart() -> None:
    reset = "upstream_reset_before_response_started{remote_connection_failure}"
    refused = wire.response_head(response_request(503, details=reset))
    assert not refused.via_upstream and refused.upstream_failed
    unroutable = wire.response_head(response_request(503, details="no_healthy_upstream"))
    assert not unroutable.via_upstream and not unroutable.upstream_failed


@pytest.mark.parametrize("mode", [BodyMode.FULL_DUPLEX, BodyMode.BUFFERED])
def test_the_pick_names_the_same_endpoints_in_the_header_and_the_metadata(mode: BodyMode) -> None:
    endpoints = ["10.0.0.1:8000", "10.0.0.2:8000"]
    response = wire.picked(endpoints, 42, mode) if mode is BodyMode.FULL_DUPLEX else wire.buffered_pick(endpoints, b"x" * 42)
    common = response.request_headers.response if mode is BodyMode.FULL_DUPLEX else response.request_body.response
    headers = {h.header.key: h.header.raw_value.decode() for h in common.header_mutation.set_headers}
    assert headers == {"x-gateway-destination-endpoint": "10.0.0.1:8000,10.0.0.2:8000", "content-length": "42"}
    meta = json_format.MessageToDict(response.dynamic_metadata)
    assert meta == {"envoy.lb": {"x-gateway-destination-endpoint": "10.0.0.1:8000,10.0.0.2:8000"}}
    if mode is BodyMode.BUFFERED:
        assert common.body_mutation.body == b"x" * 42


def test_a_streamed_body_goes_in_pieces_and_only_the_last_ends_it() -> None:
    body = b"y" * (2 * wire.BODY_PIECE_BYTES + 5)
    pieces = wire.streamed_body(body, response=False, end=True)
    streamed = [p.request_body.response.body_mutation.streamed_response for p in pieces]
    assert b"".join(s.body for s in streamed) == body
    assert [s.end_of_stream for s in streamed] == [False, False, True]
    empty = wire.streamed_body(b"", response=True, end=True)
    assert len(empty) == 1 and empty[0].response_body.response.body_mutation.streamed_response.end_of_stream


def test_a_refusal_is_an_immediate_response_with_the_openai_body() -> None:
    error = RateLimited("Request shed.", retry_after_s=1.5)
    body = orjson.dumps({"error": {"message": error.message}})
    response = wire.refusal(error, body).immediate_response
    assert response.status.code == 429 and response.body == body
    headers = {h.header.key: h.header.raw_value.decode() for h in response.headers.set_headers}
    assert headers == {"content-type": "application/json", "retry-after": "2"}
