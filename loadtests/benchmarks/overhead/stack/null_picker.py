"""The least an endpoint picker can do over Envoy's ext_proc in Python: the same gRPC stack as
``duet epp`` (``gateway.epp.rpc`` on uvloop), the same messages (the body held to its end, the pick and the
body back, the response's headers answered and its body echoed), and nothing else: one fixed
endpoint, no lifecycle. Its row in bench-overhead (``envoy-null-picker``) tells the transport's
cost apart from Duet's.

    python -m loadtests.benchmarks.overhead.stack.null_picker PORT HOST:PORT
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import uvloop
from envoy.config.core.v3 import base_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc

from gateway.epp import PROCESS_PATH, Call, RpcServer


def _body(piece: bytes, end: bool, response: bool) -> Any:
    streamed = ext_proc.StreamedBodyResponse(body=piece, end_of_stream=end)
    body = ext_proc.BodyResponse(response=ext_proc.CommonResponse(
        body_mutation=ext_proc.BodyMutation(streamed_response=streamed)))
    return ext_proc.ProcessingResponse(response_body=body) if response else ext_proc.ProcessingResponse(request_body=body)


def _pick(endpoint: str, length: int) -> Any:
    overwrite = base_pb2.HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD
    headers = [base_pb2.HeaderValueOption(header=base_pb2.HeaderValue(key=k, raw_value=v.encode()), append_action=overwrite)
               for k, v in (("x-gateway-destination-endpoint", endpoint), ("content-length", str(length)))]
    common = ext_proc.CommonResponse(header_mutation=ext_proc.HeaderMutation(set_headers=headers))
    return ext_proc.ProcessingResponse(request_headers=ext_proc.HeadersResponse(response=common))


class NullPicker:
    def __init__(self, endpoint: str) -> None:
        self._endpoint = endpoint

    async def process(self, call: Call) -> None:
        body = b""
        while (message := await call.read()) is not None:
            if message.HasField("request_body"):
                body += message.request_body.body
                if message.request_body.end_of_stream:
                    await call.write(_pick(self._endpoint, len(body)))
                    await call.write(_body(body, True, response=False))
            elif message.HasField("response_headers"):
                await call.write(ext_proc.ProcessingResponse(response_headers=ext_proc.HeadersResponse()))
            elif message.HasField("response_body"):
                await call.write(_body(message.response_body.body, message.response_body.end_of_stream, response=True))


async def serve(port: int, endpoint: str) -> None:
    server = RpcServer({PROCESS_PATH: (NullPicker(endpoint).process, ext_proc.ProcessingRequest)})
    await server.start("127.0.0.1", port)
    await asyncio.Event().wait()  # until the harness stops the process


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(serve(int(sys.argv[1]), sys.argv[2]))
