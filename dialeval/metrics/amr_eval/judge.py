"""The LLM stage of the AMR-enhanced evaluator: an LLM rates a response's appropriateness from 1 to 5.

With ``with_structure=True`` (the paper's method) the prompt holds the dialogue, the response, the SLM's
probability that the response is appropriate and the linearised AMR graphs of the context and the response; with
``with_structure=False`` (the G-Eval baseline) only the dialogue and the response. Both end with a "scores only"
evaluation form (:func:`judge_messages`; wording versioned by :data:`PROMPT_VERSION`).

Rating (:func:`rating_from_completion`): with log-probabilities of the answer's first token, the
probability-weighted mean of 1..5 over the tokens ``"1"`` .. ``"5"`` (whitespace around a token ignored),
renormalised over those five; none of them among the log-probs is a failure. Without log-probabilities, the first
number in the text, which must be a whole number from 1 to 5.

:class:`LlmJudge` runs the requests on a thread pool, retries transient failures with exponential backoff, and
keeps every completed request in an on-disk JSON-lines cache, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from filelock import FileLock

from dialeval.backbone.batching import progress
from dialeval.errors import InputError

from .graphs import SimpleGraph
from .judge_backends import DIGITS, Completion, JudgeBackend, JudgeBackendError, TransientBackendError

__all__ = [
    "PROMPT_VERSION",
    "JudgeCache",
    "JudgeItem",
    "JudgeResult",
    "JudgeSummary",
    "LlmJudge",
    "Rating",
    "RatingError",
    "judge_messages",
    "rating_from_completion",
]

log = logging.getLogger(__name__)

#: Bumped whenever the wording of :func:`judge_messages` changes; part of :meth:`LlmJudge.signature`.
PROMPT_VERSION = "amr-judge-v1"

SYSTEM_PROMPT = ("You evaluate open-domain dialogue. Given a conversation and a candidate next turn, you rate how "
                 "appropriate the candidate is as a reply.")
CRITERION = ("Appropriateness (1-5): is the response a relevant, coherent and sensible reply to the last turn, "
             "consistent with the rest of the dialogue? 1 = not appropriate at all, 3 = partly appropriate, "
             "5 = fully appropriate.")
STRUCTURE_NOTE = ("A small evaluation model that reads the text and its AMR (Abstract Meaning Representation) graphs "
                  "gives the probability that the response is appropriate: {p}")
ANSWER_FORM = ("Evaluation form (scores only):\n- Appropriateness (1-5):\n\n"
               "Answer with the score only: one whole number from 1 to 5.")


@dataclass(frozen=True)
class JudgeItem:
    """One response to rate: its ``context`` (turns, oldest first; a string is one turn), the ``response``, and,
    for ``with_structure=True``, the SLM's ``slm_probability`` and the graphs of the context and the response
    (a :class:`SimpleGraph`, or the text of one already linearised)."""

    context: Sequence[str] | str
    response: str
    slm_probability: float | None = None
    context_graph: SimpleGraph | str | None = None
    response_graph: SimpleGraph | str | None = None


@dataclass(frozen=True)
class JudgeResult:
    """The rating of item ``index``: ``score`` in [1, 5], or None with ``error`` saying why. ``answer`` is the
    backend's text (None when the request failed), ``method`` ``"logprobs"`` or ``"text"`` (how the score was
    read), ``digit_mass`` the probability the log-probs put on "1".."5" together (a small value means the model
    meant to answer something else), ``cached`` whether the answer came from the cache, ``attempts`` the requests
    made for it in this run."""

    index: int
    score: float | None
    answer: str | None = None
    method: str | None = None
    digit_mass: float | None = None
    error: str | None = None
    cached: bool = False
    attempts: int = 0


@dataclass(frozen=True)
class JudgeSummary:
    """Counts of one :meth:`LlmJudge.rate` call: ``requested`` distinct prompts sent (the rest came from the
    cache or repeated another item's prompt), ``failed_requests`` items whose request still failed after the
    retries (a later run retries them), ``failed_ratings`` items whose answer held no rating."""

    items: int
    from_cache: int
    requested: int
    failed_requests: int
    failed_ratings: int

    @property
    def failed(self) -> int:
        return self.failed_requests + self.failed_ratings


class Rating(NamedTuple):
    """A score read from an answer; ``digit_mass`` (the probability on "1".."5") only for ``method="logprobs"``."""

    score: float
    method: str
    digit_mass: float | None = None


class RatingError(ValueError):
    """An answer that holds no rating from 1 to 5."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _graph_text(graph: SimpleGraph | str, where: str) -> str:
    if isinstance(graph, SimpleGraph):
        graph = graph.linearise()
    elif not isinstance(graph, str):
        raise InputError(f"{where} must be a SimpleGraph or a linearised graph string, got {type(graph).__name__}")
    return _one_line(graph) or "(empty graph)"


def judge_messages(context: Sequence[str] | str, response: str, *, with_structure: bool,
                   slm_probability: float | None = None, context_graph: SimpleGraph | str | None = None,
                   response_graph: SimpleGraph | str | None = None, where: str = "item") -> list[dict[str, str]]:
    """The system and user messages asking for the response's appropriateness from 1 to 5 (module docstring).

    Turns and the response are written on one line each (runs of whitespace collapsed). ``with_structure=True``
    requires ``slm_probability`` (a number in [0, 1], written with 3 decimals) and both graphs;
    ``with_structure=False`` leaves them out of the prompt even when given. A missing or malformed field raises
    :class:`InputError` naming ``where`` and the field.
    """
    turns = [context] if isinstance(context, str) else context
    if not isinstance(turns, Sequence) or not turns:
        raise InputError(f"{where}.context must be a non-empty list of turns (strings)")
    for k, turn in enumerate(turns):
        if not isinstance(turn, str) or not turn.strip():
            raise InputError(f"{where}.context[{k}] must be a non-empty string, got {turn!r:.60}")
    if not isinstance(response, str) or not response.strip():
        raise InputError(f"{where}.response must be a non-empty string, got {response!r:.60}")
    dialogue = "\n".join(f"[{k}] {_one_line(t)}" for k, t in enumerate(turns, 1))
    parts = ["Rate the response below as the next turn of the dialogue.", "Criterion - " + CRITERION,
             "Dialogue:\n" + dialogue, "Response:\n" + _one_line(response)]
    if with_structure:
        p = slm_probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (math.isfinite(p) and 0 <= p <= 1):
            raise InputError(f"{where}.slm_probability must be a number in [0, 1] with with_structure=True, "
                             f"got {p!r}")
        for field, graph in (("context_graph", context_graph), ("response_graph", response_graph)):
            if graph is None:
                raise InputError(f"{where}.{field} is required with with_structure=True")
        parts.append("Structured information:\n- " + STRUCTURE_NOTE.format(p=f"{p:.3f}")
                     + "\n- AMR graph of the dialogue: " + _graph_text(context_graph, f"{where}.context_graph")
                     + "\n- AMR graph of the response: " + _graph_text(response_graph, f"{where}.response_graph")
                     + "\nUse this information as evidence, but give your own rating.")
    parts.append(ANSWER_FORM)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def rating_from_completion(completion: Completion) -> Rating:
    """The :class:`Rating` of an answer (module docstring); :class:`RatingError` when it holds none."""
    if completion.top_logprobs is not None:
        mass = dict.fromkeys(DIGITS, 0.0)
        for token, logprob in completion.top_logprobs.items():
            digit = token.strip()
            if digit in mass and math.isfinite(logprob):
                mass[digit] += math.exp(logprob)
        total = sum(mass.values())
        if total <= 0:
            seen = ", ".join(repr(t) for t in list(completion.top_logprobs)[:8])
            raise RatingError(f"none of the tokens '1'..'5' is among the first answer token's log-probs "
                              f"(got {seen or 'none'})")
        return Rating(sum(int(d) * m for d, m in mass.items()) / total, "logprobs", total)
    match = _NUMBER.search(completion.text)
    if match is None:
        raise RatingError("the answer holds no number")
    value = float(match.group())
    if not value.is_integer() or not 1 <= value <= 5:
        raise RatingError(f"rating {match.group()} is not a whole number from 1 to 5")
    return Rating(value, "text")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """The answers of one backend signature, ``<cache_dir>/llm-judge-<sha256(signature)>.jsonl``.

    One JSON object per line, appended, flushed and fsynced per completed request under a file lock:
    ``{"key", "text", "top_logprobs"}`` for an answer, ``{"key", "error", "attempts"}`` for a request that failed
    after its retries (kept for the record; it does not count as answered). ``key`` is the sha256 of the backend
    signature and the prompt messages. A line that does not decode (one torn by a crash) is skipped and counted in
    ``skipped_lines``; the next append starts on a fresh line.
    """

    def __init__(self, cache_dir: str | os.PathLike, backend_signature: str) -> None:
        self.path = Path(cache_dir) / f"llm-judge-{_sha256(backend_signature)}.jsonl"
        self.skipped_lines = 0
        self._lock = threading.Lock()

    def load(self) -> dict[str, Completion]:
        """The answered keys (a key answered twice keeps its last answer)."""
        answers: dict[str, Completion] = {}
        self.skipped_lines = 0
        if self.path.is_file():
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    try:
                        row = json.loads(line)
                        if "error" not in row:
                            top = row["top_logprobs"]
                            answers[row["key"]] = Completion(str(row["text"]), None if top is None else {
                                str(t): float(v) for t, v in top.items()})
                    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                        self.skipped_lines += 1
        return answers

    def append(self, row: dict) -> None:
        line = json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, FileLock(str(self.path) + ".lock"):
            with open(self.path, "a+b") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell():
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":  # a torn last line: start on a fresh one
                        line = "\n" + line
                fh.seek(0, os.SEEK_END)
                fh.write(line.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())


class LlmJudge:
    """Rates :class:`JudgeItem` s with ``backend``: the paper's prompt (``with_structure=True``) or G-Eval's.

    :meth:`rate` sends each distinct prompt not yet answered in the cache on a pool of ``concurrency`` threads.
    A :class:`TransientBackendError` is retried up to ``backend.max_retries`` times, waiting
    ``min(max_backoff_s, backoff_s * 2**k)`` (k = 0, 1, ...) times a random factor in [0.5, 1], or the server's
    ``Retry-After`` when it sent one (capped the same way); a :class:`JudgeBackendError` is not retried. The
    per-request timeout is the backend's. Each request's outcome is appended to the cache (``cache_dir``, default
    ``dialeval.paths.cache_dir("llm_judge")``; ``cache=False`` keeps none) by its worker as soon as it is known,
    so an interrupted run loses no answer and a later run requests only what is missing, failures included. Any
    other exception from the backend is a bug and propagates (requests not yet started are cancelled).
    """

    def __init__(self, backend: JudgeBackend, *, with_structure: bool, cache_dir: str | os.PathLike | None = None,
                 cache: bool = True, concurrency: int = 4, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if concurrency < 1:
            raise InputError(f"concurrency = {concurrency!r}; expected >= 1")
        if backoff_s < 0 or max_backoff_s < 0:
            raise InputError(f"backoff_s = {backoff_s!r} and max_backoff_s = {max_backoff_s!r} must be >= 0")
        self.backend, self.with_structure = backend, bool(with_structure)
        self.concurrency, self.backoff_s, self.max_backoff_s, self._sleep = concurrency, backoff_s, max_backoff_s, sleep
        self.cache: JudgeCache | None = None
        if cache:
            if cache_dir is None:
                from dialeval.paths import cache_dir as default_cache_dir

                cache_dir = default_cache_dir("llm_judge")
            self.cache = JudgeCache(cache_dir, backend.signature())
        self.last_summary: JudgeSummary | None = None

    def signature(self) -> str:
        return (f"llm-judge(prompt={PROMPT_VERSION}, with_structure={self.with_structure}, "
                f"backend={self.backend.signature()})")

    def messages(self, item: JudgeItem, index: int = 0) -> list[dict[str, str]]:
        """The prompt of ``item`` (errors name ``items[index]``)."""
        where = f"items[{index}]"
        if not isinstance(item, JudgeItem):
            raise InputError(f"{where} must be a JudgeItem, got {type(item).__name__}")
        return judge_messages(item.context, item.response, with_structure=self.with_structure,
                              slm_probability=item.slm_probability, context_graph=item.context_graph,
                              response_graph=item.response_graph, where=where)

    def request_key(self, messages: Sequence[dict[str, str]]) -> str:
        """sha256 of the backend signature and the messages: the cache key of one request."""
        payload = json.dumps([self.backend.signature(), list(messages)], ensure_ascii=False, sort_keys=True)
        return _sha256(payload)

    def _request(self, key: str, messages: list[dict[str, str]]) -> tuple[Completion | str, int]:
        """(the completion, or the failure's text) and the attempts made; the outcome is cached first."""
        attempt = 0
        while True:
            attempt += 1
            try:
                outcome: Completion | str = self.backend.complete(messages)
                break
            except TransientBackendError as err:
                if attempt > self.backend.max_retries:
                    outcome = f"request failed after {attempt} attempt(s): {err}"
                    break
                wait = (err.retry_after if err.retry_after is not None
                        else self.backoff_s * 2 ** (attempt - 1) * (0.5 + random.random() / 2))
                log.debug("LLM judge: transient failure (%s); retry %d in %.2f s", err, attempt, wait)
                self._sleep(min(self.max_backoff_s, wait))
            except JudgeBackendError as err:
                outcome = f"request failed (not retried): {err}"
                break
        if self.cache is not None:
            self.cache.append({"key": key, "text": outcome.text, "top_logprobs": outcome.top_logprobs}
                              if isinstance(outcome, Completion) else {"key": key, "error": outcome,
                                                                        "attempts": attempt})
        return outcome, attempt

    def rate(self, items: Iterable[JudgeItem], *, progress_bar: bool | None = None) -> list[JudgeResult]:
        """One :class:`JudgeResult` per item, in input order. Every prompt is built (and every item checked)
        before the first request. Failures are results, counted in :attr:`last_summary` and logged as a
        warning. ``progress_bar`` shows the requests as they complete (``None``: once they take a few seconds)."""
        items = list(items)
        messages = [self.messages(item, i) for i, item in enumerate(items)]
        keys = [self.request_key(m) for m in messages]
        cached = self.cache.load() if self.cache is not None else {}
        todo = {k: m for k, m in zip(keys, messages) if k not in cached}
        fresh: dict[str, tuple[Completion | str, int]] = {}
        if todo:
            pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo)), thread_name_prefix="llm-judge")
            try:
                futures = {pool.submit(self._request, k, m): k for k, m in todo.items()}
                for future in progress(as_completed(futures), total=len(futures), enabled=progress_bar,
                                       desc="llm-judge"):
                    fresh[futures[future]] = future.result()
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            pool.shutdown()
        results = []
        for i, key in enumerate(keys):
            outcome, attempts = (cached[key], 0) if key in cached else fresh[key]
            common = {"index": i, "cached": key in cached, "attempts": attempts}
            if not isinstance(outcome, Completion):
                results.append(JudgeResult(score=None, error=f"item {i}: {outcome}", **common))
                continue
            try:
                rating = rating_from_completion(outcome)
            except RatingError as err:
                results.append(JudgeResult(score=None, answer=outcome.text, error=(
                    f"item {i}: {err}; the answer starts {outcome.text[:60]!r}"), **common))
                continue
            results.append(JudgeResult(score=rating.score, answer=outcome.text, method=rating.method,
                                       digit_mass=rating.digit_mass, **common))
        failed_requests = sum(1 for r in results if r.error is not None and r.answer is None)
        summary = JudgeSummary(items=len(items), from_cache=sum(k in cached for k in keys), requested=len(todo),
                               failed_requests=failed_requests,
                               failed_ratings=sum(1 for r in results if r.error is not None) - failed_requests)
        self.last_summary = summary
        if summary.failed:
            log.warning("LLM judge: %d of %d items have no score (%d failed requests, which a later run retries; "
                        "%d answers without a rating)", summary.failed, summary.items, summary.failed_requests,
                        summary.failed_ratings)
        return results
