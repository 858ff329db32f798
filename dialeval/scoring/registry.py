"""Metric names -> their specs and scorer classes.

The specs (:class:`~dialeval.scoring.spec.MetricSpec`) are declared beside each metric's code and found here, not
listed: ``dialeval/baselines/spec.py`` and every ``dialeval/metrics/<package>/spec.py`` hold a tuple ``SPECS``.
:func:`register` adds a spec from elsewhere (a plugin, a test). Spec modules name classes as strings, so listing
the metrics imports no scorer: loading one metric never imports the others.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from ..errors import UnknownNameError
from .base import Scorer
from .spec import MetricSpec

__all__ = ["all_specs", "available_metrics", "baseline_names", "load_scorer", "metric_spec", "register",
           "scorer_class", "unregister"]

#: Where spec modules live: the baselines' one, and ``spec.py`` of each package under ``dialeval/metrics``.
BASELINE_SPECS = "dialeval.baselines.spec"
METRIC_PACKAGES = "dialeval.metrics"

_specs: dict[str, MetricSpec] | None = None
_aliases: dict[str, str] = {}


def _spec_modules() -> list[str]:
    """The spec modules that ship with dialeval: the baselines', then each metric package's, by package name."""
    root = Path(import_module(METRIC_PACKAGES).__file__).parent
    packages = sorted(p.name for p in root.iterdir() if (p / "spec.py").is_file() and (p / "__init__.py").is_file())
    return [BASELINE_SPECS] + [f"{METRIC_PACKAGES}.{name}.spec" for name in packages]


def _add(specs: dict[str, MetricSpec], aliases: dict[str, str], spec: MetricSpec) -> None:
    if not isinstance(spec, MetricSpec):
        raise TypeError(f"expected a MetricSpec, got {type(spec).__name__}")
    taken = [n for n in (spec.name, *spec.aliases) if n in specs or n in aliases]
    if taken:
        raise ValueError(f"metric {spec.name!r}: the name(s) {', '.join(map(repr, taken))} are taken already")
    specs[spec.name] = spec
    aliases.update({alias: spec.name for alias in spec.aliases})


def _registry() -> dict[str, MetricSpec]:
    global _specs
    if _specs is None:
        specs: dict[str, MetricSpec] = {}
        for module in _spec_modules():
            for spec in import_module(module).SPECS:
                _add(specs, _aliases, spec)
        _specs = specs
    return _specs


def register(spec: MetricSpec) -> MetricSpec:
    """Add a metric declared outside dialeval's packages; its name and aliases must be new. Returns ``spec``."""
    _add(_registry(), _aliases, spec)
    return spec


def unregister(name: str) -> None:
    """Remove a metric (and its aliases) added with :func:`register`."""
    spec = metric_spec(name)
    del _registry()[spec.name]
    for alias in spec.aliases:
        _aliases.pop(alias, None)


def all_specs() -> list[MetricSpec]:
    """Every metric's spec, baselines first."""
    return list(_registry().values())


def metric_spec(name: str) -> MetricSpec:
    """The spec of ``name`` (or of one of its aliases, e.g. ``bert-ruber``); an unknown name is an error listing the
    known ones."""
    specs = _registry()
    spec = specs.get(_aliases.get(name, name))
    if spec is None:
        raise UnknownNameError("metric", name, available_metrics())
    return spec


def available_metrics() -> list[str]:
    return sorted(_registry())


def baseline_names() -> list[str]:
    """The classic baselines, in their declaration order."""
    return [s.name for s in all_specs() if s.kind == "baseline"]


def scorer_class(name: str) -> type[Scorer]:
    return metric_spec(name).scorer_class()


def load_scorer(name: str, **kwargs: Any) -> Scorer:
    """Instantiate a metric by name once; reuse the returned scorer for many calls."""
    return scorer_class(name)(**kwargs)
