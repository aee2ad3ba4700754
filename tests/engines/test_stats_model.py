from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voxserve.engines.stats_model import StatsRegression, flatten

FRAME, VOCODER = ["stat_in_1", "stat_in_2"], ["stat_in_7", "stat_in_9"]


def _split(row: np.ndarray, names: list[str]) -> dict[str, np.ndarray]:
    half = len(row) // 2
    return {names[0]: row[:half].reshape(1, -1, 1), names[1]: row[half:].reshape(1, -1, 1)}


Stats = dict[str, np.ndarray]
Voice = tuple[np.ndarray, np.ndarray]  # a voice's average frame-rate and vocoder statistics
World = tuple[np.random.Generator, np.ndarray, Voice, Voice]


def _predict(model: StatsRegression, voice: str, frame: Stats) -> Stats:
    predicted = model.predict(voice, frame)
    assert predicted is not None
    return predicted


def _voice(
    rng: np.random.Generator, slope: np.ndarray, x_mean: np.ndarray, y_mean: np.ndarray, n: int
) -> list[tuple[Stats, Stats]]:
    """Sentences of one voice, (frame, vocoder) statistics: frame ones around x_mean, vocoder ones on a
    slope shared by all voices."""
    xs = x_mean + rng.normal(size=(n, len(x_mean)))
    ys = y_mean + (xs - x_mean) @ slope + 0.01 * rng.normal(size=(n, len(y_mean)))
    return [(_split(x, FRAME), _split(y, VOCODER)) for x, y in zip(xs, ys, strict=True)]


@pytest.fixture()
def world() -> World:
    rng = np.random.default_rng(0)
    slope = rng.normal(size=(12, 8)) / 4
    anchor = (rng.normal(size=12), 5 + rng.normal(size=8))
    other = (anchor[0] + 3, anchor[1] + 2)  # another voice: shifted averages, same slope
    return rng, slope, anchor, other


def test_predicts_a_sentence_better_than_the_voice_average(world: World) -> None:
    rng, slope, anchor, other = world
    model = StatsRegression(ridge=0.01)
    # the slope is pooled over voices, each centered on its own averages: 3 sentences each
    model.fit({"anchor": _voice(rng, slope, *anchor, 20), "other": _voice(rng, slope, *other, 3)})
    for voice, means in (("anchor", anchor), ("other", other)):
        sentences = _voice(rng, slope, *means, 20)
        truth = [flatten(vocoder, VOCODER) for _, vocoder in sentences]
        predicted = [flatten(_predict(model, voice, frame), VOCODER) for frame, _ in sentences]
        error = np.mean([np.sum((p - t) ** 2) for p, t in zip(predicted, truth, strict=True)])
        baseline = np.mean([np.sum((means[1] - t) ** 2) for t in truth])
        assert error < 0.3 * baseline, (voice, error, baseline)
    frame = sentences[0][0]
    assert model.predict("af_bella+anchor", frame) is None and not model.knows("af_bella+anchor")
    assert _predict(model, "anchor", frame)["stat_in_7"].shape == (1, 4, 1)


def test_never_predicts_a_negative_variance(world: World) -> None:
    rng, slope, anchor, _ = world
    model = StatsRegression()
    model.fit({"anchor": _voice(rng, slope, anchor[0], anchor[1] + 10, 10)})  # every target positive
    far = _split(anchor[0] - 1000, FRAME)  # a sentence far outside what was seen
    assert min(float(v.min()) for v in _predict(model, "anchor", far).values()) > 0


def test_needs_a_voice_with_two_sentences(world: World) -> None:
    rng, slope, anchor, other = world
    model = StatsRegression()
    assert model.predict("anchor", _voice(rng, slope, *anchor, 1)[0][0]) is None  # not fitted yet
    with pytest.raises(ValueError, match="two or more"):
        model.fit({"anchor": _voice(rng, slope, *anchor, 1), "other": _voice(rng, slope, *other, 1)})


def test_saves_and_reloads_with_its_tag(tmp_path: Path, world: World) -> None:
    rng, slope, anchor, _ = world
    model = StatsRegression()
    sentences = _voice(rng, slope, *anchor, 5)
    model.fit({"anchor": sentences})
    path = tmp_path / "stats_model.npz"
    model.save(path, "built-1")
    assert not StatsRegression().load(path, "built-2")
    assert not StatsRegression().load(tmp_path / "missing.npz", "built-1")
    loaded = StatsRegression()
    assert loaded.load(path, "built-1") and loaded.knows("anchor")
    frame = sentences[0][0]
    for name, value in _predict(model, "anchor", frame).items():
        np.testing.assert_allclose(_predict(loaded, "anchor", frame)[name], value, rtol=1e-4, atol=1e-4)


def test_a_blend_starts_from_its_voices_weighted_averages(world: World) -> None:
    rng, slope, anchor, other = world
    model = StatsRegression()
    model.fit({"anchor": _voice(rng, slope, *anchor, 5), "other": _voice(rng, slope, *other, 5)})
    mixed_x = 0.75 * model._voices["anchor"][0] + 0.25 * model._voices["other"][0]
    mixed_y = 0.75 * model._voices["anchor"][1] + 0.25 * model._voices["other"][1]
    # a sentence exactly at the blend's average frame statistics is predicted at its average vocoder ones
    frame = _split(mixed_x, FRAME)
    assert model.knows("anchor:3+other:1")
    np.testing.assert_allclose(flatten(_predict(model, "anchor:3+other:1", frame), VOCODER), mixed_y, rtol=1e-5)
    assert not model.knows("anchor:x+other") and model.predict("anchor+", frame) is None  # malformed
