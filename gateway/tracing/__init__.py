"""Tracing: a lifecycle subscriber that turns each request into OpenTelemetry spans
(``otlp.py``, imported only when ``server.otlp_traces_endpoint`` is set) and its null object
(``off.py``). Above the lifecycle: it reads the lifecycle's types; the runtime wires it, and
``gateway.flow`` never imports it."""
