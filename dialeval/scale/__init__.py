"""Scoring at scale: lazy sources, chunked and resumable output, many processes (Accelerate), many machines (Ray).

``score_stream(scorer, "responses.jsonl", "scores.jsonl")`` scores a file of any size chunk by chunk and resumes
where a stopped run left off; :func:`iter_scored` yields the scored chunks instead. Ray Data users map
:func:`dialeval.scale.ray_data.score_ray_dataset` over a ``ray.data.Dataset``.
"""

from .output import ResultWriter, Totals, manifest_path
from .sources import RowSource, SourceRow, open_source
from .stream import DEFAULT_CHUNK_ROWS, ON_ERROR_POLICIES, ScoredChunk, StreamResult, iter_scored, score_stream

__all__ = ["DEFAULT_CHUNK_ROWS", "ON_ERROR_POLICIES", "ResultWriter", "RowSource", "ScoredChunk", "SourceRow",
           "StreamResult", "Totals", "iter_scored", "manifest_path", "open_source", "score_stream"]
