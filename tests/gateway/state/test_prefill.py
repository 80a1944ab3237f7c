from gateway.state.prefill import PrefillBacklog


def test_backlog_counts_tokens_until_prefilled():
    backlog = PrefillBacklog()
    backlog.add("a", 100)
    backlog.add("a", 50)
    backlog.add("b", 7)
    assert dict(backlog.tokens) == {"a": 150, "b": 7}
    backlog.done("a", 100)
    backlog.done("b", 7)
    assert dict(backlog.tokens) == {"a": 50}
    backlog.done("a", 80)  # never negative
    assert dict(backlog.tokens) == {}
