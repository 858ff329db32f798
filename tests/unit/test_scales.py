"""The calibrated scale (dialeval.scoring.scales): maps stored per metric and fingerprint, applied by every scorer,
refused with the command that fits them, named in the signature; the raw scale unchanged."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dialeval.errors import UnknownNameError
from dialeval.scoring import scales
from dialeval.scoring.base import Scorer
from dialeval.scoring.calibration import CalibrationError, EmpiricalCdf
from dialeval.scoring.registry import available_metrics


class Lengths(Scorer):
    """Scores a response by its number of words; its fingerprint is its setting."""

    name = "lengths"

    def __init__(self, setting: str = "a", **kwargs):
        super().__init__(**kwargs)
        self.setting = setting
        self.calls = 0

    def fingerprint(self):
        return {"setting": self.setting}

    def _score_items(self, items, *, batch_size, progress_bar):
        self.calls += 1
        return np.array([len(it.response.split()) for it in items], dtype=np.float64)


CDF = EmpiricalCdf.fit([1.0, 2.0, 3.0, 4.0, 5.0], source="five replies", points=5)


@pytest.fixture
def scales_file(tmp_path, monkeypatch):
    path = tmp_path / "scales.json"
    monkeypatch.setattr(scales, "SCALES_FILE", path)
    scales.write_scale("lengths", {"setting": "a"}, "turn", CDF, "dialeval calibrate --metric lengths")
    return path


def test_the_signature_names_the_calibrated_scale_and_leaves_the_raw_one_alone():
    assert scales.with_scale("metric:x|torch:2", "raw") == "metric:x|torch:2"
    assert scales.with_scale("metric:x|torch:2", "calibrated") == "metric:x|torch:2|scale:calibrated"
    with pytest.raises(UnknownNameError, match="percentile"):
        scales.with_scale("metric:x", "percentile")


def test_a_calibrated_score_is_the_raw_scores_percentile_and_the_raw_score_stays_in_metadata(scales_file):
    scorer = Lengths()
    raw = scorer.score(contexts=["c"] * 3, responses=["one", "one two three", "a b c d e f g"])
    out = scorer.score(contexts=["c"] * 3, responses=["one", "one two three", "a b c d e f g"], scale="calibrated")
    assert raw.scores == [1.0, 3.0, 7.0] and raw.metadata["scale"] == "raw" and "raw_scores" not in raw.metadata
    assert out.scores == [0.0, 0.5, 1.0] and out.metadata["raw_scores"] == raw.scores
    assert out.system_score == pytest.approx(0.5)
    assert out.signature == raw.signature + "|scale:calibrated" and out.metadata["scale"] == "calibrated"


def test_a_skipped_item_keeps_its_place_on_the_calibrated_scale(scales_file):
    out = Lengths().score(contexts=["c"] * 3, responses=["one two", " ", "one two three four"], scale="calibrated",
                          empty_turns="skip")
    assert out.scores == [0.25, None, 0.75] and out.metadata["raw_scores"] == [2.0, None, 4.0]


def test_a_metric_without_a_map_is_refused_before_scoring_with_the_command_that_fits_one(scales_file):
    scorer = Lengths()
    scorer.name = "unmapped"
    with pytest.raises(CalibrationError, match=r"metric 'unmapped' has no calibrated scale; fit one with "
                                               r"`dialeval calibrate --metric unmapped`"):
        scorer.score(contexts=["c"], responses=["r"], scale="calibrated")
    assert scorer.calls == 0


def test_another_setting_or_level_is_refused_naming_what_is_stored(scales_file):
    with pytest.raises(CalibrationError, match=r"no calibrated scale for this checkpoint and settings \(setting=b; "
                                               r"the stored ones are for setting=a\)"):
        Lengths(setting="b").score(contexts=["c"], responses=["r"], scale="calibrated")
    with pytest.raises(CalibrationError, match=r"no calibrated scale for dialogue-level scores \(fitted: turn\); fit "
                                               r"one with `dialeval calibrate --metric lengths --level dialogue`"):
        Lengths().score_dialogues(dialogues=[["a", "b c"]], scale="calibrated")


def test_the_checkpoint_folder_name_does_not_matter_its_content_hash_does(tmp_path):
    path = tmp_path / "s.json"
    scales.write_scale("m", {"checkpoint": "default", "checkpoint_sha256": "abc"}, "turn", CDF, "cmd", path=path)
    assert scales.scale_map("m", {"checkpoint": "/runs/m/best", "checkpoint_sha256": "abc"}, "turn", path=path) == CDF
    with pytest.raises(CalibrationError, match="checkpoint_sha256=def"):
        scales.scale_map("m", {"checkpoint": "default", "checkpoint_sha256": "def"}, "turn", path=path)


def test_writing_a_map_replaces_its_own_and_keeps_the_others(tmp_path):
    path = tmp_path / "s.json"
    other = EmpiricalCdf.fit([0.0, 10.0], source="two", points=3)
    scales.write_scale("m", {"k": "1"}, "turn", CDF, "c1", path=path)
    scales.write_scale("m", {"k": "1"}, "dialogue", other, "c2", path=path)
    scales.write_scale("m", {"k": "2"}, "turn", other, "c3", path=path)
    scales.write_scale("m", {"k": "1"}, "turn", other, "c4", path=path)
    data = json.loads(path.read_text())
    assert [e["fingerprint"] for e in data["m"]] == [{"k": "1"}, {"k": "2"}]
    assert data["m"][0]["turn"]["command"] == "c4" and data["m"][0]["dialogue"]["command"] == "c2"
    assert scales.scale_map("m", {"k": "1"}, "turn", path=path) == other


def test_fit_scale_scores_the_human_sample_on_the_raw_scale_and_stores_its_map(scales_file, monkeypatch):
    from dialeval.evaluation import calibrate

    sample = calibrate.HumanSample("three replies", contexts=[["hi"]] * 3, responses=["a", "a b", "a b c d"])
    monkeypatch.setattr(calibrate, "human_replies", lambda data_dir, **kw: sample)
    scorer = Lengths(setting="c")
    cdf = calibrate.fit_scale(scorer, "turn", command="dialeval calibrate --metric lengths --option setting=c")
    assert cdf.quantiles[0] == 1.0 and cdf.quantiles[-1] == 4.0 and cdf.n == 3 and cdf.source == "three replies"
    assert scorer.score(contexts=["x"], responses=["a b c d e"], scale="calibrated").scores == [1.0]
    stored = scales.read_scales()["lengths"][1]
    assert stored["fingerprint"] == {"setting": "c"} and stored["turn"]["command"].endswith("--option setting=c")


def test_the_space_shows_the_raw_and_the_calibrated_score(scales_file):
    from dialeval.interfaces.space import Space

    space = Space("lengths", title="t", description="d", score_label="length")
    space._scorers["default"] = Lengths()
    answer = space.answer("hello", "one two three")
    assert answer.splitlines()[:2] == ["length: 3.0000",
                                       "calibrated: 0.5000 (higher than 50% of human replies in DailyDialog "
                                       "validation)"]
    assert answer.endswith("|scale:calibrated")
    space._scorers["default"] = Lengths(setting="z")  # no map: the raw score alone
    assert space.answer("hello", "one two three").splitlines()[0] == "length: 3.0000"


def test_every_metric_ships_a_calibrated_scale():
    stored = scales.read_scales()
    missing = [m for m in available_metrics() if not any(lv in e for e in stored.get(m, []) for lv in scales.LEVELS)]
    assert not missing, f"no calibrated scale stored for {missing}; fit with `dialeval calibrate --metric M`"
    for metric, entries in stored.items():
        for entry in entries:
            for level in scales.LEVELS:
                if level in entry:
                    cdf = EmpiricalCdf.from_json(entry[level], member=metric)
                    assert cdf.n >= 1000 and entry[level]["command"].startswith(f"dialeval calibrate --metric {metric}")


def test_a_users_checkpoint_gets_its_map_in_the_users_file_never_in_the_package(scales_file, tmp_path, monkeypatch):
    """The shipped checkpoints' maps live in the package; a map fitted for another checkpoint goes to the user's
    file ($DIALEVAL_SCALES_FILE), and a lookup finds both."""
    user = tmp_path / "user" / "scales.json"
    monkeypatch.setenv(scales.USER_SCALES_ENV, str(user))
    before = scales_file.read_text()
    mine = {"checkpoint": "/runs/lengths/best", "checkpoint_sha256": "abc"}
    assert scales.scales_file_for(mine) == user and scales.scales_file_for({"checkpoint": "default"}) == scales_file
    assert scales.write_scale("lengths", mine, "turn", CDF, "dialeval calibrate --metric lengths --checkpoint x") == user
    assert scales_file.read_text() == before
    assert scales.scale_map("lengths", mine, "turn") == CDF  # from the user's file
    assert scales.scale_map("lengths", {"setting": "a"}, "turn") == CDF  # from the package's
    with pytest.raises(CalibrationError, match="dialeval calibrate --metric lengths"):
        scales.scale_map("lengths", {**mine, "checkpoint_sha256": "other"}, "turn")


def test_every_shipped_checkpoint_has_a_map_fitted_on_its_current_files():
    """A shipped checkpoint refitted or replaced without `dialeval calibrate` would leave its maps keyed by the old
    content hash, and `scale="calibrated"` would refuse it: every shipped checkpoint folder (every name) that a metric
    scores with has a map stored for its current fingerprint."""
    from dialeval.scoring.checkpoints import checkpoint_fingerprint, shipped_root

    stored = {e["fingerprint"].get("checkpoint_sha256") for entries in scales.read_scales().values() for e in entries}
    folders = [p.parent for p in shipped_root().glob("*/*/config.json") if p.parent.parent.name != "amr_parser"]
    assert len(folders) >= 8, folders  # seven learned metrics' defaults and the ensemble's, at least
    stale = [f"{f.parent.name}/{f.name} ({checkpoint_fingerprint(f)})" for f in folders
             if checkpoint_fingerprint(f) not in stored]
    assert not stale, f"no calibrated map for the current files of {stale}; fit with `dialeval calibrate --metric M " \
                      "--checkpoint NAME`"
