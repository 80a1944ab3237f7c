import random

from gateway.detect.training.templates.template import PEOPLE, pick, user


def test_a_one_turn_request_has_a_system_prompt_only_when_given_one():
    assert user("hi") == [{"role": "user", "content": "hi"}]
    assert user("hi", system="Be brief.") == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


def test_pick_draws_distinct_items_as_the_seed_decides():
    drawn = pick(random.Random("s"), PEOPLE, 3)
    assert len(set(drawn)) == 3 and set(drawn) <= set(PEOPLE)
    assert drawn == pick(random.Random("s"), PEOPLE, 3)
