"""Cards rendered from measured results: the stored results, the metric card's results section, the model card.

The figures a card shows come from one place: ``hub_cards/results/<metric>.json``, the JSON that ``dialeval benchmark``
writes, kept without what no card shows: the per-item arrays (scores, ids, human ratings) and Kendall's tau, its numbers
to six significant digits and each result's rows as one table (``columns`` and lists of values, which
:func:`~dialeval.evaluation.read_results` turns back into rows). ``dialeval cards collect`` writes that file from
benchmark output; ``dialeval cards render`` rewrites the results section of ``metrics/<metric>/README.md`` from it,
between :data:`BEGIN` and :data:`END`; the model card of an exported checkpoint (:func:`model_card`) takes its
``model-index`` from the same rows. A test re-renders every card from the stored results and fails when a card and its
results differ, and when the stored results were not measured on the shipped checkpoint.

The model card is written into the exported folder by ``dialeval export`` and ``dialeval release`` alike
(:func:`exported_model_card`, through :func:`dialeval.hub.release.export_model`). Besides the ``model-index`` (only
when the stored results measured the exported checkpoint) it shows how to score text from the folder or its Hub id
(:func:`usage_section`): with ``transformers`` alone where the metric's ``ExportSpec.transformers_usage`` writes that
code (models over sentence embeddings), and through ``dialeval.load_scorer(<metric>, checkpoint=folder)`` for every
metric; a test runs both kinds of code against an exported folder and compares the printed score with dialeval's.
A combination's card (the ensemble's: its spec's export is a ``CombinationExportSpec``) has no ``transformers``
code: its repo holds no model, only the config naming the metrics it combines. Its card scores text through dialeval
and lists the members (:func:`combination_usage_section`): each with the checkpoint sha256 the config pins and the
model repo of the release that holds that checkpoint.

Only results of registered metrics are stored (no ``--label``), learned metrics on a checkpoint that ships with
dialeval (``checkpoint:default``, or another shipped name such as ``checkpoint:base``, in the signature; never a
folder), so that the section can name the command that reproduces it. The tables name a result of another shipped
checkpoint by its metric and that name (``bert_ruber_unref [base]``, :func:`shown_metric`), and the section then
compares it with the default checkpoint (:func:`checkpoint_comparison`: the main figure of each benchmark and the
items/s of each run, from the ``metadata`` a stored result keeps: :data:`STORED_METADATA`). The card's completeness
rule (the spec's ``card_benchmarks``) and the model card's ``model-index`` are about the default checkpoint, unless
the exported checkpoint is another shipped one that the stored results measured.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import DialevalError, InputFileError
from ..evaluation import corpus_summary, markdown_report, read_results
from ..evaluation.runner import comparison, rows_as_table
from ..scoring.export import MODEL_LINE
from ..scoring.checkpoints import DEFAULT_CHECKPOINT, ENCODER_FIELDS, shipped_names
from ..scoring.registry import metric_spec, scorer_class
from ..scoring.spec import CombinationExportSpec, CombinationMember, ExportSpec

#: Keys of a benchmark result that a card reads; the rest (per-item arrays) is not stored.
STORED_KEYS = ("metric", "benchmark", "split", "level", "signature", "rows", "diagnostics")
#: What a stored result keeps of the benchmark result's ``metadata``: the items scored and the seconds the scoring took
#: (the card's items/s) and where it ran (when the file records it); the torch CPU threads it ran with are in its
#: signature (``cpu_threads``). Results collected before they were kept have no ``metadata``; a card that compares
#: checkpoints needs it.
STORED_METADATA = ("n_items", "seconds", "device")
#: Of :data:`STORED_METADATA`, what every collected result must have.
SPEED_KEYS = ("n_items", "seconds")
#: Row fields no card shows (Kendall's tau, its p-value and CI), left out of the stored rows.
DROPPED_ROW_PREFIX = "kendall_"
#: Significant digits a stored number keeps (cards show three decimals; full float64 digits tripled the files).
STORED_DIGITS = 6
BEGIN = "<!-- dialeval:results begin -->"
END = "<!-- dialeval:results end -->"
#: The ``model-index`` task of every card: scoring a dialogue response or a dialogue as humans would.
TASK = {"type": "dialogue-evaluation", "name": "Dialogue evaluation (correlation with human judgements)"}


class CardError(DialevalError):
    """Stored results or a card that cannot be rendered (names the file and what is wrong)."""


# -- the stored results ---------------------------------------------------------------------------------------------
def project_root() -> Path:
    """The source checkout this package runs from (cards and releases are made from a checkout)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "hub_cards").is_dir():
        raise CardError(f"{root} is not a dialeval checkout (no pyproject.toml and hub_cards/): cards and releases "
                        "are made from a clone of the repository, installed with `pip install -e .`")
    return root


def card_metrics() -> list[str]:
    """The metrics with a card rendered from stored results: those whose spec names ``card_benchmarks``."""
    from ..scoring.registry import available_metrics

    return [m for m in available_metrics() if metric_spec(m).card_benchmarks]


def results_path(metric: str, root: str | os.PathLike | None = None) -> Path:
    return Path(root or project_root()) / "hub_cards" / "results" / f"{metric}.json"


def card_path(metric: str, root: str | os.PathLike | None = None) -> Path:
    return Path(root or project_root()) / "metrics" / metric / "README.md"


def _signature_fields(signature: str) -> dict[str, str]:
    return dict(part.split(":", 1) for part in signature.split("|") if ":" in part)


def result_checkpoint(res: dict[str, Any]) -> str:
    """The checkpoint a result measured, as its signature names it (``default``, ``base``, or a folder's name or
    path); ``default`` for a metric without a checkpoint (a baseline), whose result a card shows as it shows the
    default checkpoint's."""
    return _signature_fields(res["signature"]).get("checkpoint", DEFAULT_CHECKPOINT)


def shown_metric(res: dict[str, Any]) -> str:
    """How a card's tables name the metric of a result: its name for the default checkpoint, followed by the
    checkpoint's name in brackets for another shipped one (``bert_ruber_unref [base]``)."""
    checkpoint = result_checkpoint(res)
    return res["metric"] if checkpoint == DEFAULT_CHECKPOINT else f"{res['metric']} [{checkpoint}]"


def check_results(metric: str, results: Sequence[dict[str, Any]], known_metrics: Iterable[str], *,
                  source: str) -> None:
    """:class:`CardError` naming ``source`` and the result unless every result is of a registered metric (learned
    ones on a checkpoint their metric ships by name) and ``metric`` itself is among them."""
    known = set(known_metrics)
    for i, res in enumerate(results):
        missing = [k for k in STORED_KEYS if k not in res]
        if missing:
            raise CardError(f"{source}: result {i} has no {', '.join(missing)}")
        if res["metric"] not in known:
            raise CardError(f"{source}: result {i} is of {res['metric']!r}, not a registered metric (a --label run?); "
                            "a card shows what `dialeval benchmark --metric <name>` reproduces")
        checkpoint = result_checkpoint(res)
        if checkpoint != DEFAULT_CHECKPOINT:
            shipped = shipped_names(scorer_class(res["metric"]).checkpoint_dir)
            if checkpoint not in shipped:
                raise CardError(f"{source}: result {i} ({res['metric']} on {res['benchmark']}) was measured on "
                                f"checkpoint {checkpoint!r}, not a shipped one ({', '.join(shipped)}: "
                                "`--checkpoint <name>`)")
    if not any(res["metric"] == metric for res in results):
        raise CardError(f"{source}: no result of {metric!r} itself")


def collect(metric: str, paths: Sequence[str | os.PathLike], out: str | os.PathLike,
            known_metrics: Iterable[str]) -> list[dict[str, Any]]:
    """Merge the benchmark JSON files ``paths`` into ``out`` (what a card is rendered from), in the given order,
    keeping :data:`STORED_KEYS` and :data:`STORED_METADATA`; the same metric and checkpoint measured twice on one
    benchmark split is refused, and so is a result whose metadata lacks :data:`SPEED_KEYS`."""
    results, seen = [], {}
    for path in paths:
        for i, res in enumerate(read_results(path)):
            key = (res["metric"], res["benchmark"], res.get("split"), result_checkpoint(res) if "signature" in res
                   else DEFAULT_CHECKPOINT)
            if key in seen:
                raise CardError(f"{path}: {key[0]} on {key[1]} ({key[2]}, checkpoint {key[3]}) is also in "
                                f"{seen[key]}; keep one")
            seen[key] = path
            metadata = res.get("metadata") if isinstance(res.get("metadata"), dict) else {}
            missing = [k for k in SPEED_KEYS if not isinstance(metadata.get(k), (int, float))]
            if missing:
                raise CardError(f"{path}: result {i} ({res['metric']} on {res['benchmark']}) has no "
                                f"{' and '.join(f'metadata.{k}' for k in missing)} (what `dialeval benchmark` writes)")
            kept = {k: res.get(k) for k in STORED_KEYS}
            kept["metadata"] = {k: metadata[k] for k in STORED_METADATA if k in metadata}
            kept["rows"] = [{k: v for k, v in row.items() if not k.startswith(DROPPED_ROW_PREFIX)}
                            for row in res["rows"]]
            results.append(rounded(kept))
    check_results(metric, results, known_metrics, source=", ".join(map(str, paths)))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    # one result per line, its rows as one table: small, and a diff shows which result changed
    lines = ",\n".join(json.dumps(rows_as_table(res), allow_nan=True, separators=(",", ":")) for res in results)
    Path(out).write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    return results


def rounded(value: Any) -> Any:
    """``value`` with every float kept to :data:`STORED_DIGITS` significant digits (nan and inf as they are)."""
    if isinstance(value, float):
        return float(f"{value:.{STORED_DIGITS}g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def load_results(metric: str, known_metrics: Iterable[str], root: str | os.PathLike | None = None
                 ) -> list[dict[str, Any]]:
    """The stored results a card is rendered from, checked (:func:`check_results`) and complete: ``metric`` is
    measured on every benchmark of its spec's ``card_benchmarks`` on its default checkpoint (another shipped
    checkpoint's results may cover the same benchmarks or fewer)."""
    path = results_path(metric, root)
    if not path.is_file():
        raise CardError(f"{path} does not exist: run `dialeval benchmark` and `dialeval cards collect --metric "
                        f"{metric} ...` first")
    try:
        results = read_results(path)
    except InputFileError as err:
        raise CardError(str(err)) from None
    check_results(metric, results, known_metrics, source=str(path))
    measured = {res["benchmark"] for res in results
                if res["metric"] == metric and result_checkpoint(res) == DEFAULT_CHECKPOINT}
    missing = [name for name in metric_spec(metric).card_benchmarks if name not in measured]
    if missing:
        raise CardError(f"{path}: no result of {metric!r} on {', '.join(missing)} on its default checkpoint, which "
                        "its spec's card_benchmarks name: benchmark it there and collect again")
    return results


# -- the metric card's results section ------------------------------------------------------------------------------
def reproduce_commands(results: Sequence[dict[str, Any]]) -> list[str]:
    """``dialeval benchmark`` commands that produce ``results``: metrics measured on the same benchmarks share one;
    a metric measured on another shipped checkpoint has a command of its own (``--checkpoint`` takes one metric)
    with ``--checkpoint <name> --output-dir runs/benchmark-<name>`` (its files have the default run's names)."""
    runs: dict[tuple[str, str], list[str]] = {}
    for res in results:
        runs.setdefault((res["metric"], result_checkpoint(res)), []).append(res["benchmark"])
    groups: dict[tuple[str, tuple[str, ...], str], list[str]] = {}
    for (metric, checkpoint), benchmarks in runs.items():
        own = "" if checkpoint == DEFAULT_CHECKPOINT else metric
        groups.setdefault((checkpoint, tuple(dict.fromkeys(benchmarks)), own), []).append(metric)
    return [f"HF_HUB_OFFLINE=1 dialeval benchmark --metric {','.join(metrics)} --benchmark {','.join(benchmarks)}"
            + ("" if checkpoint == DEFAULT_CHECKPOINT else
               f" --checkpoint {checkpoint} --output-dir runs/benchmark-{checkpoint}")
            for (checkpoint, benchmarks, _), metrics in groups.items()]


def results_section(metric: str, results: Sequence[dict[str, Any]]) -> str:
    """The Markdown between :data:`BEGIN` and :data:`END`: the commands, the signature, the tables that
    ``dialeval report`` prints (``--by-corpus`` included), the comparison of the default checkpoint with another
    shipped one where results of one are stored (:func:`checkpoint_comparison`) and the diagnostics that
    ``dialeval benchmark`` prints. Results of another shipped checkpoint are named by :func:`shown_metric`."""
    rows = [dict(row, metric=shown_metric(res)) for res in results for row in res["rows"]]
    signatures = list(dict.fromkeys(res["signature"] for res in results if res["metric"] == metric))
    several = len({result_checkpoint(res) for res in results if res["metric"] == metric}) > 1
    lines = ["Rendered by `dialeval cards render` from `hub_cards/results/" + metric + ".json`, which "
             "`dialeval cards collect` wrote from the output of:", "", "```bash"]
    lines += reproduce_commands(results)
    lines += ["```", "", "(1,000 bootstrap resamples, seed 0: the defaults.) "
              + ("The shipped checkpoints' signatures:" if several else "The shipped checkpoint's signature:"), ""]
    lines += [f"`{sig}`" for sig in signatures]
    lines += ["", "Cells are Pearson / Spearman (`*`: p >= 0.05 for either) or, for DailyDialog++ and the sanity "
              "checks, accuracies.", "", markdown_report(rows).rstrip()]
    by_corpus = corpus_summary(rows).rstrip()
    if by_corpus:
        lines += ["", by_corpus]
    compared = checkpoint_comparison(results)
    if compared:
        lines += ["", compared]
    diagnosed = diagnostics_table(results)
    if diagnosed:
        lines += ["", diagnosed]
    return "\n".join(lines)


def main_figure(res: dict[str, Any]) -> tuple[float, str]:
    """The figure the checkpoint comparison shows for a result, and what it is: for a correlation benchmark the mean
    of (Pearson + Spearman) / 2 over the sets of its main aspect (the diagnostics' ``mean_over_sets``); for a
    discrimination or sanity benchmark the mean accuracy over its comparisons."""
    from ..benchmarks import benchmark_info

    info = benchmark_info(res["benchmark"])
    if info.kind == "correlation":
        mean = ((res.get("diagnostics") or {}).get("mean_over_sets") or {}).get(info.default_aspect)
        if not mean:
            raise CardError(f"{shown_metric(res)} on {res['benchmark']}: its diagnostics have no mean_over_sets of "
                            f"{info.default_aspect!r} (benchmarked with another --aspect?)")
        return mean["mean"], f"(P+S)/2, {info.default_aspect}, mean of {mean['sets']} sets"
    accuracies = [row["accuracy"] for row in res["rows"] if "accuracy" in row]
    if not accuracies:
        raise CardError(f"{shown_metric(res)} on {res['benchmark']}: no row has an accuracy")
    return sum(accuracies) / len(accuracies), f"accuracy, mean of {len(accuracies)} comparisons"


def items_per_second(res: dict[str, Any]) -> float:
    """Items scored per second of scoring in the run a result comes from (its metadata's ``n_items / seconds``)."""
    metadata = res.get("metadata") or {}
    missing = [k for k in SPEED_KEYS if not isinstance(metadata.get(k), (int, float))]
    if missing or metadata["seconds"] <= 0:
        raise CardError(f"{shown_metric(res)} on {res['benchmark']}: its stored metadata has "
                        + (f"no {' and '.join(missing)}" if missing else f"seconds {metadata['seconds']}")
                        + ": collect it again from its `dialeval benchmark` JSON")
    return metadata["n_items"] / metadata["seconds"]


def _run_settings(results: Iterable[dict[str, Any]]) -> str:
    """Where the runs of ``results`` scored, as their metadata and signature record it (``cpu, 2 torch threads``),
    each once."""
    settings = []
    for res in results:
        metadata = res.get("metadata") or {}
        threads = _signature_fields(res["signature"]).get("cpu_threads")
        settings.append(f"{metadata.get('device', 'device not recorded')}, "
                        + ("threads not recorded" if threads is None else f"{threads} torch threads"))
    return "; ".join(dict.fromkeys(settings))


def checkpoint_comparison(results: Sequence[dict[str, Any]]) -> str:
    """For each other shipped checkpoint among ``results`` (``base``), a table "MiniLM vs <name>": for each metric and
    benchmark measured on both it and the default checkpoint (MiniLM), the :func:`main_figure` of each and their
    difference, and the :func:`items_per_second` of each run; empty when every result is of the default one."""
    default = {(res["metric"], res["benchmark"], res["split"]): res for res in results
               if result_checkpoint(res) == DEFAULT_CHECKPOINT}
    others: dict[str, list[dict[str, Any]]] = {}
    for res in results:
        if result_checkpoint(res) != DEFAULT_CHECKPOINT:
            others.setdefault(result_checkpoint(res), []).append(res)
    tables = []
    for name, theirs in others.items():
        pairs = [(default[key], res) for res in theirs
                 if (key := (res["metric"], res["benchmark"], res["split"])) in default]
        if not pairs:
            continue
        lines = [f"MiniLM vs {name}: each benchmark's main figure on the `default` checkpoint (all-MiniLM-L6-v2) and "
                 f"on `{name}`, and how many items each scored per second (items / seconds of scoring, from the "
                 "metadata of each benchmark JSON). The speeds are those of the machine and the run that produced "
                 f"each file ({_run_settings(r for pair in pairs for r in pair)}): compare them within one card, not "
                 "across machines.", "",
                 f"| metric | benchmark | figure | default | {name} | {name} - default | default items/s | "
                 f"{name} items/s |", "|---|---|---|---|---|---|---|---|"]
        for mine, res in pairs:
            (ours, what), (value, their_what) = main_figure(mine), main_figure(res)
            if their_what != what:
                raise CardError(f"{res['metric']} on {res['benchmark']}: the default checkpoint's figure is {what}, "
                                f"{name}'s {their_what}; benchmark both on the same sets")
            lines.append(f"| {res['metric']} | {res['benchmark']} | {what} | {ours:.3f} | {value:.3f} | "
                         f"{value - ours:+.3f} | {items_per_second(mine):.1f} | {items_per_second(res):.1f} |")
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def diagnostics_table(results: Sequence[dict[str, Any]]) -> str:
    """The diagnostics ``dialeval benchmark`` prints, as a table: for each correlation result, the mean of
    (Pearson + Spearman) / 2 over the sets of the benchmark's main aspect, the share of the score variance between
    contexts, the correlation with length and, for benchmarks with 2-4 systems, the AUCs of the systems apart."""
    from ..benchmarks import benchmark_info

    lines = []
    for res in results:
        diag, info = res.get("diagnostics"), benchmark_info(res["benchmark"])
        if not diag or info.kind != "correlation":  # these figures are correlation diagnostics only
            continue
        aspect = info.default_aspect
        mean = diag["mean_over_sets"].get(aspect)
        share = diag["between_context"]
        bias = diag["length_bias"]
        apart = ", ".join(f"{a['higher']}>{a['lower']} {a['auc']:.2f} ({a['human_auc']:.2f})"
                          for a in diag.get("systems_apart") or [])
        lines.append(f"| {shown_metric(res)} | {res['benchmark']} | "
                     + (f"{mean['mean']:.3f} ({mean['sets']} sets, {aspect})" if mean else "") + " | "
                     + (f"{share['share']:.2f} ({share['contexts']} contexts)" if share else "") + " | "
                     + f"{bias['pearson']:.2f} / {bias['spearman']:.2f} | {apart} |")
    if not lines:
        return ""
    head = ["Diagnostics: the mean over sets; the share of the score variance that lies between contexts (sets with "
            "several replies per context); the Pearson / Spearman correlation of the score with length (words per "
            "reply, or per turn for dialogues); for benchmarks with 2-4 systems, the AUC of the scores telling the "
            "better-rated system from the other (the humans' own AUC in brackets).", "",
            "| metric | benchmark | mean over sets | between-context share | length bias | systems apart, AUC |",
            "|---|---|---|---|---|---|"]
    return "\n".join(head + lines)


def render_card(text: str, section: str, *, source: str) -> str:
    """``text`` with everything between its one :data:`BEGIN` and :data:`END` marker replaced by ``section``."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise CardError(f"{source}: needs exactly one {BEGIN!r} followed by one {END!r}")
    head, rest = text.split(BEGIN)
    tail = rest.split(END)[1]
    return f"{head}{BEGIN}\n{section}\n{END}{tail}"


def card_section(text: str, *, source: str) -> str:
    """What stands between the markers of a card (to compare with a fresh rendering)."""
    match = re.search(re.escape(BEGIN) + r"\n(.*)\n" + re.escape(END), text, flags=re.S)
    if match is None:
        raise CardError(f"{source}: no {BEGIN!r} ... {END!r} section")
    return match.group(1)


# -- the model card -------------------------------------------------------------------------------------------------
def dataset_repo(benchmark: str) -> str:
    """The dataset repo a benchmark is exported to: its group (``fed``, ``usr``, ``rade``, ``sanity``) or itself."""
    from ..benchmarks import GROUPS

    for group, members in GROUPS.items():
        if benchmark in members:
            return group
    return benchmark.replace("_", "-")


def dataset_repos() -> dict[str, list[str]]:
    """Every dataset repo a release writes and the benchmarks (or the group) it exports; the training corpus
    ``dailydialog`` is not one."""
    from ..benchmarks import GROUPS, benchmark_info, benchmark_names

    repos: dict[str, list[str]] = {}
    for name in benchmark_names():
        if benchmark_info(name).kind != "corpus":
            repo = dataset_repo(name)
            repos[repo] = [repo] if repo in GROUPS else [name]
    return repos


def index_rows(results: Sequence[dict[str, Any]], metric: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(result, row) pairs of ``metric`` that the model-index reports: every accuracy row; for a correlation
    benchmark with one aspect every subset, with several the pooled row of each aspect (as the section's tables)."""
    out = []
    for res in results:
        if res["metric"] != metric:
            continue
        aspects = {r["aspect"] for r in res["rows"] if "pearson_r" in r}
        for row in res["rows"]:
            if "accuracy" in row or len(aspects) == 1 or row["subset"] == "pooled":
                out.append((res, row))
    return out


def eval_results(metric: str, results: Sequence[dict[str, Any]], namespace: str) -> list:
    """``huggingface_hub.EvalResult`` entries for ``metric``'s rows (values rounded to 4 decimals)."""
    from huggingface_hub import EvalResult

    entries = []
    for res, row in index_rows(results, metric):
        common = dict(task_type=TASK["type"], task_name=TASK["name"],
                      dataset_type=f"{namespace}/{dataset_repo(res['benchmark'])}", dataset_name=res["benchmark"],
                      dataset_config=res["benchmark"], dataset_split=res["split"])
        if "accuracy" in row:
            entries.append(EvalResult(metric_type="accuracy", metric_value=round(row["accuracy"], 4),
                                      metric_name=f"accuracy: {comparison(row)}", **common))
            continue
        for coefficient, kind in (("pearson", "pearsonr"), ("spearman", "spearmanr")):
            name = f"{coefficient.capitalize()} with human {row['aspect']}: {row['subset']}"
            entries.append(EvalResult(metric_type=kind, metric_value=round(row[f"{coefficient}_r"], 4),
                                      metric_name=name, **common))
    return entries


def strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end < 0:
            raise CardError("a card opens a YAML block with '---' and never closes it")
        return text[end + 5:]
    return text


#: The base model every exported checkpoint builds on (the encoder of the shipped ones).
BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: The file of an exported folder that holds its model card.
MODEL_CARD_FILE = "README.md"
#: The item the model card's code scores: a context of two turns, a response and a reference.
USAGE_CONTEXT = ("Do you want to go to the beach on Sunday?", "Only if it does not rain.")
USAGE_RESPONSE = "The forecast says sunshine all day, so let's go in the morning."
USAGE_REFERENCE = "I checked the forecast: it will be sunny, let's go."
#: The headings of the model card's scoring section: the section, its code with transformers alone (metrics
#: whose ExportSpec has ``transformers_usage``), its code through dialeval, and loading the model (a combination's
#: card has the members instead).
USAGE_HEADING = "## Scoring text with this checkpoint"
TRANSFORMERS_HEADING = "### With transformers alone"
DIALEVAL_HEADING = "### With dialeval"
LOADING_HEADING = "### Loading the model"
MEMBERS_HEADING = "### Members"


def _fields(metric: str) -> tuple[str, ...]:
    """The text fields the metric scores (its Space's, e.g. ``("context", "response", "reference")``)."""
    space = metric_spec(metric).space
    return tuple(space.fields) if space is not None else ("context", "response")


def dialeval_usage_code(metric: str, model_id: str) -> str:
    """Python code that scores :data:`USAGE_CONTEXT` / :data:`USAGE_RESPONSE` (and :data:`USAGE_REFERENCE` where
    the metric reads a reference; the whole dialogue for a dialogue metric) with ``metric``'s scorer over the
    checkpoint ``model_id`` (a Hub id, downloaded, or a folder) and prints the score."""
    fields = _fields(metric)
    lines = ["import os", "", "import dialeval", "from huggingface_hub import snapshot_download", "",
             MODEL_LINE.format(model_id=model_id),
             "folder = MODEL if os.path.isdir(MODEL) else snapshot_download(MODEL)",
             f"scorer = dialeval.load_scorer({json.dumps(metric)}, checkpoint=folder)  # load once, score many items"]
    if fields == ("dialogue",):
        lines += [f"dialogue = {json.dumps([*USAGE_CONTEXT, USAGE_RESPONSE])}  # turns, or role/content messages",
                  "out = scorer.score_dialogues(dialogues=[dialogue])"]
    else:
        lines += [f"context = {json.dumps(list(USAGE_CONTEXT))}", f"response = {json.dumps(USAGE_RESPONSE)}"]
        if "reference" in fields:
            lines += [f"reference = {json.dumps(USAGE_REFERENCE)}",
                      "out = scorer.score(contexts=[context], responses=[response], references=[reference])"]
        else:
            lines += ["out = scorer.score(contexts=[context], responses=[response])"]
    lines += ["print(out.scores[0])  # out.signature names the checkpoint and the settings"]
    return "\n".join(lines)


def usage_section(metric: str, model_id: str, config: dict[str, Any]) -> str:
    """The model card's :data:`USAGE_HEADING` section for the checkpoint ``model_id`` whose ``config.json`` is
    ``config``: the code that scores text with ``transformers`` alone where the metric's ExportSpec has it, the code
    that scores it through dialeval, and loading the model (and, for a model that reads token ids, its tokenizer)."""
    from ..backbone.encoder import DEFAULT_ENCODER_PACKAGE
    from ..scoring.export import DEFAULT_ENCODER_MODULE, TOKENIZER_SUBFOLDER

    export = metric_spec(metric).export
    module = export.model_class.partition(":")[0].rpartition(".")[2]
    fields = _fields(metric)
    rows = "a file of dialogues (JSONL: one object per line with `dialogue`, a list of turns)" if (
        fields == ("dialogue",)) else ("a file of items (JSONL: one object per line with `context`, a list of "
                                       "turns, and `response`" + (", and `references`" if "reference" in fields
                                                                   else "") + ")")
    lines = [USAGE_HEADING, ""]
    if export.needs_dialeval:
        lines += [f"The model's forward reads inputs that dialeval's pre-processing builds from text (see its "
                  f"docstring in `modeling_{module}.py`), so text is scored through dialeval, with this checkpoint "
                  "as the scorer's checkpoint folder.", ""]
    else:
        code = export.usage_code(model_id, config, USAGE_CONTEXT, USAGE_RESPONSE).rstrip()
        packages = ["`torch`", "`transformers`"] + (
            [f"`{DEFAULT_ENCODER_PACKAGE}` (the encoder)"] if f"import {DEFAULT_ENCODER_MODULE}" in code else []) + (
            ["`torch_geometric` (the model code imports it)"] if module == "dynaeval" else [])
        lines += ["The model reads sentence embeddings of a frozen encoder, computed outside it; the code below "
                  "computes them as dialeval does, offline, and prints the score that dialeval's scorer gives for the "
                  "same text (the same to 1e-6: dialeval runs the encoder on other batch shapes, which can change the "
                  "last float32 bits).", "",
                  TRANSFORMERS_HEADING, "",
                  f"Needs {', '.join(packages[:-1])} and {packages[-1]}, not dialeval:", "",
                  "```python", code, "```", ""]
    lines += [DIALEVAL_HEADING, "",
              f"With dialeval installed, the checkpoint folder serves `dialeval.load_scorer(\"{metric}\")`:", "",
              "```python", dialeval_usage_code(metric, model_id), "```", "",
              f"or, for {rows}, from the command line:", "",
              "```bash", f"dialeval score --metric {metric} --checkpoint FOLDER --input items.jsonl "
              "--output scored.jsonl", "```", "",
              f"The metric's Space also serves `evaluate.load(\"{model_id}\")`.", "",
              LOADING_HEADING, "",
              "The weights, config and model code load without dialeval:", "",
              "```python", "from transformers import AutoModel" + (
                  ", AutoTokenizer" if export.tokenizer_config_field else ""), "",
              MODEL_LINE.format(model_id=model_id),
              "model = AutoModel.from_pretrained(MODEL, trust_remote_code=True)"]
    if export.tokenizer_config_field:
        lines += [f'tokenizer = AutoTokenizer.from_pretrained(MODEL, subfolder="{TOKENIZER_SUBFOLDER}")',
                  "```", "",
                  f"The tokenizer (of the encoder the model fine-tunes) is also beside the model, but "
                  f"`AutoTokenizer.from_pretrained(MODEL)` reads the model's config first and, since it "
                  f"names custom code, asks whether to run it; `subfolder=\"{TOKENIZER_SUBFOLDER}\"` loads it "
                  "without remote code and without asking."]
    else:
        lines += ["```"]
    return "\n".join(lines) + "\n"


def member_model_repo(member: CombinationMember, namespace: str) -> str | None:
    """The release's model repo that holds the checkpoint ``member`` pins, ``<namespace>/<metric>``: of the member's
    metric, or of the exported metric that shares its checkpoint folder (BERT-RUBER's unreferenced half: the
    ``bert_ruber`` repo); None for a member without a checkpoint (a baseline, one built into the combination) and
    for one pinned to a named checkpoint other than ``default`` (``base``: the release exports each metric's default
    checkpoint only). A member pinned by a checkpoint that no released metric holds is a :class:`CardError`."""
    if member.checkpoint_sha256 is None or member.identity.get("checkpoint", "default") != "default":
        return None
    from ..scoring.export import exportable_metrics
    from ..scoring.registry import scorer_class

    folder = scorer_class(member.metric).checkpoint_dir
    holders = [m for m in exportable_metrics() if isinstance(metric_spec(m).export, ExportSpec)
               and scorer_class(m).checkpoint_dir == folder]
    if not holders:
        raise CardError(f"member {member.name} pins a {member.metric} checkpoint, which no exported metric holds "
                        f"(checkpoint folder {folder!r})")
    return f"{namespace}/{member.metric if member.metric in holders else holders[0]}"


def combination_usage_section(metric: str, model_id: str, members: Sequence[CombinationMember], *,
                              namespace: str) -> str:
    """A combination's :data:`USAGE_HEADING` section: scoring through dialeval (which runs every member), then the
    members (:data:`MEMBERS_HEADING`), each with its pinned checkpoint sha256 and the model repo holding it
    (:func:`member_model_repo`), and what loading does when a member's checkpoint differs."""
    from ..scoring.registry import scorer_class

    fields = _fields(metric)
    rows = "a file of items (JSONL: one object per line with `context`, a list of turns, and `response`)" if (
        fields != ("dialogue",)) else "a file of dialogues (JSONL: one object per line with `dialogue`)"
    lines = [USAGE_HEADING, "",
             f"This repo holds no model: its `config.json` names the dialeval metrics that `{metric}` combines, each "
             "pinned by its checkpoint's sha256, with each member's fixed calibration (quantiles) and the "
             "combiner's weights. Text is scored through dialeval, which runs every member: it is as slow as its "
             "members together.", "",
             DIALEVAL_HEADING, "",
             "```bash", "pip install \"dialeval[spacy-model]\"  # the extra: spaCy's English model, for GRADE's "
             "keywords", "```", "",
             f"`dialeval.load_scorer(\"{metric}\")` scores with the config shipped in the package; the code below "
             "loads this repo's (or the folder's that `dialeval export` wrote):", "",
             "```python", dialeval_usage_code(metric, model_id), "```", "",
             f"or, for {rows}, from the command line:", "",
             "```bash", f"dialeval score --metric {metric} --checkpoint FOLDER --input items.jsonl "
             "--output scored.jsonl", "```", "",
             f"The metric's Space also serves `evaluate.load(\"{model_id}\")`.", "",
             MEMBERS_HEADING, "",
             "| member | metric | checkpoint sha256 | model repo | member sets |", "|---|---|---|---|---|"]
    for member in members:
        repo = member_model_repo(member, namespace)
        lines.append(f"| {member.name} | {member.metric or 'built in'} | "
                     + (f"`{member.checkpoint_sha256}`" if member.checkpoint_sha256 else "none") + " | "
                     + (f"[{repo}](https://huggingface.co/{repo})" if repo else
                        f"none (checkpoint `{member.identity['checkpoint']}`: in the dialeval package only)"
                        if member.checkpoint_sha256 else "none") + " | "
                     + ", ".join(f"`{s}`" for s in member.sets) + " |")
    lines += ["", "dialeval loads each member from its own installed copy of the checkpoint (the model repos hold "
              "the same checkpoints, exported). Loading checks every member against what the config pins: a "
              "member whose checkpoint differs from the pinned sha256 (a retrained one), or whose encoder or "
              "settings differ, makes loading refuse with an error that says to refit "
              f"(`{scorer_class(metric).train_command}`), never a silent mix; `dialeval export` refuses such a "
              "config too."]
    return "\n".join(lines) + "\n"


def measured_checkpoints(metric: str, results: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The checkpoints ``metric``'s stored results measured: each ``checkpoint_sha256`` of their signatures, and the
    shipped name it had (``default``, ``base``)."""
    return {fields["checkpoint_sha256"]: result_checkpoint(res) for res in results if res["metric"] == metric
            if "checkpoint_sha256" in (fields := _signature_fields(res["signature"]))}


def encoder_base_model(config: dict[str, Any]) -> str | None:
    """The Hub id of the encoder a checkpoint's ``config.json`` records (its first of ``ENCODER_FIELDS``) where it is
    a named encoder (all-MiniLM-L6-v2, all-mpnet-base-v2); :data:`BASE_MODEL` for a config that records none (made
    before encoders were recorded: on the bundled MiniLM); None for an encoder folder, which has no Hub id."""
    from ..backbone.encoders import named_encoder

    recorded = [config[f] for f in ENCODER_FIELDS if isinstance(config.get(f), str) and config[f]]
    if not recorded:
        return BASE_MODEL
    entry = named_encoder(recorded[0])
    return entry.hub_id if entry is not None else None


def model_card(metric: str, card_text: str, results: Sequence[dict[str, Any]], *, namespace: str,
               base_model: str | None = None, license: str = "apache-2.0", config: dict[str, Any] | None = None,
               measured: str | None = DEFAULT_CHECKPOINT):
    """The model repo's card: YAML with a ``model-index`` from ``results``, the scoring section
    (:func:`usage_section`, or :func:`combination_usage_section` for a combination; ``config``: the exported
    checkpoint's ``config.json``, default the shipped one's), then the metric card's body (description, training,
    departures from the paper, measured values).

    ``base_model``: a model's (default: the encoder ``config`` records, :func:`encoder_base_model`); a combination
    has none (its card lists its members), so one given for it is a ``ValueError``. ``measured``: the shipped
    checkpoint the card is of, whose results (those of ``metric`` whose signature names it) make the ``model-index``
    and ``datasets``; the body's tables then mark another one's rows than the default's, and the card says so.
    ``measured=None``: the card is of a checkpoint that ``results`` did not measure; it then has no ``model-index``
    (nor ``datasets``) and says that the figures of the body are the shipped checkpoints'."""
    from huggingface_hub import ModelCard, ModelCardData

    export = metric_spec(metric).export
    if export is None:
        raise CardError(f"metric {metric!r} has no export (its spec's export), so no model repo and no model card")
    combination = isinstance(export, CombinationExportSpec)
    if combination and base_model is not None:
        raise ValueError(f"metric {metric!r} is a combination: its model card has no base_model "
                         f"(got {base_model!r}); it lists its members instead")
    if config is None:
        from ..scoring.export import export_source

        config = json.loads((export_source(metric, None) / "config.json").read_text(encoding="utf-8"))
    ours = [res for res in results if res["metric"] == metric and result_checkpoint(res) == measured]
    if measured is not None and not ours:
        raise CardError(f"no stored result of {metric!r} on its {measured!r} checkpoint, whose model card this is: "
                        "benchmark it and collect again")
    data = ModelCardData(
        model_name=f"dialeval-{metric}", license=license, library_name="dialeval" if combination else "transformers",
        base_model=None if combination else (base_model or encoder_base_model(config)),
        tags=["dialeval", "dialogue-evaluation", metric],
        datasets=sorted({f"{namespace}/{dataset_repo(r['benchmark'])}" for r in ours}) if ours else None,
        eval_results=eval_results(metric, ours, namespace) if ours else None,
    )
    if measured is None:
        shipped = ", ".join(f"{sha} (`{name}`)" for sha, name in sorted(measured_checkpoints(metric, results).items()))
        note = (f"> This is not the checkpoint whose results this card reports (`checkpoint_sha256` "
                f"{shipped or 'unknown'}, shipped with dialeval): the card has no `model-index`, and the figures "
                "below are the shipped checkpoints', not this one's.\n\n")
    elif measured != DEFAULT_CHECKPOINT:
        note = (f"> This is the shipped `{measured}` checkpoint: the `model-index` reports its results, which the "
                f"tables below name `{metric} [{measured}]`; the others are the `default` checkpoint's "
                "(all-MiniLM-L6-v2).\n\n")
    else:
        note = ""
    model_id = f"{namespace}/{metric}"
    if combination:
        members = export.read_members(config, f"the {metric} config.json")
        usage = combination_usage_section(metric, model_id, members, namespace=namespace)
    else:
        usage = usage_section(metric, model_id, config)
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{note}{usage}\n{strip_front_matter(card_text).lstrip()}")


def exported_model_card(metric: str, source: str | os.PathLike, *, namespace: str,
                        results: Sequence[dict[str, Any]] | None = None, root: str | os.PathLike | None = None):
    """The model card of ``metric``'s checkpoint folder ``source`` exported for the repo ``<namespace>/<metric>``
    (what ``dialeval export`` and ``dialeval release`` write as its ``README.md``): :func:`model_card` of the stored
    results (``results``, else :func:`load_results`) and the metric card, with ``source``'s config, and a
    ``model-index`` only when the stored results were measured on ``source`` (same checkpoint fingerprint): of the
    shipped checkpoint they name by that fingerprint (``default``, ``base``)."""
    from ..scoring.checkpoints import checkpoint_fingerprint
    from ..scoring.registry import available_metrics

    source = Path(source)
    if results is None:
        results = load_results(metric, available_metrics(), root)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    measured = measured_checkpoints(metric, results).get(checkpoint_fingerprint(source))
    return model_card(metric, card_path(metric, root).read_text(encoding="utf-8"), results, namespace=namespace,
                      config=config, measured=measured)
