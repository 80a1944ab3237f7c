"""How a run measures: the request kinds (``modes``), load from wrk and its parser (``wrk``), the
smoke check a gateway passes before any number is taken (``smoke``), the phases against one
gateway in one mode (``phases``), how busy the machine is otherwise (``machine``), and one whole
run over every gateway (``run``).

May import: ``stack`` and this room."""
