"""What a run starts, each process pinned to its core: the nginx/Lua backend (``backend``) and its
canned vLLM-shaped answers (``canned``), Redis for ``duet-redis`` (``redis``), the gateways under
test (``launch``: what one is; ``duet``: Duet's configs and command; ``peers``: LiteLLM and
vllm-router), and the pinned processes themselves (``processes``).

May import: this room only (and ``serving.ports``)."""
