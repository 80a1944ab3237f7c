"""What the simulated model writes, apart from how long it takes: the words or tool-call markup of
one choice, token by token (``output``), vLLM's Hermes tool-call parser (``hermes``), which tool is
called and arguments valid for its schema (``tools``), and answers scripted from a file
(``script``, ``duet sim --answers``).

May import: ``serving.sim.profile``, ``serving.sim.tokens``, ``serving.sim.dialects`` (a choice's
message in vLLM's shape) and this room. No engine, no server."""
