"""``dialeval train grade --encoder <an MPNet folder>`` end to end on the tiny fixtures (issue 48): the run trains
the top layer of a tiny MPNet from the frozen-layer cache, records the encoder, and its small checkpoint scores
with the MPNet's frozen layers filled from the encoder folder; another encoder is refused."""

import json

import pytest
from conftest import TINY_DIALOGUES as DIALOGUES
from conftest import write_tiny_mpnet_encoder
from test_grade import write_grade_fixture
from typer.testing import CliRunner

FLAGS = ["--max-positives", "12", "--max-val-positives", "6", "--max-steps", "3", "--eval-every", "1",
         "--batch-size", "4", "--device", "cpu", "--threads", "1", "--trainable-encoder-layers", "1",
         "--frozen-cache"]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """This module's own tiny MPNet folder (the last test rewrites its weights)."""
    return write_tiny_mpnet_encoder(tmp_path_factory.mktemp("mpnet"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, encoder):
    from dialeval.cli import app

    data = write_grade_fixture(tmp_path_factory.mktemp("data"))
    out = tmp_path_factory.mktemp("run")
    with pytest.MonkeyPatch.context() as env:  # graph tables are cached here, not in the user's cache
        env.setenv("DIALEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        res = CliRunner().invoke(app, ["train", "grade", "--output-dir", str(out), "--data-dir", str(data),
                                       "--encoder", str(encoder), *FLAGS])
    assert res.exit_code == 0, res.output
    return out, json.loads((out / "summary.json").read_text())


def test_the_run_trains_the_mpnet_from_the_frozen_cache_and_records_it(trained, encoder):
    from dialeval.backbone.encoder import weights_sha256

    out, summary = trained
    assert summary["finished"] and summary["steps"] == 3
    assert summary["frozen_cache"]["misses"] > 0 and summary["frozen_cache"]["hits"] > 0
    assert summary["encoder"] == {"name": str(encoder), "sha256": weights_sha256(encoder)}
    config = json.loads((out / "best" / "config.json").read_text())
    assert config["encoder_type"] == "mpnet" and config["encoder_config"]["hidden_size"] == 32
    assert config["base_encoder"] == str(encoder) and config["encoder_weights_in_checkpoint"] is False


def test_its_checkpoint_scores_and_refuses_the_encoder_once_its_weights_change(trained, encoder):
    import dialeval
    from dialeval.backbone import EncoderMismatchError

    out, _ = trained
    scorer = dialeval.load_scorer("grade", checkpoint=out / "best", device="cpu")
    assert type(scorer.model.encoder).__name__ == "MPNetModel"
    contexts = [d[:2] for d in DIALOGUES]
    responses = [d[2] for d in DIALOGUES]
    scores = [scorer.score(contexts=contexts, responses=responses, batch_size=b).scores for b in (1, 64)]
    assert scores[0] == scores[1] and all(0.0 < s < 1.0 for s in scores[0]) and len(set(scores[0])) > 1
    write_tiny_mpnet_encoder(encoder, seed=5)  # the same folder, other weights
    with pytest.raises(EncoderMismatchError, match=str(encoder)):
        dialeval.load_scorer("grade", checkpoint=out / "best", device="cpu")
