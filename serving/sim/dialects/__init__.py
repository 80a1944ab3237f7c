"""The APIs the simulated replica speaks, as data: a chat or completions request body read into
one ``Call`` (``api_request``), vLLM's exact answer bodies and stream chunks (``vllm_bodies``),
other APIs served over chat (``dialect``: Anthropic's Messages in ``anthropic``, OpenAI's
Responses API in ``openai_responses``), and embeddings and detokenize (``pooling``).

May import: ``serving.sim.profile``, ``serving.sim.tokens`` and this room. No engine, no
asyncio, no server: serving a dialect through the chat endpoint is ``serving.sim.server.over_chat``."""
