"""Export the benchmarks as a Hub dataset repository: Parquet files plus a README with a ``configs:`` header.

Layout written under ``out_dir``::

    data/<name>/<split>-00000-of-00001.parquet     one file per benchmark and split
    README.md                                      hub_cards/dataset_card.md filled in

Every Parquet file is read back with ``datasets.load_dataset("parquet", data_files=...)`` and compared with the
built dataset (features and rows) before the card is written. The card template is looked up in the source checkout
(``<repo>/hub_cards/dataset_card.md``; this is a developer tool run from a checkout) or in ``./hub_cards/``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import yaml

from . import benchmark_info, benchmark_names, expand_benchmark, load_benchmark
from .fed import DIALOGUE_ASPECTS as FED_DIALOGUE_ASPECTS
from .fed import TURN_ASPECTS as FED_TURN_ASPECTS

TEMPLATE_RELATIVE = Path("hub_cards") / "dataset_card.md"
REQUIRED_PLACEHOLDERS = ("{{configs_yaml}}",)

# where each benchmark's files come from (see <data dir>/<folder>/SOURCES.md) and the licence stated there
PROVENANCE: dict[str, dict[str, str]] = {
    "grade_eval": {
        "source": "li3cmz/GRADE@c6cec028e1b4495a388f1c181b10221e4d0c5955 `evaluation/human_score/human_judgement.json`, "
                  "`evaluation/eval_data/<corpus>/<system>/human_{ctx,hyp,ref}.txt`, "
                  "`evaluation/human_score/<corpus>/<system>/human_score.txt`",
        "licence": "none stated in the repository",
    },
    "fed": {
        "source": "FED release (http://shikib.com/fed_data.json) via DSincerity/FED_Replication@"
                  "f0a9a675ffcd134e9cb606c46afc8e0c7ad31ba4 `fed_data.json`",
        "licence": "none stated",
    },
    "usr": {
        "source": "USR release (http://shikib.com/usr) via SmartDataAnalytics/proxy_indicators@"
                  "5017317f0d03cdbc64a3a52c09fc0a6bf5c492b3 `data/usr_topical_chat.json`, `data/usr_percona_chat.json`",
        "licence": "none stated",
    },
    "rade": {
        "source": "shizhl/RADE@655a50d4bd5979b7768798c36055c9ecda38d3ba `dataset/{chitchat,emotion,persona}/data.jsonl`",
        "licence": "none stated",
    },
    "dailydialog_pp": {
        "source": "iitmnlp/DailyDialog-plusplus@4b02f9ff671e7e27d8e6b8a1925158bd5729abda `dataset/dev.json`, "
                  "`dataset/test.json`",
        "licence": "not stated for the data (the repository's MIT licence covers its website template)",
    },
    "dailydialog": {
        "source": "ConvLab/ConvLab-3@2a168fc9843e54a468ddec71e001b7559c36aff4 "
                  "`data/unified_datasets/dailydialog/data.zip` (re-formatted to one JSON line per dialogue)",
        "licence": "CC BY-NC-SA 4.0 (non-commercial)",
    },
    "sanity": {
        "source": "built by dialeval (`dialeval.benchmarks.sanity`, seeded) from the DailyDialog and FED files above",
        "licence": "CC BY-NC-SA 4.0 (from DailyDialog); FED: none stated",
    },
}


def _family(name: str) -> str:
    for prefix in ("fed", "usr", "rade", "sanity"):
        if name.startswith(prefix + "_"):
            return prefix
    return name


class ExportError(RuntimeError):
    pass


@dataclass
class ExportResult:
    out_dir: Path
    readme: Path
    files: dict[str, dict[str, Path]] = field(default_factory=dict)  # name -> split -> parquet path
    row_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> split -> rows
    fed_excluded: dict[str, dict[str, int]] = field(default_factory=dict)  # fed_turn/fed_dialogue -> aspect -> n


def find_template(template: str | os.PathLike | None = None) -> Path:
    """The dataset card template: ``template`` if given, else ``<checkout>/hub_cards/dataset_card.md``."""
    if template is not None:
        candidates = [Path(template)]
    else:
        candidates = [Path(__file__).resolve().parents[2] / TEMPLATE_RELATIVE, Path.cwd() / TEMPLATE_RELATIVE]
    for p in candidates:
        if p.is_file():
            return p
    raise FileNotFoundError(
        "dataset card template not found (tried: " + ", ".join(str(p) for p in candidates) + "); the export is a "
        "developer tool: run it from a dialeval source checkout or pass template=..."
    )


def _resolve_names(names: Iterable[str] | None) -> list[str]:
    if names is None:
        return benchmark_names()
    out: list[str] = []
    for n in names:
        for m in expand_benchmark(n):
            if m not in out:
                out.append(m)
    if not out:
        raise ValueError("no benchmark selected")
    return out


def _check_roundtrip(path: Path, split: str, expected: datasets.Dataset, cache_dir: str) -> None:
    reloaded = datasets.load_dataset("parquet", data_files={split: str(path)}, split=split, cache_dir=cache_dir)
    if reloaded.features != expected.features:
        raise ExportError(f"{path}: features changed in the round trip:\n{reloaded.features}\n!=\n{expected.features}")
    if reloaded.num_rows != expected.num_rows or reloaded.to_list() != expected.to_list():
        raise ExportError(f"{path}: rows changed in the round trip")


def _configs_yaml(files: dict[str, dict[str, Path]], out_dir: Path) -> str:
    configs = [
        {"config_name": name,
         "data_files": [{"split": split, "path": p.relative_to(out_dir).as_posix()} for split, p in splits.items()]}
        for name, splits in files.items()
    ]
    return yaml.safe_dump({"configs": configs}, sort_keys=False, allow_unicode=True).rstrip("\n")


def _row_counts_table(counts: dict[str, dict[str, int]]) -> str:
    splits = [s for s in ("train", "validation", "test") if any(s in c for c in counts.values())]
    lines = ["| config | kind | " + " | ".join(splits) + " | total |",
             "|---|---|" + "---:|" * (len(splits) + 1)]
    for name, c in counts.items():
        cells = [str(c[s]) if s in c else "-" for s in splits]
        lines.append(f"| {name} | {benchmark_info(name).kind} | " + " | ".join(cells) + f" | {sum(c.values())} |")
    return "\n".join(lines)


def _fed_excluded_table(fed: dict[str, dict[str, int]]) -> str:
    if not fed:
        return "(FED was not part of this export.)"
    lines = ["| config | aspect | excluded ratings |", "|---|---|---:|"]
    for name, per_aspect in fed.items():
        for aspect, n in per_aspect.items():
            lines.append(f"| {name} | {aspect} | {n} |")
        lines.append(f"| {name} | **total** | **{sum(per_aspect.values())}** |")
    return "\n".join(lines)


def _provenance(names: Sequence[str]) -> str:
    lines = ["| config | source (repository@commit, path) | licence |", "|---|---|---|"]
    for name in names:
        p = PROVENANCE[_family(name)]
        lines.append(f"| {name} | {p['source']} | {p['licence']} |")
    return "\n".join(lines)


def fill_card(template_text: str, values: dict[str, str]) -> str:
    for ph in REQUIRED_PLACEHOLDERS:
        if ph not in template_text:
            raise ExportError(f"the dataset card template has no {ph} placeholder")
    text = template_text
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    # the YAML header must parse, as the Hub reads it (huggingface_hub's DatasetCard), and carry the configs
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise ExportError("the filled card does not start with a '---' YAML block")
    from huggingface_hub import DatasetCard

    if not DatasetCard(text).data.to_dict().get("configs"):
        raise ExportError("the filled card's YAML header has no configs")
    return text


def export_all(out_dir: str | os.PathLike, data_dir: str | os.PathLike | None = None,
               names: Iterable[str] | None = None, *, cache_dir: str | os.PathLike | None = None,
               template: str | os.PathLike | None = None, command: str | None = None) -> ExportResult:
    """Write ``out_dir/data/<name>/<split>-00000-of-00001.parquet`` for every benchmark/split and ``out_dir/README.md``.

    ``names`` may hold benchmark names or group aliases (``fed``, ``usr``, ``rade``); default: all benchmarks.
    Each Parquet file is checked to round-trip through ``datasets.load_dataset("parquet", ...)``.
    """
    tpl = find_template(template)  # fail before doing any work
    selected = _resolve_names(names)
    out = Path(out_dir)
    result = ExportResult(out_dir=out, readme=out / "README.md")
    with tempfile.TemporaryDirectory(prefix="dialeval-export-") as tmp:
        for name in selected:
            info = benchmark_info(name)
            result.files[name] = {}
            result.row_counts[name] = {}
            for split in info.splits:
                ds = load_benchmark(name, split=split, data_dir=data_dir, cache_dir=cache_dir)
                path = out / "data" / name / f"{split}-00000-of-00001.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                ds.to_parquet(str(path))
                _check_roundtrip(path, split, ds, cache_dir=os.path.join(tmp, "roundtrip"))
                result.files[name][split] = path
                result.row_counts[name][split] = ds.num_rows
                if name in ("fed_turn", "fed_dialogue"):
                    aspects = FED_TURN_ASPECTS if name == "fed_turn" else FED_DIALOGUE_ASPECTS
                    totals = result.fed_excluded.setdefault(name, dict.fromkeys(aspects, 0))
                    for row_aspects, row_excluded in zip(ds["aspects"], ds["excluded"]):
                        for a, n in zip(row_aspects, row_excluded):
                            totals[a] += n
    if command is None:
        command = "python dataset_scripts/export_benchmarks.py --out DIR" + (
            "" if names is None else " --only " + " ".join(selected))
    correlation = [n for n in selected if benchmark_info(n).kind == "correlation"]
    card = fill_card(tpl.read_text(encoding="utf-8"), {
        "configs_yaml": _configs_yaml(result.files, out),
        "row_counts": _row_counts_table(result.row_counts),
        "fed_excluded": _fed_excluded_table(result.fed_excluded),
        "provenance": _provenance(selected),
        "correlation_names": ", ".join(f"`{n}`" for n in correlation) or "none in this export",
        "command": command,
    })
    result.readme.write_text(card, encoding="utf-8")
    return result
