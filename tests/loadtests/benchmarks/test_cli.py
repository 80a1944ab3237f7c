import socket

from gateway.cli import main


def test_bench_slo_names_an_unreachable_replica(tmp_path, capsys):
    code = main(["bench", "slo", "--replicas", "smoke", "--replica-urls",
                 "standard=http://127.0.0.1:9,fast=http://127.0.0.1:9", "--out", str(tmp_path)])
    assert code == 2
    assert "replica for variant 'standard' at http://127.0.0.1:9 is not reachable" in capsys.readouterr().err


def test_bench_slo_names_a_busy_port(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["bench", "slo", "--replicas", "smoke", "--port", str(port), "--out", str(tmp_path)])
    assert code == 2
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err


def test_bench_slo_wants_every_variant_when_given_replicas(tmp_path, capsys):
    code = main(["bench", "slo", "--replicas", "smoke", "--replica-urls", "standard=http://127.0.0.1:9", "--out", str(tmp_path)])
    assert code == 2
    assert "no URL for variant(s) fast" in capsys.readouterr().err


def test_bench_slo_refuses_bad_replica_counts(tmp_path, capsys):
    code = main(["bench", "slo", "--replicas", "h100-70b:turbo=2", "--out", str(tmp_path)])
    assert code == 2
    assert "bad replica count 'turbo=2'" in capsys.readouterr().err


def test_replica_counts_become_the_benchmark_replica_set():
    from gateway.fleet.replay.setup import parse_cluster

    replica_set = parse_cluster("h100-70b:standard=1,fast=3").with_counts
    assert {v.name: v.replicas for v in replica_set.variants} == {"standard": 1, "fast": 3}
    assert [v.profile for v in replica_set.variants] == ["h100-70b-bf16", "h100-70b-fp8"]
