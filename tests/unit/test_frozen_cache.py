"""The frozen-layer cache of ``--frozen-cache`` (dialeval.training.frozen_cache): each token row computed once, on
its own tokens, and given back wherever it comes again, padded to the batch; kept in memory or on disk
(``--frozen-cache-dir``), as float32 or bfloat16 (``--frozen-cache-dtype``)."""

import json
import os

import pytest
import torch

from dialeval.training.frozen_cache import (MANIFEST_FILE, ROWS_FILE, DiskRows, FrozenCacheError, FrozenStateCache,
                                            MemoryRows)


class Recorder:
    """States that name their token: id * 10 + token type, and the mask, as [b, L, 2]; records each call's rows
    (by first id)."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __call__(self, input_ids, attention_mask, token_type_ids=None):
        self.calls.append(input_ids[:, 0].tolist())
        extra = 0 if token_type_ids is None else token_type_ids
        return torch.stack([input_ids * 10.0 + extra, attention_mask.float()], dim=-1)


def padded(rows: list[list[int]], width: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
        mask[i, :len(row)] = 1
    return ids, mask


def test_rows_are_computed_once_on_their_own_tokens_and_come_back_padded_to_the_batch():
    compute = Recorder()
    cache = FrozenStateCache(compute)
    ids, mask = padded([[1, 2], [3, 4, 5]], width=4)
    first = cache.states(ids, mask, token_type_ids=torch.ones_like(ids))
    assert compute.calls == [[1, 3]] and cache.misses == 2 and cache.hits == 0 and cache.tokens == 5
    assert first.shape == (2, 4, 2)
    assert first[0, :, 0].tolist() == [11.0, 21.0, 0.0, 0.0]  # padding positions are zeros
    assert first[1, :, 0].tolist() == [31.0, 41.0, 51.0, 0.0]
    # a later batch, wider: row [3, 4, 5] again (kept: not computed, its states as first computed), a new row [6]
    ids, mask = padded([[6], [3, 4, 5]], width=5)
    again = cache.states(ids, mask, token_type_ids=torch.ones_like(ids))
    assert compute.calls == [[1, 3], [6]] and cache.misses == 3 and cache.hits == 1
    assert again[1, :, 0].tolist() == [31.0, 41.0, 51.0, 0.0, 0.0] and again[0, :, 0].tolist() == [61.0, 0, 0, 0, 0]
    # the same ids with other token types are another row
    ids, mask = padded([[3, 4, 5]], width=3)
    assert cache.states(ids, mask, token_type_ids=torch.zeros_like(ids))[0, :, 0].tolist() == [30.0, 40.0, 50.0]
    assert cache.misses == 4
    # one row twice in a batch (two examples of one context): computed once
    ids, mask = padded([[2, 2], [2, 2]], width=2)
    twice = cache.states(ids, mask)
    assert compute.calls[-1] == [2] and cache.misses == 5 and cache.hits == 2
    torch.testing.assert_close(twice[0], twice[1])


def test_left_padded_rows_are_refused():
    ids = torch.tensor([[0, 1, 2]])
    with pytest.raises(ValueError, match="right-padded rows"):
        FrozenStateCache(Recorder()).states(ids, torch.tensor([[0, 1, 1]]))


class Noisy:
    """States whose float32 bits all matter: [b, L, 5] from each token's id, type and position; records each call's
    rows (by first id)."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __call__(self, input_ids, attention_mask, token_type_ids=None):
        self.calls.append(input_ids[:, 0].tolist())
        extra = 0 if token_type_ids is None else token_type_ids
        position = torch.arange(input_ids.shape[1])[None, :, None]
        x = (input_ids * 1.37 + extra)[..., None] * torch.arange(1, 6) + position * 0.291
        return torch.sin(x) * 3.7 + 1e-3 * x


BATCHES = [[[1, 2], [3, 4, 5]], [[6], [3, 4, 5], [7, 8, 9, 10]], [[2, 2], [1, 2], [11, 12, 13]]]


def manifest(**changes):
    """A disk store's manifest (what frozen_manifest writes; the store only compares it)."""
    return {"model_type": "dialeval-grade", "encoder": "tiny", "encoder_sha256": "ab" * 32, "frozen_layers": 1,
            "frozen_weights_sha256": "cd" * 32, "precision": "bf16", "dtype": "float32", **changes}


def run_batches(cache, batches=BATCHES) -> list[torch.Tensor]:
    out = []
    for rows in batches:
        ids, mask = padded(rows, width=5)
        out.append(cache.states(ids, mask, token_type_ids=torch.ones_like(ids)))
    return out


def test_a_disk_store_gives_exactly_the_memory_stores_states_and_a_second_one_on_the_folder_computes_nothing(
        tmp_path):
    in_memory = run_batches(FrozenStateCache(Noisy()))
    compute = Noisy()
    cache = FrozenStateCache(compute, DiskRows(tmp_path / "states", manifest()))
    on_disk = run_batches(cache)
    again = run_batches(cache)  # every row now read back from the file
    for a, b, c in zip(in_memory, on_disk, again):
        assert torch.equal(a, b) and torch.equal(a, c)
    report = cache.report()
    cache.close()
    assert report["store"] == "disk" and report["dtype"] == "float32" and report["rows"] == 6
    assert report["tokens"] == 2 + 3 + 1 + 4 + 2 + 3 and report["bytes"] == report["tokens"] * 5 * 4
    assert (report["rows_at_start"], report["misses"], report["hits"]) == (0, 6, 1 + 1 + 8)
    assert report["file_bytes"] == os.path.getsize(tmp_path / "states" / ROWS_FILE) > report["bytes"]
    assert json.loads((tmp_path / "states" / MANIFEST_FILE).read_text()) == manifest()

    compute = Noisy()
    second = FrozenStateCache(compute, DiskRows(tmp_path / "states", manifest()))
    for a, b in zip(in_memory, run_batches(second)):
        assert torch.equal(a, b)
    assert compute.calls == [] and second.misses == 0 and second.hits == 8
    assert second.report()["rows_at_start"] == 6 and second.report()["tokens"] == report["tokens"]


def test_a_rows_file_cut_mid_record_loses_only_that_row(tmp_path):
    folder = tmp_path / "states"
    cache = FrozenStateCache(Noisy(), DiskRows(folder, manifest()))
    expected = run_batches(cache, [[[1, 2]], [[3, 4, 5]], [[6, 7]]])  # one record a batch
    cache.close()
    whole = os.path.getsize(folder / ROWS_FILE)
    os.truncate(folder / ROWS_FILE, whole - 7)  # a process killed while writing the last row

    compute = Noisy()
    store = DiskRows(folder, manifest())
    assert len(store) == 2 and store.discarded_bytes == whole - 7 - os.path.getsize(folder / ROWS_FILE) > 0
    reopened = FrozenStateCache(compute, store)
    for a, b in zip(expected, run_batches(reopened, [[[1, 2]], [[3, 4, 5]], [[6, 7]]])):
        assert torch.equal(a, b)
    assert compute.calls == [[6]] and reopened.hits == 2 and reopened.misses == 1
    assert reopened.report()["discarded_bytes_at_start"] > 0
    reopened.close()
    assert os.path.getsize(folder / ROWS_FILE) == whole


def test_a_folder_of_other_states_is_refused_naming_the_field(tmp_path):
    DiskRows(tmp_path, manifest()).close()
    with pytest.raises(FrozenCacheError, match="manifest.json has precision 'bf16', this run's states have 'fp32'"):
        DiskRows(tmp_path, manifest(precision="fp32"))
    with pytest.raises(FrozenCacheError, match="has dtype 'float32', this run's states have 'bfloat16'"):
        DiskRows(tmp_path, manifest(dtype="bfloat16"))
    with pytest.raises(FrozenCacheError, match="has frozen_layers 1, this run's states have 4"):
        DiskRows(tmp_path, manifest(frozen_layers=4))


def test_a_folder_is_one_processs_and_rows_without_a_manifest_are_refused(tmp_path):
    first = DiskRows(tmp_path / "a", manifest())
    with pytest.raises(FrozenCacheError, match="in use by another process"):
        DiskRows(tmp_path / "a", manifest())
    first.close()
    DiskRows(tmp_path / "a", manifest()).close()  # released: opens again
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ROWS_FILE).write_bytes(b"x" * 40)
    with pytest.raises(FrozenCacheError, match="holds rows.bin but no manifest.json"):
        DiskRows(tmp_path / "b", manifest())


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_bfloat16_storage_gives_the_float32_states_rounded_to_bfloat16(where, tmp_path):
    full = run_batches(FrozenStateCache(Noisy()))
    store = MemoryRows("bfloat16") if where == "memory" else DiskRows(tmp_path, manifest(dtype="bfloat16"))
    cache = FrozenStateCache(Noisy(), store)
    first, again = run_batches(cache), run_batches(cache)
    for f, a, b in zip(full, first, again):
        assert a.dtype == torch.float32 and torch.equal(a, f.to(torch.bfloat16).float()) and torch.equal(a, b)
        assert not torch.equal(a, f)
    assert cache.report()["bytes"] == cache.report()["tokens"] * 5 * 2 and cache.report()["dtype"] == "bfloat16"
    cache.close()
