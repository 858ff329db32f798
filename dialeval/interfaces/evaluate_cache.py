"""``evaluate.load("dialeval/<m>")`` by name, offline: the installed `evaluate` modules put where `evaluate` looks.

`evaluate` resolves a name ``owner/name`` on the Hub first (the Space ``dialeval/<m>`` once it is pushed) and, when
the Hub cannot be reached or has no such module, falls back to its module cache: the newest
``<HF_MODULES_CACHE>/evaluate_modules/metrics/<owner>--<name>/<64-hex hash>/<name>.py``. :func:`register` writes
each module shipped with the package (``metrics/<m>/<m>.py``, installed as ``dialeval.evaluate_modules``) there,
under the sha256 of its bytes, so a fresh environment with the Hub unreachable loads the installed metric by name.
We register under our own namespace ``dialeval/``: a bare name such as ``"grade"`` is `evaluate`'s own namespace
(``evaluate-metric/grade``), which we leave alone.
"""

from __future__ import annotations

import hashlib
from importlib.resources import files
from pathlib import Path

from ..errors import UnknownNameError

NAMESPACE = "dialeval"


def module_names() -> list[str]:
    """The metrics whose `evaluate` module ships with the package, sorted."""
    root = files("dialeval.evaluate_modules")
    return sorted(d.name for d in root.iterdir() if d.is_dir() and (d / f"{d.name}.py").is_file())


def register(names: list[str] | None = None) -> dict[str, Path]:
    """Copy the `evaluate` module of each metric in ``names`` (default: all) into `evaluate`'s module cache;
    returns metric -> the file written. Idempotent: the same module bytes land in the same folder."""
    from evaluate.loading import init_dynamic_modules

    known = module_names()
    for name in names or []:
        if name not in known:
            raise UnknownNameError("evaluate module", name, known)
    metrics_dir = Path(init_dynamic_modules()) / "metrics"
    written = {}
    for name in names or known:
        source = files("dialeval.evaluate_modules") / name / f"{name}.py"
        data = source.read_bytes()
        folder = metrics_dir / f"{NAMESPACE}--{name}"
        target = folder / hashlib.sha256(data).hexdigest() / f"{name}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        for package in (metrics_dir, folder, target.parent):  # evaluate imports the module through these packages
            (package / "__init__.py").touch()
        with open(target, "wb") as fh:  # rewritten even when present: the newest file is the one evaluate picks
            fh.write(data)
        written[name] = target
    return written


__all__ = ["NAMESPACE", "module_names", "register"]
