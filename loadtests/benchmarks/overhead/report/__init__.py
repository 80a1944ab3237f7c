"""What a run prints and records: the table, the goals and the JSON lines (``summary``), the run
as a committed JSON record (``results``, ``docs/results/overhead.json``), and the "Gateway
overhead" section of docs/benchmarks.md rendered from it (``document``).

May import: ``stack``, ``measure`` and this room."""
