"""One module per task type: agent, chat, coding (with its function templates, ``coding_specs``),
extraction, long_context, reasoning. Each generates seeded items and verifies answers to them.

May import: ``quantize.evals.items``, ``quantize.evals.task``, ``quantize.evals.checking`` and
this room (never ``suite``, ``online`` or ``scripted``, which compose the tasks)."""
