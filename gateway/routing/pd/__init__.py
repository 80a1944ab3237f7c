"""Disaggregated prefill as routing decides it: whether a request is split between a prefill
replica and a decode replica (``rules``), which pairs may take it (``pairs``), and the decision
that carries the pairs to the director (``split``). Pure and synchronous, like the router."""
