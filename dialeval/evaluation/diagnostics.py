"""What a correlation alone hides, printed beside it by ``dialeval benchmark``.

- **Between-context share**: on items that share their context with other items (several replies to one context),
  the share of the score variance that lies between contexts (between-group sum of squares / total sum of
  squares, over the contexts with at least two replies). Near 1, the score is mostly a per-context offset and says
  little about which reply is better; humans rate replies, so a metric should vary within a context.
- **Length bias**: Pearson and Spearman correlation of the score with the reply's length in words (turn level), or
  with the mean words per turn of the dialogue (dialogue level). A metric that follows length rewards verbosity.
- **Mean over sets**: per aspect, the mean over the benchmark's subsets (the pooled row left out) of
  (Pearson + Spearman) / 2, the figure the GRADE paper reports across its evaluation sets, and the mean Spearman
  within a set. On FED the subsets are the systems (Human, Meena, Mitsuku): a pooled correlation there can come
  from telling the systems apart, the within-system mean cannot.
- **Systems apart**: on a benchmark with two to four subsets (FED's systems), for each pair of subsets ordered by
  their mean human rating, the AUC of the metric's scores (how often an item of the better-rated subset scores
  above one of the other), beside the same AUC of the human ratings.
- **Mean over checks** (sanity benchmarks only, in place of the above): per source, the mean accuracy over the
  perturbations, one figure to compare checkpoints by.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from ..baselines.length import word_count
from ..ranking import auc

#: Contexts with several replies that a benchmark needs for its between-context share to be printed (FED's turn
#: level has one such context, whose share is 0 by construction).
MIN_SHARED_CONTEXTS = 20


def between_context_share(scores: Sequence[float], contexts: Sequence[Hashable], *,
                          min_contexts: int = 2) -> dict[str, Any] | None:
    """Between-context share of the variance of ``scores`` grouped by ``contexts`` (one hashable key per item), over
    the contexts with two or more items; None when fewer than ``min_contexts`` contexts have them."""
    if len(scores) != len(contexts):
        raise ValueError(f"{len(scores)} scores but {len(contexts)} contexts")
    groups: dict[Hashable, list[int]] = {}
    for i, key in enumerate(contexts):
        groups.setdefault(key, []).append(i)
    shared = [idx for idx in groups.values() if len(idx) >= 2]
    if len(shared) < max(1, min_contexts):
        return None
    x = np.asarray(scores, dtype=np.float64)
    values = [x[idx] for idx in shared]
    pooled = np.concatenate(values)
    grand = pooled.mean()
    total = float(((pooled - grand) ** 2).sum())
    between = float(sum(len(v) * (v.mean() - grand) ** 2 for v in values))
    share = between / total if total > 0 else float("nan")
    return {"share": share, "contexts": len(shared), "items": int(pooled.size)}


def length_bias(scores: Sequence[float], lengths: Sequence[float]) -> dict[str, Any]:
    """Pearson and Spearman correlation of ``scores`` with ``lengths`` (NaN when either is constant)."""
    x, y = np.asarray(scores, dtype=np.float64), np.asarray(lengths, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"{x.size} scores but {y.size} lengths")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson": float("nan"), "spearman": float("nan"), "n": int(x.size)}
    return {"pearson": float(scipy_stats.pearsonr(x, y)[0]), "spearman": float(scipy_stats.spearmanr(x, y)[0]),
            "n": int(x.size)}


def mean_over_sets(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per aspect, over the subsets other than "pooled": the mean of (Pearson + Spearman) / 2 (``mean``), the mean
    Spearman (``spearman``) and their number (``sets``)."""
    out: dict[str, dict[str, Any]] = {}
    for aspect in dict.fromkeys(r["aspect"] for r in rows if "pearson_r" in r):
        sets = [r for r in rows if r["aspect"] == aspect and r["subset"] != "pooled" and "pearson_r" in r]
        if sets:
            out[aspect] = {"mean": float(np.mean([(r["pearson_r"] + r["spearman_r"]) / 2 for r in sets])),
                           "spearman": float(np.mean([r["spearman_r"] for r in sets])), "sets": len(sets)}
    return out


def mean_over_checks(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per source (a sanity row's subset), the mean accuracy over its perturbations (``mean``) and their number
    (``checks``)."""
    out: dict[str, dict[str, Any]] = {}
    for source in dict.fromkeys(r["subset"] for r in rows):
        accuracies = [r["accuracy"] for r in rows if r["subset"] == source]
        out[source] = {"mean": float(np.mean(accuracies)), "checks": len(accuracies)}
    return out


#: Subsets a benchmark may have for the pairwise "systems apart" AUCs to be printed.
MAX_SYSTEMS = 4


def systems_apart(scores: Sequence[float], subsets: Sequence[str], human: Sequence[float | None]
                  ) -> list[dict[str, Any]] | None:
    """For each pair of subsets, the better-rated first (mean human rating), the AUC of the scores and of the
    human ratings over the items with a rating; None unless there are 2 to :data:`MAX_SYSTEMS` subsets."""
    if not (len(scores) == len(subsets) == len(human)):
        raise ValueError(f"{len(scores)} scores, {len(subsets)} subsets, {len(human)} human ratings")
    rated = [i for i, h in enumerate(human) if h is not None]
    names = list(dict.fromkeys(subsets[i] for i in rated))
    if not 2 <= len(names) <= MAX_SYSTEMS:
        return None
    x, h = np.asarray(scores, dtype=np.float64), np.asarray([np.nan if v is None else v for v in human])
    members = {n: np.array([i for i in rated if subsets[i] == n]) for n in names}
    names.sort(key=lambda n: -h[members[n]].mean())
    return [{"higher": a, "lower": b, "auc": auc(x[members[a]], x[members[b]]),
             "human_auc": auc(h[members[a]], h[members[b]])}
            for k, a in enumerate(names) for b in names[k + 1:]]


def diagnose(scores: Sequence[float], *, level: str, contexts: Sequence[Sequence[str]],
             responses: Sequence[str] | None, rows: Sequence[dict[str, Any]],
             subsets: Sequence[str] | None = None, human: Sequence[float | None] | None = None) -> dict[str, Any]:
    """The figures for one benchmark run: turn level from (context turns, response), dialogue level from the
    dialogues' turns (no between-context share: every dialogue is its own context); the systems-apart AUCs when
    ``subsets`` and the ``human`` ratings of the main aspect are given."""
    if level == "dialogue":
        lengths = [np.mean([word_count(t) for t in turns]) if len(turns) else 0.0 for turns in contexts]
        share = None
    else:
        if responses is None:
            raise ValueError("turn-level diagnostics need the responses")
        lengths = [word_count(r) for r in responses]
        share = between_context_share(scores, [tuple(turns) for turns in contexts], min_contexts=MIN_SHARED_CONTEXTS)
    apart = None if subsets is None or human is None else systems_apart(scores, subsets, human)
    return {"between_context": share, "length_bias": length_bias(scores, lengths),
            "length_unit": "mean words per turn" if level == "dialogue" else "words per reply",
            "mean_over_sets": mean_over_sets(rows), "systems_apart": apart}


def format_diagnostics(metric: str, benchmark: str, diagnostics: dict[str, Any]) -> str:
    """One line per benchmark run, e.g. ``grade on grade_eval: mean over 8 sets 0.198, Spearman within a set 0.180
    (coherence); between-context share 0.64 (300 contexts); length bias r=0.12 / rho=0.10 (words per reply)``; for
    a sanity benchmark ``amr_eval on sanity_turn: mean over 6 checks 0.612 (dailydialog)``."""
    if "mean_over_checks" in diagnostics:
        return f"{metric} on {benchmark}: " + "; ".join(
            f"mean over {m['checks']} check{'s' if m['checks'] != 1 else ''} {m['mean']:.3f} ({source})"
            for source, m in diagnostics["mean_over_checks"].items())
    parts = []
    for aspect, m in diagnostics["mean_over_sets"].items():
        parts.append(f"mean over {m['sets']} sets {m['mean']:.3f}, Spearman within a set {m['spearman']:.3f} "
                     f"({aspect})")
    share = diagnostics["between_context"]
    if share is not None:
        parts.append(f"between-context share {share['share']:.2f} ({share['contexts']} contexts, "
                     f"{share['items']} replies)")
    bias = diagnostics["length_bias"]
    parts.append(f"length bias r={bias['pearson']:.2f} / rho={bias['spearman']:.2f} ({diagnostics['length_unit']})")
    if diagnostics.get("systems_apart"):
        parts.append("AUC " + ", ".join(f"{a['higher']}>{a['lower']} {a['auc']:.2f} (humans {a['human_auc']:.2f})"
                                        for a in diagnostics["systems_apart"]))
    return f"{metric} on {benchmark}: " + "; ".join(parts)
