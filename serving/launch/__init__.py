"""vLLM launch profiles as data (``profiles/*.yaml``) and what turns them into replicas."""

from serving.errors import LaunchProfileError
from serving.launch.load import PARITY_ROOT, by_variant, load_profile, load_profiles
from serving.launch.profile import LaunchProfile, ModelSource

__all__ = ["PARITY_ROOT", "LaunchProfile", "LaunchProfileError", "ModelSource", "by_variant", "load_profile", "load_profiles"]
