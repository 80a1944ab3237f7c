"""duet_extension_point_duration_seconds: observations land in the bucket that holds them, a
hook's subscriber is labelled by its class, and /metrics shows a Prometheus histogram."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from gateway.extension_times import ExtensionTimes, ExtensionTimesCollector, subscriber_name


class DecodeKeeper:
    def dispatched(self) -> None:
        pass


def render(times: ExtensionTimes) -> str:
    registry = CollectorRegistry()
    registry.register(ExtensionTimesCollector(times))
    return generate_latest(registry).decode()


def test_observations_become_a_cumulative_histogram_in_seconds() -> None:
    times = ExtensionTimes()
    for elapsed_ns in (800, 1_024, 3_000, 2_000_000_000):
        times.observe("filter", "healthy", elapsed_ns)
    text = render(times)
    series = 'extension_point="filter",plugin="healthy"'

    def bucket(le: str) -> str:
        return f'duet_extension_point_duration_seconds_bucket{{extension_point="filter",le="{le}",plugin="healthy"}}'
    assert f'{bucket("1.024e-06")} 2.0' in text  # le is inclusive
    assert f'{bucket("2.048e-06")} 2.0' in text
    assert f'{bucket("4.096e-06")} 3.0' in text
    assert f'{bucket("1.073741824")} 3.0' in text
    assert f'{bucket("+Inf")} 4.0' in text
    assert f'duet_extension_point_duration_seconds_count{{{series}}} 4.0' in text
    assert f'duet_extension_point_duration_seconds_sum{{{series}}} 2.000004824' in text


def test_a_subscriber_is_named_by_its_class_in_kebab_case() -> None:
    keeper = DecodeKeeper()
    assert subscriber_name(keeper.dispatched) == "decode-keeper"
    assert subscriber_name(test_a_subscriber_is_named_by_its_class_in_kebab_case).startswith("test-a-subscriber")
    times = ExtensionTimes()
    times.observe("dispatched", keeper.dispatched, 10)
    times.observe("dispatched", keeper.dispatched, 10)
    assert 'duet_extension_point_duration_seconds_count{extension_point="dispatched",plugin="decode-keeper"} 2.0' in render(times)


def test_nothing_observed_shows_no_series() -> None:
    assert "duet_extension_point_duration_seconds_count" not in render(ExtensionTimes())
