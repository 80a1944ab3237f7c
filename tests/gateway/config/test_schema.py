"""The schema's defaults are the frozen types' defaults: a config that sets nothing optional
builds exactly the values the types give when constructed bare."""

from __future__ import annotations

import pytest

from gateway.config import parse_config
from gateway.config.policy import TaskDefaults
from gateway.config.strict import default_of
from gateway.config.types import AccessSettings, KubernetesDiscovery, ServerSettings, StateSettings
from gateway.errors import ConfigError
from gateway.speed import SpeedPrior

# Only what the schema requires; every section that has optional settings is present, empty
# where it may be.
MINIMAL = """
access: {require_keys: false}
models:
  m:
    variants:
      static:
        kind: full
        served_model_name: m-static
        max_model_len: 1024
        price: {input_per_mtok: 1, output_per_mtok: 2}
        speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01}
        replicas: [{url: "http://127.0.0.1:9"}]
      found:
        kind: quantized
        served_model_name: m-found
        max_model_len: 1024
        price: {input_per_mtok: 1, output_per_mtok: 2}
        speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01}
        discovery: {kubernetes: {label_selector: "app=m"}}
routing:
  tasks: {chat: {}}
  default_task: chat
  plugins:
    - {type: step-model, name: latency}
    - {type: cheapest-within-budget, name: cheapest}
  profiles:
    default: {predictor: latency, objective: cheapest}
"""


def test_unset_settings_take_the_frozen_types_defaults() -> None:
    config = parse_config(MINIMAL)
    assert config.server == ServerSettings()
    assert config.state == StateSettings()
    assert config.access == AccessSettings(explicit=True)
    for variant in config.models["m"].variants.values():
        assert variant.speed == SpeedPrior(prefill_tokens_per_s=1000, decode_s_per_token=0.01)
    assert config.discovery == (KubernetesDiscovery("m", "found", "app=m"),)
    chat = config.policy.tasks["chat"]
    assert chat == TaskDefaults(None, None, None, chat.expected_output_tokens)


def test_default_of_refuses_a_field_without_a_plain_default() -> None:
    with pytest.raises(TypeError, match="KubernetesDiscovery.model has no default"):
        default_of(KubernetesDiscovery, "model")
    with pytest.raises(TypeError, match="AccessSettings.tiers has no default"):
        default_of(AccessSettings, "tiers")  # a default_factory, not a value to share


def test_a_calibration_record_is_kept_out_of_the_step_model_and_checked_strictly() -> None:
    """``speed.calibration`` (written by ``duet calibrate``) says where the values came from; the
    router's prior is the same with or without it, and it takes no unknown keys."""
    record = ('speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01, calibration: {hardware_class: avx2, '
              'measured_at: "2026-12-04T11:00:00+00:00", replica: "http://127.0.0.1:9", probe_s: 41.5}}')
    plain = "speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01}"
    config = parse_config(MINIMAL.replace(plain, record, 1))
    assert config.models["m"].variants["static"].speed == SpeedPrior(prefill_tokens_per_s=1000, decode_s_per_token=0.01)
    with pytest.raises(ConfigError, match=r"models\.m\.variants\.static\.speed\.calibration\.cpu"):
        parse_config(MINIMAL.replace(plain, record.replace("probe_s: 41.5", "probe_s: 41.5, cpu: x"), 1))


def test_the_machines_load_in_a_calibration_record_is_checked_strictly() -> None:
    """``calibration.machine_load`` (serving.calibration.load): the others' CPU fits the
    machine, steal is a share, and no unknown key; each error names its path."""
    plain = "speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01}"

    def with_load(load: str) -> str:
        record = ('speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01, calibration: {hardware_class: avx2, '
                  'measured_at: "2026-12-05T19:00:00+00:00", replica: "http://127.0.0.1:9", '
                  f'probe_s: 41.5, machine_load: {load}}}}}')
        return MINIMAL.replace(plain, record, 1)

    config = parse_config(with_load("{others_cores: 1.9, steal_share: 0.0, cores: 2, probes: 2, busy: true}"))
    assert config.models["m"].variants["static"].speed == SpeedPrior(prefill_tokens_per_s=1000, decode_s_per_token=0.01)
    path = r"models\.m\.variants\.static\.speed\.calibration\.machine_load"
    with pytest.raises(ConfigError, match=path + r".*others_cores 3\.0 is more than the machine's 2 cores"):
        parse_config(with_load("{others_cores: 3.0, steal_share: 0.0, cores: 2, probes: 1, busy: true}"))
    with pytest.raises(ConfigError, match=path + r"\.steal_share"):
        parse_config(with_load("{others_cores: 0.1, steal_share: 1.5, cores: 2, probes: 1, busy: true}"))
    with pytest.raises(ConfigError, match=path + r"\.load_average"):
        parse_config(with_load("{others_cores: 0.1, steal_share: 0.0, cores: 2, probes: 1, busy: false, load_average: 3}"))


def test_a_speculative_calibrations_decode_by_task_is_checked_strictly() -> None:
    """``calibration.decode_by_task`` (serving.calibration.by_task): a record for readers, checked
    like the rest; the routing terms are the block's ``tokens_per_step``."""
    plain = "speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01}"

    def with_tasks(tasks: str, scaled: float = 1.2) -> str:
        record = ('speed: {prefill_tokens_per_s: 1000, decode_s_per_token: 0.01, tokens_per_step: {chat: 1.0, coding: 1.8}, '
                  'calibration: {hardware_class: avx512, measured_at: "2026-12-06T11:00:00+00:00", '
                  f'replica: "http://127.0.0.1:9", probe_s: 8.0, decode_by_task: {tasks}, '
                  'tokens_per_step_measured: [chat, coding], '
                  f'tokens_per_step_from_prior: [], step_scaled_for_tasks: {scaled}}}}}')
        return MINIMAL.replace(plain, record, 1)

    good = ("{chat: {decode_s_per_token: 0.033, tokens_per_chunk: 1.0, acceptance: 0.79},"
            " coding: {decode_s_per_token: 0.019, tokens_per_chunk: 1.8}}")
    speed = parse_config(with_tasks(good)).models["m"].variants["static"].speed
    assert speed.tokens_per_step_for("chat") == 1.0 and speed.tokens_per_step_for("coding") == 1.8
    path = r"models\.m\.variants\.static\.speed\.calibration"
    with pytest.raises(ConfigError, match=path + r"\.decode_by_task\.chat\.accepted"):
        parse_config(with_tasks("{chat: {decode_s_per_token: 0.033, tokens_per_chunk: 1.0, accepted: 0.5}}"))
    with pytest.raises(ConfigError, match=path + r"\.decode_by_task\.chat\.acceptance"):
        parse_config(with_tasks("{chat: {decode_s_per_token: 0.033, tokens_per_chunk: 1.0, acceptance: 1.5}}"))
    with pytest.raises(ConfigError, match=path + r"\.step_scaled_for_tasks"):
        parse_config(with_tasks(good, scaled=0.5))
