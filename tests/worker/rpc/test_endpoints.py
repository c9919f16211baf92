"""``HOST:PORT`` lists as ``--rpc`` takes them, refused where ggml-rpc would fail on them."""

from __future__ import annotations

import re

import pytest

from worker.rpc.endpoints import Endpoint, parse_endpoints


def test_a_comma_list_keeps_its_order_and_drops_repeats() -> None:
    parsed = parse_endpoints(" 10.0.0.2:50052 ,gpu-box:50053,10.0.0.2:50052,")
    assert parsed == (Endpoint("10.0.0.2", 50052), Endpoint("gpu-box", 50053))
    assert [str(endpoint) for endpoint in parsed] == ["10.0.0.2:50052", "gpu-box:50053"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "expected HOST:PORT[,HOST:PORT…]"),
        ("gpu-box", "'gpu-box': expected HOST:PORT"),
        (":50052", "':50052': expected HOST:PORT"),
        ("gpu-box:http", "the port must be a number from 1 to 65535"),
        ("gpu-box:70000", "the port must be a number from 1 to 65535"),
        ("[fe80::1]:50052", "IPv4 only"),
        ("fe80::1:50052", "IPv4 only"),
    ],
)
def test_what_ggml_cannot_connect_to_is_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        parse_endpoints(text)
