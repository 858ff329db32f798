"""Fixtures and small helpers shared by the unit tests (no data, fast) and the integration tests (real corpora).

Helpers that test modules call at import time (constants, writers of tiny fixture folders, the fresh-process runner)
are plain names here; pytest puts this folder on ``sys.path``, so a test module imports them with
``from conftest import ...``.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: The repository root (metrics/, modeling/, dialeval/ ...).
ROOT = Path(__file__).resolve().parents[1]

#: Six short everyday dialogues of five turns: enough for tiny training runs and scoring checks.
TINY_DIALOGUES = [
    ["Do you want to go to the beach on Sunday?", "Sure, I love swimming in the sea.", "Bring a towel and some food.",
     "I will bring sandwiches and water.", "Great, see you at noon."],
    ["I need to buy a new phone.", "What happened to your old phone?", "I dropped it in the water.",
     "You should buy a waterproof phone this time.", "Good idea, I will go to the store."],
    ["Can you help me cook dinner?", "Of course, what are we making?", "A chicken soup with vegetables.",
     "I will cut the carrots and onions.", "Thanks, I will boil the water."],
    ["My dog is sick today.", "Oh no, did you take him to the doctor?", "Yes, the doctor gave him medicine.",
     "I hope your dog feels better soon.", "Thank you, he is sleeping now."],
    ["Let us watch a movie tonight.", "Which movie do you want to see?", "A funny movie with a happy ending.",
     "I will buy the tickets online.", "Perfect, I will make popcorn."],
    ["The train is late again.", "How long do we have to wait?", "About twenty minutes, the screen says.",
     "Let us drink a coffee while we wait.", "Good plan, the cafe is near the station."],
]


def write_dailydialog(root: Path, splits: dict[str, list[list[str]]]) -> Path:
    """A data directory holding ``dailydialog/derived/<split>.jsonl`` with the given dialogues; returns ``root``."""
    folder = root / "dailydialog" / "derived"
    folder.mkdir(parents=True)
    for split, dialogues in splits.items():
        lines = [json.dumps({"dialogue_id": f"{split}-{i}", "original_id": f"{split}-{i}", "topic": "t",
                             "utterances": turns, "acts": ["inform"] * len(turns),
                             "emotions": ["no emotion"] * len(turns)}) for i, turns in enumerate(dialogues)]
        (folder / f"{split}.jsonl").write_text("".join(line + "\n" for line in lines))
    return root


_WITHOUT_DIALEVAL = """\
import importlib.abc, json, sys

class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0].startswith("dialeval"):
            raise ImportError(f"blocked import of {name}")
        return None

sys.meta_path.insert(0, _Block())
import torch
from transformers import AutoModel

args = sys.argv[2:]
result = {}
"""
_REPORT = """
result["dialeval_loaded"] = sorted(m for m in sys.modules if m.startswith("dialeval"))
json.dump(result, open(sys.argv[1], "w"))
"""


def run_without_dialeval(code: str, *args: object, cwd: Path, pythonpath: str | None = None) -> dict:
    """Run ``code`` in a fresh Python process in which any import of ``dialeval`` fails, as a user of a saved
    checkpoint would load it (``trust_remote_code=True``). ``code`` sees ``torch``, ``AutoModel``, ``args`` (the
    extra arguments as strings) and fills the dict ``result``, which is returned with ``dialeval_loaded`` added."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(cwd / "hf_modules"), TRANSFORMERS_VERBOSITY="error")
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = cwd / "without_dialeval.json"
    script = _WITHOUT_DIALEVAL + textwrap.dedent(code) + _REPORT
    proc = subprocess.run([sys.executable, "-c", script, str(out), *map(str, args)], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


_BLOCKING = """\
import importlib.abc, sys

blocked = set(sys.argv[1].split(","))

class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"{name} is not installed here (blocked by the test)")
        return None

sys.meta_path.insert(0, _Block())
sys.argv = ["dialeval", *sys.argv[2:]]
from dialeval.cli import app
app()
"""


def run_cli_blocking(args: list[object], *, blocked: list[str], cwd: Path, env: dict[str, str] | None = None):
    """Run ``dialeval ARGS`` in a fresh process in which importing any of the top-level packages ``blocked``
    raises ``ImportError`` (a machine that lacks them); returns the ``CompletedProcess`` (text output)."""
    full_env = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))
    return subprocess.run([sys.executable, "-c", _BLOCKING, ",".join(blocked), *map(str, args)], cwd=str(cwd),
                          env=full_env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def one_torch_thread():
    """The tests' models are tiny: on a busy 2-core machine, OpenMP threads waiting on each other cost more than they
    bring. Results do not depend on it; the thread count is restored afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def data_dir():
    """The real data directory, or skip (tests that need ../shared/data run in CI, which has it)."""
    from dialeval.paths import DataDirNotFound, resolve_data_dir

    try:
        return resolve_data_dir()
    except DataDirNotFound as err:
        pytest.skip(f"real data not available: {err}")


def write_tiny_encoder(folder: Path, *, seed: int = 0) -> Path:
    """A tiny BERT encoder (32-d, 2 layers) with the bundled MiniLM's tokenizer, saved into ``folder`` as a model
    folder that ``--encoder`` and :class:`dialeval.backbone.Encoder` take; ``seed`` sets its random weights."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from dialeval.backbone import default_encoder_path

    tokenizer = AutoTokenizer.from_pretrained(default_encoder_path(), local_files_only=True)
    torch.manual_seed(seed)
    model = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=64, max_position_embeddings=128))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_tiny_mpnet_encoder(folder: Path, *, seed: int = 0) -> Path:
    """A tiny MPNet encoder (32-d, 2 layers; all-mpnet-base-v2's architecture in small: relative position bias, no
    token types) with an MPNet tokenizer over the bundled MiniLM's word pieces and MPNet's special tokens (``<s>``
    0, ``<pad>`` 1, ``</s>`` 2, as all-mpnet-base-v2's), saved into ``folder`` as a model folder that ``--encoder``
    takes; ``seed`` sets its random weights."""
    import torch
    from transformers import AutoTokenizer, MPNetConfig, MPNetModel, MPNetTokenizer

    from dialeval.backbone import default_encoder_path

    pieces = AutoTokenizer.from_pretrained(default_encoder_path(), local_files_only=True).get_vocab()
    vocab = {token: i for i, token in enumerate(["<s>", "<pad>", "</s>", "<unk>",
                                                 *sorted(pieces, key=pieces.get), "<mask>"])}
    tokenizer = MPNetTokenizer(vocab=vocab, unk_token="[UNK]")
    torch.manual_seed(seed)
    model = MPNetModel(MPNetConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=130, pad_token_id=1,
                                   bos_token_id=0, eos_token_id=2), add_pooling_layer=False)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_mpnet_encoder(tmp_path_factory) -> Path:
    """A tiny MPNet encoder folder (:func:`write_tiny_mpnet_encoder`), for ``--encoder`` in tests."""
    return write_tiny_mpnet_encoder(tmp_path_factory.mktemp("tiny_mpnet_encoder"))


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> Path:
    """A tiny BERT encoder folder (:func:`write_tiny_encoder`), for ``--encoder`` in tests."""
    return write_tiny_encoder(tmp_path_factory.mktemp("tiny_encoder"))
