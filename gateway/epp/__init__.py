"""Duet as the endpoint picker (EPP) of a Gateway API Inference Extension gateway: Envoy (or any
data plane speaking GIE's endpoint-picker protocol v1.0.0) calls ``duet epp`` over ext_proc for
each request and sends it to the replica Duet names; Envoy carries the bytes.

The EPP is one more caller of the lifecycle (``gateway.flow``'s director), beside the HTTP proxy,
the dry run and the replay: same plan, admission, routing, hooks and outcome, with a transport
that hands the pick to the data plane (``handoff.py``). Modules, top down:

    server.py    the process: ext_proc service, gRPC health, the gateway's parts
    rpc.py       a gRPC server (calls by path, statuses, health) on h2.py's HTTP/2, in the loop
    h2.py        HTTP/2 over cleartext: frames, flow control, streams of gRPC messages
    hpack_blocks.py  the header blocks h2.py writes, and which received ones it may reuse
    stream.py    one ext_proc stream = one request through the director
    passage.py   the response on its way back: Duet's headers, the body observed, the outcome
    handoff.py   the director's Transport: the pick out, the answer read from the response
    wire.py      ext_proc messages <-> plain values (pure)
"""

from gateway.epp.rpc import Call, RpcServer
from gateway.epp.wire import PROCESS_PATH

__all__ = ["PROCESS_PATH", "Call", "RpcServer"]
