"""Why a parity run cannot start or finish; the CLI prints the message and exits non-zero."""

from __future__ import annotations


class ParityError(Exception):
    """Bad input or an endpoint that cannot be used (the message says which and why)."""
