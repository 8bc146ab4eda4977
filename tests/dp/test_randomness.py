"""The randomness contract: each mechanism of a seeded run draws from a stream of its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from safeshare import release
from safeshare.dp.randomness import Randomness
from safeshare.release import SynthesisSettings


def test_spawned_streams_are_independent_and_reproducible():
    first, second = Randomness(3).spawn(2)
    again = Randomness(3).spawn(2)
    draws = [r.discrete_gaussian(50.0, 200) for r in (first, second)]
    assert not np.array_equal(draws[0], draws[1])
    assert np.array_equal(draws[0], again[0].discrete_gaussian(50.0, 200))
    assert all(r.secure for r in Randomness().spawn(3))
    assert not any(r.secure for r in Randomness(3).spawn(3))
    with pytest.raises(TypeError, match="seed must be"):
        Randomness("3")  # type: ignore[arg-type]


def test_a_seeded_release_never_replays_one_noise_stream(tmp_path, monkeypatch):
    """Discovery's noise and the synthesizer's come from different streams (before, both were
    ``Randomness(seed)``: a seeded run drew the same noise for both)."""
    starts: list[tuple[str, int]] = []
    draw = Randomness.discrete_gaussian

    def recorded(self: Randomness, sigma: float, size: int) -> np.ndarray:
        state = self._generator.bit_generator.state["state"]  # type: ignore[union-attr]
        starts.append((repr(state), size))
        return draw(self, sigma, size)

    monkeypatch.setattr(Randomness, "discrete_gaussian", recorded)
    generator = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "colour": generator.choice(["red", "green", "blue"], 600),
            "size": generator.choice(["S", "M", "L", "XL"], 600),
        }
    )
    release(
        frame,
        out=tmp_path / "out",
        seed=5,
        ledger=tmp_path / "l.sqlite",
        settings=SynthesisSettings(epsilon=1.0),
    )
    assert len(starts) >= 3  # discovery of both columns' categories, then MST's measurements
    states = [state for state, _ in starts]
    assert len(set(states)) == len(states), "two draws started from one generator state"
