"""The real base-size encoder, all-mpnet-base-v2, where it is installed (skipped otherwise, with the command that
installs it: it is 440 MB, and no test downloads it)."""

import pytest
import torch

from dialeval.backbone import encoders as enc
from dialeval.backbone.encoder import Encoder, encoder_name

NAME = "all-mpnet-base-v2"


@pytest.fixture(scope="module")
def mpnet_folder():
    try:
        return enc.installed_folder(NAME)
    except enc.EncoderNotInstalled as err:
        pytest.skip(str(err))


def test_installed_weights_are_the_pinned_ones(mpnet_folder):
    assert enc.sha256_of(mpnet_folder / enc.WEIGHTS_FILE) == enc.ENCODERS[NAME].weights_sha256
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
