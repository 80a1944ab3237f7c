"""Why serving could not launch or keep a replica. One root of its own, so serving never imports
the gateway; the command shell (gateway/cli) catches these and says them to the user.

ServingError
 ├── LaunchProfileError   a launch profile file is invalid, or the profile asked for does not exist
 ├── LocalModelError      the local model could not be obtained or did not verify
 ├── ReplicaFailed        a replica exited or never became healthy (the message ends with its log)
 ├── SupervisorError      a supervised replica failed for good, or did not get ready in time
 └── CalibrationError     a replica's speed could not be measured (serving/calibration)

The simulator (serving/sim) refuses bad input with its own ``ValueError`` subclasses.
"""

from __future__ import annotations


class ServingError(Exception):
    """Base of every error serving raises on purpose."""


class LaunchProfileError(ServingError):
    """A launch profile file is invalid, or a profile asked for does not exist. ``path`` names
    where (``fast-int4.yaml: engine_args``), empty when the problem is not in one place."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class LocalModelError(ServingError):
    """The local model could not be obtained or did not verify."""


class ReplicaFailed(ServingError):
    """A replica exited or never became healthy. The message ends with its log's last lines."""


class SupervisorError(ServingError):
    """A supervised replica failed for good, or did not get ready in time."""


class CalibrationError(ServingError):
    """A replica could not be calibrated: unreachable, not an OpenAI-compatible server, or its
    timings did not fit the step model (what was measured is in the message)."""
