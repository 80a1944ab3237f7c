"""The verifiable evaluation suite: seeded generators and verifiers per task type (``suite.TASKS``)."""
