"""The verifiable evaluation suite: seeded generators and verifiers per task type (``suite.TASKS``).

Here: the vocabulary (``items``: an item, a model's answer, a verdict; ``task``: what every task
type provides), the offline suite (``suite``), scoring a pair of live answers (``online``) and
answer scripts for the simulator (``scripted``). Rooms: ``tasks/`` (one module per task type) and
``checking/`` (reading answers, comparing texts, running code in a sandbox)."""
