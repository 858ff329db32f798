"""How calibrated member scores become one score: the combiner candidates, fitted on human-rated sets.

Training data is a list of :class:`Unit`: one human-rated set each, its items' calibrated member scores (a matrix,
one column per member, in [0, 1]) and its human target. The agreement of a score with a set's humans is
``(Pearson + Spearman) / 2`` (:func:`agreement`); every set counts once, whatever its size.

**The member rule** (:func:`admitted`, issue 49): a member enters a fit only where its agreement with the humans is
established above 0 on every training set the fit is given but at most :data:`SIGN_EXCEPTIONS` of them. Established
means the lower end of the agreement's two-sided 95% Fisher-z interval is above 0 (:func:`sign_established`:
``atanh(a) > 1.96 / sqrt(n - 3)`` for a set of ``n`` items), so that an agreement of 0.07 on 360 items, which
could be either sign, is not taken for a positive one. (The first form of the rule asked only for ``a > 0``; the
interval was added after the leave-one-out had shown that DynaEval's MiniLM head, near 0 at turn level on two sets,
cost the default member set sets above their best member: see the card.) A member whose agreement changes sign from corpus to corpus (reply length: negative
on GRADE's DailyDialog sets, positive on USR-TopicalChat) adds noise wherever the sign is the other one, and no fixed
combination can know which corpus it is on. Members the caller ``pinned`` (the controls a member set names
explicitly, :data:`~.roster.CONTROLS`) are exempt: they are in because someone asked for them. Every candidate, in
every fold, applies the rule to its own training sets (:func:`fit_candidate`); its weights name the admitted members
only.

Candidates (:data:`CANDIDATES`):

* ``mean`` -- the unweighted mean of the calibrated scores (the reference point; nothing fitted);
* ``mme_crs`` -- correlation re-scaling, the idea of MME-CRS (DSTC10 track 5): each member's weight is
  ``max(0, r_m) ** k``, normalised to sum 1, where ``r_m`` is the member's mean agreement over the training sets
  and ``k`` (:data:`GRIDS`) sharpens the weights towards the best members;
* ``ridge`` -- ridge regression of the per-set standardised human scores (z-scores within each set) on the
  calibrated scores centred within each set, each set weighted by ``1 / n_items`` so that sets count equally;
  ``alpha`` from :data:`GRIDS`. The intercept puts the training items' mean score at 0: the score reads as a
  standardised human rating;
* ``power_<p>`` -- the unweighted power mean ``(mean_m calibrated_m ** p) ** (1 / p)`` with a fixed exponent ``p``
  (:data:`POWERS`; ``power_0`` is the geometric mean, where every calibrated score below :data:`GEOMETRIC_FLOOR`
  counts as that floor). Below ``p = 1`` (the ``mean``) one member's low score weighs more than another's high
  one: a reply must pass every member, not only most of them. Nothing is fitted; which ``p`` is used is decided
  outside this module (the sanity bar of :mod:`.checks`).

A candidate's setting (``k``, ``alpha``) is chosen by leave-one-set-out inside the training sets it is given
(:func:`fit_candidate`): for each value, fit on all sets but one, score the one left out, average the agreements;
the first best value wins, and the candidate is refitted on all its sets with it. Nothing outside the given sets is
read.

A fitted :class:`Combiner` scores item by item: ``intercept + sum_m weight_m * calibrated_m`` (a power mean:
``intercept + (sum_m weight_m * calibrated_m ** p) ** (1 / p)``), summed in the members' order with element-wise
operations only, so an item's score never depends on the other items of a call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from ...errors import InputError

__all__ = ["CANDIDATES", "GEOMETRIC_FLOOR", "GRIDS", "POWERS", "SIGN_EXCEPTIONS", "SIGN_Z", "Combiner",
           "CombinerError", "Unit", "admitted", "agreement", "fit_candidate", "fit_mean", "fit_mme_crs",
           "fit_power_mean", "fit_ridge", "sign_established"]

#: the power-mean candidates and their exponents, from the plain mean (p = 1, ``mean``) towards the minimum
POWERS: dict[str, float] = {"power_0.5": 0.5, "power_0.25": 0.25, "power_0": 0.0}
CANDIDATES = ("mean", "mme_crs", "ridge", *POWERS)
#: in the geometric mean (``power_0``) a calibrated score below this counts as this: half a percentile, so that a
#: member's lowest scores pull the mean down without making it 0 whatever the other members say
GEOMETRIC_FLOOR = 0.005
#: the settings each fitted candidate chooses from (by leave-one-set-out inside its training sets)
GRIDS: dict[str, tuple[float, ...]] = {"mme_crs": (1.0, 2.0, 3.0, 4.0, 6.0, 8.0),
                                       "ridge": (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)}
#: the name of each candidate's setting
SETTING = {"mme_crs": "k", "ridge": "alpha"}
#: the member rule: on how many of a fit's training sets a member's agreement may fail :func:`sign_established`
SIGN_EXCEPTIONS = 1
#: the normal quantile of the member rule's interval (two-sided 95%)
SIGN_Z = 1.96


class CombinerError(InputError):
    """Training data a combiner cannot be fitted on, or a stored combiner that cannot be read (the message says
    which set, member or field)."""


def agreement(scores: np.ndarray, human: np.ndarray) -> float:
    """``(Pearson + Spearman) / 2`` of ``scores`` with ``human``; NaN when either is constant."""
    x, y = np.asarray(scores, dtype=np.float64), np.asarray(human, dtype=np.float64)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float((sps.pearsonr(x, y).statistic + sps.spearmanr(x, y).statistic) / 2.0)


@dataclass(frozen=True)
class Unit:
    """One human-rated training set: its name, the calibrated member scores of its items (``X``, shape
    ``(n_items, n_members)``, columns in ``members`` order) and the human target ``y`` (finite)."""

    name: str
    members: tuple[str, ...]
    X: np.ndarray
    y: np.ndarray
    _agreements: tuple[float, ...] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        X, y = np.asarray(self.X, dtype=np.float64), np.asarray(self.y, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.members):
            raise CombinerError(f"set {self.name}: X has shape {X.shape}, expected (n_items, {len(self.members)})")
        if y.shape != (X.shape[0],):
            raise CombinerError(f"set {self.name}: {X.shape[0]} items but {y.size} human scores")
        if X.shape[0] < 3:
            raise CombinerError(f"set {self.name}: {X.shape[0]} items; at least 3 are needed to correlate")
        for what, arr in (("X", X), ("y", y)):
            bad = np.argwhere(~np.isfinite(arr))
            if bad.size:
                raise CombinerError(f"set {self.name}: {what} has a non-finite value at item {int(bad[0][0])}")
        if np.ptp(y) == 0:
            raise CombinerError(f"set {self.name}: every human score is {y[0]}; nothing to fit")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    def select(self, members: Sequence[str]) -> Unit:
        """This set with the columns of ``members`` only, in that order."""
        return Unit(self.name, tuple(members), self.X[:, [self.members.index(m) for m in members]], self.y)

    def agreements(self) -> tuple[float, ...]:
        """Each member's agreement with the humans of this set (computed once; NaN for a constant member)."""
        if self._agreements is None:
            object.__setattr__(self, "_agreements", tuple(agreement(self.X[:, j], self.y)
                                                          for j in range(len(self.members))))
        return self._agreements


@dataclass(frozen=True)
class Combiner:
    """A fitted combination: ``intercept + sum(weights[m] * calibrated[m])`` (see the module docstring)."""

    kind: str
    weights: Mapping[str, float]
    intercept: float = 0.0
    #: the candidate's setting (``{"k": 2.0}``, ``{"alpha": 0.3}``; empty for ``mean``)
    setting: Mapping[str, float] = field(default_factory=dict)
    #: how the setting was chosen: each grid value's mean leave-one-set-out agreement
    selection: Mapping[str, float] = field(default_factory=dict)

    def apply(self, calibrated: Mapping[str, np.ndarray]) -> np.ndarray:
        """The combined score of each item from its calibrated member scores (``member -> array``)."""
        missing = [m for m in self.weights if m not in calibrated]
        if missing:
            raise CombinerError(f"combiner {self.kind}: no calibrated scores of member(s) {', '.join(missing)}")
        sizes = {len(np.atleast_1d(calibrated[m])) for m in self.weights}
        if len(sizes) > 1:
            raise CombinerError(f"combiner {self.kind}: the members' score arrays differ in length: {sorted(sizes)}")
        n = sizes.pop() if sizes else 0
        if self.kind in POWERS:
            return float(self.intercept) + self._power_mean(calibrated, n)
        out = np.full(n, float(self.intercept), dtype=np.float64)
        for member, weight in self.weights.items():
            out = out + float(weight) * np.asarray(calibrated[member], dtype=np.float64)
        return out

    def _power_mean(self, calibrated: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """``(sum_m w_m * x_m ** p) ** (1 / p)``, or ``exp(sum_m w_m * log(max(x_m, floor)))`` for ``p = 0``."""
        p = POWERS[self.kind]
        acc = np.zeros(n, dtype=np.float64)
        for member, weight in self.weights.items():
            x = np.asarray(calibrated[member], dtype=np.float64)
            outside = np.flatnonzero((x < 0) | (x > 1) | ~np.isfinite(x))
            if outside.size:
                raise CombinerError(f"combiner {self.kind}: member {member}'s calibrated score of item "
                                    f"{int(outside[0])} is {float(x[outside[0]])!r}, outside [0, 1]")
            acc = acc + float(weight) * (np.log(np.maximum(x, GEOMETRIC_FLOOR)) if p == 0 else x ** p)
        return np.exp(acc) if p == 0 else acc ** (1.0 / p)

    def apply_matrix(self, members: Sequence[str], X: np.ndarray) -> np.ndarray:
        return self.apply({m: X[:, j] for j, m in enumerate(members)})

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "weights": dict(self.weights), "intercept": self.intercept,
                "setting": dict(self.setting), "selection": dict(self.selection)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str) -> Combiner:
        """Read what :meth:`to_json` wrote; a missing or malformed field is a :class:`CombinerError` naming
        ``where`` and the field."""
        if data.get("kind") not in CANDIDATES:
            raise CombinerError(f"{where}: combiner kind must be one of {', '.join(CANDIDATES)}, got "
                                f"{data.get('kind')!r}")
        weights = data.get("weights")
        if not isinstance(weights, Mapping) or not weights:
            raise CombinerError(f"{where}: field 'weights' must be a non-empty mapping member -> weight")
        for member, w in weights.items():
            if not isinstance(w, (int, float)) or isinstance(w, bool) or not np.isfinite(w):
                raise CombinerError(f"{where}: weight of member {member!r} is {w!r}, not a finite number")
        intercept = data.get("intercept", 0.0)
        if not isinstance(intercept, (int, float)) or isinstance(intercept, bool) or not np.isfinite(intercept):
            raise CombinerError(f"{where}: field 'intercept' is {intercept!r}, not a finite number")
        if data["kind"] in POWERS and (min(weights.values()) < 0 or abs(sum(weights.values()) - 1.0) > 1e-9):
            raise CombinerError(f"{where}: a power mean's weights must be >= 0 and sum to 1, got {dict(weights)}")
        return cls(kind=data["kind"], weights={str(k): float(v) for k, v in weights.items()},
                   intercept=float(intercept), setting=dict(data.get("setting", {})),
                   selection=dict(data.get("selection", {})))


def admitted(units: Sequence[Unit], pinned: Sequence[str] = ()) -> tuple[tuple[str, ...], dict[str, str]]:
    """The member rule (module docstring): the members of ``units`` that enter a fit on them, in their order, and
    for each member left out, why (the sets where its agreement is not above 0). No member admitted is an error."""
    members = _members_of(units)
    kept, excluded = [], {}
    for j, m in enumerate(members):
        against = [f"{u.name} {u.agreements()[j]:+.3f} (n={u.X.shape[0]})" for u in units
                   if not sign_established(u.agreements()[j], u.X.shape[0])]
        if m in pinned or len(against) <= SIGN_EXCEPTIONS:
            kept.append(m)
        else:
            excluded[m] = (f"not established above 0 on {len(against)} of {len(units)} training sets: "
                           f"{', '.join(against)}")
    if not kept:
        raise CombinerError(f"no member agrees with the humans established above 0 on all but {SIGN_EXCEPTIONS} of "
                            f"the training sets ({', '.join(u.name for u in units)})")
    return tuple(kept), excluded


def sign_established(a: float, n: int) -> bool:
    """Whether an agreement ``a`` on ``n`` items is above 0 with the member rule's confidence: the lower end of its
    two-sided Fisher-z interval (:data:`SIGN_Z`) is above 0. NaN (a constant member) and ``n <= 3`` are not."""
    if not a > 0 or n <= 3:
        return False
    return bool(np.arctanh(min(a, 1.0 - 1e-12)) > SIGN_Z / np.sqrt(n - 3))


# -- the candidates -----------------------------------------------------------------------------------------------
def _members_of(units: Sequence[Unit]) -> tuple[str, ...]:
    if not units:
        raise CombinerError("no training set to fit on")
    members = units[0].members
    for u in units[1:]:
        if u.members != members:
            raise CombinerError(f"set {u.name} has members {u.members}, set {units[0].name} has {members}")
    return members


def fit_mean(units: Sequence[Unit]) -> Combiner:
    """Every member weighted ``1 / n_members`` (nothing is read from the sets but the member names)."""
    members = _members_of(units)
    return Combiner("mean", {m: 1.0 / len(members) for m in members})


def fit_power_mean(units: Sequence[Unit], kind: str) -> Combiner:
    """The power mean ``kind`` (a key of :data:`POWERS`), every member weighted ``1 / n_members``."""
    if kind not in POWERS:
        raise CombinerError(f"unknown power mean {kind!r}; power means: {', '.join(POWERS)}")
    members = _members_of(units)
    return Combiner(kind, {m: 1.0 / len(members) for m in members}, setting={"p": POWERS[kind]})


def member_agreements(units: Sequence[Unit]) -> dict[str, float]:
    """Each member's mean agreement over ``units`` (an undefined one, a member constant on a set, is an error)."""
    members = _members_of(units)
    out = {}
    for j, m in enumerate(members):
        values = []
        for u in units:
            r = u.agreements()[j]
            if not np.isfinite(r):
                raise CombinerError(f"member {m} is constant on set {u.name}: its correlation is undefined")
            values.append(r)
        out[m] = float(np.mean(values))
    return out


def fit_mme_crs(units: Sequence[Unit], k: float) -> Combiner:
    """Correlation re-scaling: weights ``max(0, r_m) ** k`` normalised to sum 1 (see the module docstring)."""
    if not k > 0:
        raise CombinerError(f"mme_crs: k must be > 0, got {k}")
    r = member_agreements(units)
    raw = {m: max(0.0, v) ** k for m, v in r.items()}
    total = sum(raw.values())
    if total == 0:
        raise CombinerError("mme_crs: no member correlates positively with the human ratings of the training sets "
                            f"({', '.join(u.name for u in units)})")
    return Combiner("mme_crs", {m: w / total for m, w in raw.items()}, setting={"k": float(k)})


def fit_ridge(units: Sequence[Unit], alpha: float) -> Combiner:
    """Ridge on within-set centred scores against within-set z-scored humans, sets weighted equally."""
    members = _members_of(units)
    if not alpha > 0:
        raise CombinerError(f"ridge: alpha must be > 0, got {alpha}")
    m = len(members)
    gram, moment, centre = np.zeros((m, m)), np.zeros(m), np.zeros(m)
    for u in units:
        Xc = u.X - u.X.mean(axis=0)
        z = (u.y - u.y.mean()) / u.y.std()
        gram += Xc.T @ Xc / len(u.y)
        moment += Xc.T @ z / len(u.y)
        centre += u.X.mean(axis=0) / len(units)
    beta = np.linalg.solve(gram + alpha * np.eye(m), moment)
    return Combiner("ridge", {name: float(b) for name, b in zip(members, beta)},
                    intercept=float(-(beta @ centre)), setting={"alpha": float(alpha)})


def _fit(kind: str, units: Sequence[Unit], value: float | None) -> Combiner:
    if kind == "mean":
        return fit_mean(units)
    if kind in POWERS:
        return fit_power_mean(units, kind)
    if kind == "mme_crs":
        return fit_mme_crs(units, value)
    if kind == "ridge":
        return fit_ridge(units, value)
    raise CombinerError(f"unknown combiner {kind!r}; candidates: {', '.join(CANDIDATES)}")


def fit_candidate(kind: str, units: Sequence[Unit], grid: Sequence[float] | None = None, *,
                  pinned: Sequence[str] = ()) -> Combiner:
    """Candidate ``kind`` fitted on ``units``, on the members the rule admits there (:func:`admitted`; ``pinned``
    exempt from it), its setting chosen from ``grid`` (default :data:`GRIDS`) by leave-one-set-out inside ``units``
    (see the module docstring); ``mean`` and the power means have no setting to choose."""
    members = admitted(units, pinned)[0]
    units = [u.select(members) for u in units]
    if kind == "mean":
        return fit_mean(units)
    if kind in POWERS:
        return fit_power_mean(units, kind)
    if kind not in GRIDS:
        raise CombinerError(f"unknown combiner {kind!r}; candidates: {', '.join(CANDIDATES)}")
    values = tuple(GRIDS[kind] if grid is None else grid)
    if not values:
        raise CombinerError(f"{kind}: an empty grid of settings")
    if len(values) == 1:
        return _fit(kind, units, values[0])
    if len(units) < 3:
        raise CombinerError(f"{kind}: choosing its {SETTING[kind]} by leave-one-set-out needs at least 3 training "
                            f"sets, got {len(units)} ({', '.join(u.name for u in units)})")
    inner: dict[str, float] = {}
    for value in values:
        scores = []
        for i, held in enumerate(units):
            fitted = _fit(kind, [u for j, u in enumerate(units) if j != i], value)
            scores.append(agreement(fitted.apply_matrix(members, held.X), held.y))
        inner[repr(float(value))] = float(np.mean(scores))  # NaN (a constant combination) never wins
    ranked = [(v, inner[repr(float(v))]) for v in values if np.isfinite(inner[repr(float(v))])]
    if not ranked:
        raise CombinerError(f"{kind}: every setting gave a constant score on some training set")
    best = max(ranked, key=lambda pair: pair[1])[0]  # the first of equal bests: max keeps the earliest
    fitted = _fit(kind, units, best)
    return Combiner(fitted.kind, fitted.weights, fitted.intercept, fitted.setting, selection=inner)
