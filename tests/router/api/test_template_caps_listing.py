"""A loaded model's chat template capabilities reach the router's ``/models`` listing."""

from __future__ import annotations

from tests.support.router_process import RouterProcess


def test_models_lists_the_loaded_model_s_template_capabilities(router: RouterProcess) -> None:
    chat = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    assert router.client.post("/v1/chat/completions", json=chat).status_code == 200
    caps = router.models()["alpha"]["meta"]["chat_template_caps"]
    # alpha's ChatML reads the system message but neither tools nor tool calls.
    assert caps["supports_system_role"] is True
    assert caps["supports_tools"] is False
    assert caps["supports_tool_calls"] is False
