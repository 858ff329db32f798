"""Ray Data: scorer actors on a local Ray cluster that the test starts on 127.0.0.1 and shuts down."""

import pytest
import ray

import dialeval
from dialeval.backbone.device import torch_threads
from dialeval.scale.ray_data import score_ray_dataset


@pytest.fixture(scope="module")
def local_cluster():
    # Ray starts its workers at nice 15: beside another test process they then get a few percent of a core, and
    # each job here waited minutes for its actor (220 s against 20 s at nice 0, measured on the 2-core machine)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             configure_logging=False, _system_config={"worker_niceness": 0})
    yield
    ray.shutdown()


def _rows(n: int) -> list[dict]:
    """Rows of varied lengths, contexts as messages, so that batches mix shapes unless the scorer keeps them apart."""
    return [{"id": f"r{i}",
             "context": [{"role": "user", "content": "Could you tell me about your weekend? " * (i % 4 + 1)},
                         {"role": "assistant", "content": "It was quiet."}],
             "response": "We went hiking near the lake and cooked dinner outside. " * (i % 6 + 1)}
            for i in range(n)]


def test_two_actors_give_single_process_scores_in_input_order(local_cluster):
    rows = _rows(60)
    # one intra-op thread in the actors and here: equal thread counts make equal bits (dialeval.backbone.device)
    scored = score_ray_dataset(ray.data.from_items(rows), "pone", concurrency=2, rows_per_call=8,
                               batch_size=4, threads=1).take_all()
    with torch_threads(1):
        expected = dialeval.load_scorer("pone").score(contexts=[r["context"] for r in rows],
                                                      responses=[r["response"] for r in rows])
    assert [r["id"] for r in scored] == [r["id"] for r in rows]  # order kept, nothing lost or duplicated
    assert max(abs(r["score"] - s) for r, s in zip(scored, expected.scores)) == 0.0
    assert all(r["error"] is None and r["skipped_reason"] is None for r in scored)


def test_bad_row_is_recorded_in_place_under_skip_and_stops_the_job_otherwise(local_cluster):
    rows = _rows(12)
    rows[5]["response"] = None  # Arrow columns keep one type, so a bad row in Ray is a null or empty value
    rows[8]["response"] = "   "
    scored = score_ray_dataset(ray.data.from_items(rows), "utterance_length", rows_per_call=4, on_error="skip",
                               empty_turns="skip").take_all()
    assert [r["id"] for r in scored] == [r["id"] for r in rows]
    assert scored[5]["score"] is None and scored[5]["error"].startswith("row id='r5': field 'response' is None")
    assert scored[8]["score"] is None and scored[8]["skipped_reason"].endswith("at field 'response'")
    assert all(r["score"] is not None for i, r in enumerate(scored) if i not in (5, 8))
    with pytest.raises(Exception, match="row id='r5': field 'response' is None"):
        score_ray_dataset(ray.data.from_items(rows), "utterance_length", rows_per_call=4).take_all()
