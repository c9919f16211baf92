"""``generation_settings`` is llama-server's, key for key and in its order."""

from __future__ import annotations

import json
import math
from pathlib import Path

from worker.sampling.generation_settings import generation_settings
from worker.sampling.params import SamplingParams

GOLDENS = Path(__file__).resolve().parent.parent / "sampling_goldens" / "llama_server.json"


def test_the_keys_come_in_llama_servers_order() -> None:
    # A /completion's generation_settings as llama-server answered it when the goldens were
    # recorded (task_params::to_json); it writes more keys than Corral does, none fewer.
    upstream = list(json.loads(GOLDENS.read_text())["completions"]["defaults"]["settings"])
    ours = list(generation_settings(SamplingParams(), n_predict=8))
    assert set(ours) <= set(upstream)
    assert ours == [key for key in upstream if key in ours]


def test_the_requests_own_settings_stand_among_the_sampling_fields() -> None:
    params = SamplingParams(logit_bias={5: -math.inf, 7: 1.5}, samplers=("top_k",))
    settings = generation_settings(
        params, n_predict=3, n_keep=2, stops=["x"], stream=True, n_probs=4
    )
    keys = list(settings)
    assert keys[keys.index("adaptive_decay") + 1 : keys.index("ignore_eos")] == [
        "stop", "max_tokens", "n_predict", "n_keep",
    ]  # fmt: skip
    assert keys[keys.index("ignore_eos") :] == [
        "ignore_eos", "stream", "logit_bias", "n_probs", "min_keep", "samplers",
    ]  # fmt: skip
    assert settings["logit_bias"] == [{"bias": None, "token": 5}, {"bias": 1.5, "token": 7}]
    assert settings["samplers"] == ["top_k"]
    assert (settings["stop"], settings["n_probs"], settings["stream"]) == (["x"], 4, True)
