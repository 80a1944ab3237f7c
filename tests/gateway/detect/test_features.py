from gateway.detect.features import (
    FOLLOW_UP_CHARS,
    HEAD_CHARS,
    TAIL_CHARS,
    TOOL_RESULTS,
    message_features,
    prompt_features,
)


def test_a_long_prompt_is_read_through_a_bounded_window():
    short = message_features([{"role": "user", "content": "word " * ((HEAD_CHARS + TAIL_CHARS) // 5)}])
    long = message_features([{"role": "user", "content": "word " * 200_000}])
    assert abs(len(long) - len(short)) < 10  # the same window, whatever the length
    assert any(f.startswith("len:") for f in long) and "ulen:19" in long


def test_roles_tool_results_and_system_prompt_are_features():
    names = message_features([
        {"role": "system", "content": "You extract entities."},
        {"role": "user", "content": "Where is my order?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
        {"role": "tool", "content": '{"status": "shipped"}'},
    ])
    assert {"last:tool", "calls:1", "results:1", "system:True", "s:extract", "t:shipped", "u:order"} <= set(names)


def test_only_the_latest_tool_results_are_read():
    """An agent loop of many calls reads its latest TOOL_RESULTS results, not all of them."""
    messages = [{"role": "user", "content": "Track my parcels"}]
    for i in range(TOOL_RESULTS + 40):
        messages += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]},
                     {"role": "tool", "content": f"parcel {'early' if i < 40 else 'latest'}"}]
    names = set(message_features(messages))
    assert {"t:latest", "results:3", "calls:3"} <= names and "t:early" not in names


def test_the_former_code_rule_is_a_feature():
    assert "code:True" in prompt_features("```python\nprint(1)\n```")
    assert "code:False" in prompt_features("What is the capital of France?")


def test_programming_words_first_word_and_question_shape_are_features():
    names = set(prompt_features("How do closures capture a variable in JavaScript?"))
    assert {"prog:2", "first:how", "ask:True"} <= names  # variable, javascript (closures is not in the list)
    names = set(prompt_features("Write a poem about the sea."))
    assert {"prog:0", "first:write", "ask:False"} <= names


def test_a_short_follow_up_is_read_after_the_turn_it_follows():
    """"Why?" carries no task of its own; the turn it follows does."""
    puzzle = "A shop sells pens at $7 each and gives one free for every 3 bought. How much do 16 pens cost?"
    names = set(message_features([{"role": "user", "content": puzzle}, {"role": "assistant", "content": "$84"},
                                  {"role": "user", "content": "Why?"}]))
    assert {"u:pens", "u:why", "first:a"} <= names


def test_a_turn_longer_than_a_follow_up_is_read_alone():
    latest = "Write a poem about the sea. " * (FOLLOW_UP_CHARS // 20)
    names = set(message_features([{"role": "user", "content": "How much do 16 pens cost?"},
                                  {"role": "assistant", "content": "$84"}, {"role": "user", "content": latest}]))
    assert "u:pens" not in names and "u:poem" in names
