"""duet.yaml: its schema, loading, and hot reload."""

from gateway.config.load import load_config, parse_config
from gateway.config.types import DuetConfig

__all__ = ["DuetConfig", "load_config", "parse_config"]
