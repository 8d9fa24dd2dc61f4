from __future__ import annotations

import pytest

from synclient.emulator import Emulator, Knobs, parse_size
from synclient.emulator.knobs import SYNAPSE_PROFILE, parse_route_rates, parse_window


@pytest.mark.parametrize(
    "text, expected",
    [
        ("50", 50),
        (50, 50),
        ("32MB", 32_000_000),
        ("4KiB", 4096),
        ("1MiB", 1 << 20),
        ("1.5k", 1500),
        ("2GiB", 2 << 30),
        ("0", 0),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "4XB", "-1", "1 2"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_route_rates_and_window():
    assert parse_route_rates("0.05") == 0.05
    assert parse_route_rates("children=0.1,bundle=0.02") == {"children": 0.1, "bundle": 0.02}
    with pytest.raises(ValueError):
        parse_route_rates("nosuchclass=0.1")
    assert parse_window("10:5") == (10.0, 5.0)
    with pytest.raises(ValueError):
        parse_window("10")


def test_knobs_validate_and_replace():
    knobs = Knobs(bandwidth_per_conn="32MB", fault_api_5xx_rate={"children": 0.5})
    assert knobs.bandwidth_per_conn == 32_000_000
    assert knobs.api_5xx_rate_for("children") == 0.5 and knobs.api_5xx_rate_for("bundle") == 0.0
    with pytest.raises(ValueError):
        Knobs(fault_data_cut_rate=1.5)
    with pytest.raises(TypeError):
        knobs.replace(no_such_knob=1)


def test_profile_synapse():
    with Emulator(profile="synapse", url_lifetime=60) as emu:
        assert emu.knobs.max_concurrent_per_user == SYNAPSE_PROFILE["max_concurrent_per_user"] == 3
        assert emu.knobs.max_requests_per_minute == 600
        assert emu.knobs.url_lifetime == 60  # explicit override wins over the profile
        assert emu.knobs.api_latency_ms > 0 and emu.knobs.data_latency_ms > 0
