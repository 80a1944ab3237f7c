"""Why a checkpoint could not be built or a parity run could not start or finish. One root of its
own, so quantize never imports the gateway; the command shell (gateway/cli) prints the message
and exits non-zero.

QuantizeError
 ├── RecipeError    a recipe name is unknown or a recipe file is invalid (the message names the path)
 ├── BuildError     the source model is unusable, or the built checkpoint did not verify
 ├── SuiteError     an evaluation suite, task list or sample count that cannot be run
 └── ParityError    bad parity input, an endpoint that cannot be used, or a policy that cannot be written
"""

from __future__ import annotations


class QuantizeError(Exception):
    """Base of every error quantize raises on purpose."""


class RecipeError(QuantizeError):
    """A recipe name is unknown or a recipe file is invalid; the message names the path."""


class BuildError(QuantizeError):
    """The source model is unusable or the built checkpoint did not verify."""


class SuiteError(QuantizeError):
    """A suite, task list or sample count that cannot be run; the message says why."""


class ParityError(QuantizeError):
    """Bad input or an endpoint that cannot be used (the message says which and why)."""
