"""Planning reads a request's prompt once: its Inbound holds the body's prompt view, and every plan
of the request (a waiting request's re-plans) counts, classifies and cuts blocks from that view."""

from pathlib import Path

from gateway.config import parse_config
from gateway.config.active import ActiveConfig
from gateway.domain import Health, ReplicaState
from gateway.endpoints import ChatBody, PromptView
from gateway.flow import Inbound, InMemoryPrefixIndex, View, plan_request
from gateway.flow.plan import count_input_tokens

CONFIG = parse_config((Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml").read_text())


class CountingBody(ChatBody):
    """A chat body that counts how often its prompt is read."""

    reads: int = 0

    def prompt_view(self) -> PromptView:
        self.reads += 1
        return super().prompt_view()


def test_every_plan_of_a_request_reads_the_prompt_view_its_inbound_read_once():
    body = CountingBody.model_validate({"model": "smollm2", "tools": [{"type": "function", "function": {"name": "f"}}],
                                        "messages": [{"role": "user", "content": "what is a cache? " * 400}]})
    inbound = Inbound(body, {})
    view = View({r.id: ReplicaState(r.id, health=Health.UP) for r in CONFIG.replicas}, prefixes=InMemoryPrefixIndex(1000))
    counters = ActiveConfig.of(CONFIG).counters
    plans = [plan_request(ActiveConfig(CONFIG, counters), inbound, view) for _ in range(3)]
    assert body.reads == 1 and inbound.prompt == body.prompt_view()
    assert plans[0].profile.input_tokens == count_input_tokens(inbound, counters["smollm2"]) > 1600
    assert plans[0].prefix_blocks and plans[0].prefix_blocks == plans[2].prefix_blocks
