"""The ensemble (project issue 37): one score that combines the shipped metrics, ``load_scorer("ensemble")``.

Each member (the learned scorers and cheap baselines of :mod:`.roster`, loaded through the registry) scores an item;
its raw score is mapped to [0, 1] by a fixed empirical CDF measured on DailyDialog (:mod:`dialeval.scoring.calibration`); a
combiner fitted on human-rated sets adds the calibrated scores up (:mod:`.combiners`: unweighted mean, MME-CRS-style
correlation re-scaling, ridge, power means) over the members whose agreement with the humans keeps its sign on the
training sets (the member rule), the candidate chosen by leave-one-benchmark-out (:mod:`.loo`: most held-out sets
above the set's best member, then the mean) among those that clear the sanity bar (:mod:`.checks`).

- :mod:`.roster` -- who the members and member sets are (light); :mod:`.members` -- loading and scoring them;
- :mod:`.sets` -- the calibration and human-rated item sets; :mod:`.cache` -- the member score cache;
  :mod:`.collect` -- members x sets through the cache; :mod:`.pipeline` -- sets to calibrations, training units and
  held-out cells;
- :mod:`.combiners` -- the fitted combinations (numpy, pure; the members' maps are :mod:`dialeval.scoring.calibration`'s);
- :mod:`.checks` -- the sanity bar; :mod:`.loo`, :mod:`.report` -- the leave-one-out table; :mod:`.fit` -- the
  shipped combiners and config;
- :mod:`.checkpoint` -- ``config.json``; :mod:`.scorer` -- ``EnsembleScorer``; :mod:`.export` -- the members an
  export and its model card list;
- :mod:`.options`, :mod:`.train` (``dialeval train ensemble``), :mod:`.loo_command` (``dialeval ensemble loo``).
"""
