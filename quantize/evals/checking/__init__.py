"""The machinery the tasks check answers with, no task in it: reading an answer out of a chat
completion (``answers``), similarity of open answers (``similarity``), and running generated code
against unit tests in a sandboxed child process (``sandbox``; ``sandbox_runner`` is the program
that child runs, not imported).

May import: this room only."""
