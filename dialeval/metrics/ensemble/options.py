"""The options of ``dialeval train ensemble`` (:mod:`.train`) and ``dialeval ensemble loo`` (:mod:`.loo_command`),
declared once. Light to import.

The ensemble has no training loop: the members score the sets (the slow part, cached), then calibration and
combiners are fitted in closed form in seconds. So its options are the ones every recipe shares
(:class:`~dialeval.training.options.RecipeOptions`: ``--output-dir``, ``--data-dir``, ``--seed``, ``--batch-size``,
``--threads``, ``--device``; ``--no-resume`` scores every set again instead of reading the member score cache, and
``--prepare-only`` stops once the cache holds every member's scores) and its own, none of the loop's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...training.options import RecipeOptions, TrainingOptionsError, option
from .roster import CONTROLS, MEMBER_SETS, MEMBERS, WITH_REFERENCES

__all__ = ["EnsembleLooOptions", "EnsembleTrainingOptions", "parse_members"]


def parse_members(text: str, what: str) -> tuple[str, ...]:
    """A comma-separated member list -> names (each a known member, none twice)."""
    names = tuple(m.strip() for m in text.split(",") if m.strip())
    if not names:
        raise TrainingOptionsError(f"{what}: no member named")
    unknown = [m for m in names if m not in MEMBERS]
    if unknown:
        raise TrainingOptionsError(f"{what}: unknown member {unknown[0]!r}; members: {', '.join(MEMBERS)}")
    if len(set(names)) != len(names):
        raise TrainingOptionsError(f"{what}: a member is named twice in {text!r}")
    turn_only = [m for m in names if "turn" not in MEMBERS[m].levels]
    if turn_only:
        raise TrainingOptionsError(f"{what}: {turn_only[0]} is a dialogue-level member; it joins on its own")
    return names


@dataclass(kw_only=True)
class EnsembleTrainingOptions(RecipeOptions):
    """Fit the ensemble: calibrate each member on DailyDialog, choose the combiner by leave-one-benchmark-out over
    the human-rated sets, refit it on all of them, and write the checkpoint (<output-dir>/best/config.json) with the
    leave-one-out table (<output-dir>/loo.json, loo.txt)."""

    output_dir: str = option(help="Run folder: the checkpoint goes to <output-dir>/best, the leave-one-out table to "
                                  "loo.json and loo.txt, the run's record to summary.json.")
    seed: int = option(0, help="Seed of the calibration draws (which dialogues, which reply, which random reply) and "
                               "of the bootstrap.")
    batch_size: int = option(32, min=1, help="Items per batch when the members score the sets.")
    resume: bool = option(True, help="Read the members' scores from the member score cache where it has them "
                                     "(--no-resume: score every set again and overwrite the cache).")
    prepare_only: bool = option(False, help="Only fill the member score cache (the slow part), then stop.")
    cache_dir: str | None = option(None, help="Member score cache folder (default: ~/.cache/dialeval/ensemble; "
                                              "$DIALEVAL_CACHE_DIR/ensemble when set).")
    full_members: str = option(",".join(MEMBER_SETS["full"]),
                               help="Members the default set 'full' may use (comma-separated; amr_eval may join; "
                                    "the member rule decides which enter).")
    fast_members: str = option(",".join(MEMBER_SETS["fast"]), help="Members the set 'fast' may use "
                                                                   "(comma-separated).")
    base_members: str = option(",".join(MEMBER_SETS["base"]),
                               help="Members the set 'base' may use (comma-separated; its base heads read "
                                    "all-mpnet-base-v2: dialeval encoders install all-mpnet-base-v2).")
    reference_members: str = option(
        ",".join(m for m in MEMBER_SETS[WITH_REFERENCES["full"]] if m not in MEMBER_SETS["full"]),
        help="Members added to 'full' in its counterpart with references (read only with use_references=True).")
    calibration_dialogues: int = option(500, min=10, help="Turn calibration: DailyDialog validation dialogues, one "
                                                          "real and one random reply each.")
    reference_contexts: int = option(500, min=10, help="Calibration of members that read a reference: DailyDialog++ "
                                                       "dev contexts, one positive and one random reply each.")
    dialogue_calibration_dialogues: int = option(100, min=10, help="Dialogue calibration: DailyDialog validation "
                                                                   "dialogues, each also shuffled.")
    quantiles: int = option(201, min=3, help="Stored quantiles of each member's calibration.")
    rade_training_split: Literal["validation", "train"] = option(
        "validation", help="Which split of the RADE sets the combiner is fitted on (the test split is held out; the "
                           "RADE member was trained on the train split).")
    bootstrap: int = option(1000, min=0, help="Paired bootstrap resamples of the per-set CIs of the table.")

    def check(self) -> None:
        super().check()
        self.member_lists()

    def member_lists(self) -> dict[str, tuple[str, ...]]:
        """Member set -> its members, from the options."""
        full = parse_members(self.full_members, "full_members")
        refs = parse_members(self.reference_members, "reference_members")
        if not all(MEMBERS[m].reads_references for m in refs):
            raise TrainingOptionsError("reference_members: only members that read references belong there")
        if any(MEMBERS[m].reads_references for m in full):
            raise TrainingOptionsError("full_members: a member that reads references joins through "
                                       "reference_members, never by default")
        fast = parse_members(self.fast_members, "fast_members")
        base = parse_members(self.base_members, "base_members")
        for what, names in (("fast_members", fast), ("base_members", base)):
            if any(MEMBERS[m].reads_references for m in names):
                raise TrainingOptionsError(f"{what}: a member that reads references cannot be in "
                                           f"'{what.removesuffix('_members')}'")
        for what, names in (("full_members", full), ("fast_members", fast), ("base_members", base)):
            if any(m in CONTROLS for m in names):
                raise TrainingOptionsError(f"{what}: {next(m for m in names if m in CONTROLS)} is a control (its "
                                           "agreement with humans changes sign); it joins only 'full+length'")
        length = tuple(m for m in MEMBER_SETS["full+length"] if m in CONTROLS)
        return {"full": full, "fast": fast, "base": base, WITH_REFERENCES["full"]: (*full, *refs),
                "full+length": (*full, *length)}


@dataclass(kw_only=True)
class EnsembleLooOptions(EnsembleTrainingOptions):
    """Print and write the leave-one-benchmark-out table of the member sets (or of --members alone), fitting no
    checkpoint."""

    output_dir: str = option(help="Folder for loo.json and loo.txt.")
    members: str | None = option(None, help="Evaluate this comma-separated member set alone (e.g. to measure a "
                                            "member such as amr_eval) instead of the sets above.")

    def member_lists(self) -> dict[str, tuple[str, ...]]:
        if self.members is None:
            return super().member_lists()
        return {"custom": parse_members(self.members, "members")}
