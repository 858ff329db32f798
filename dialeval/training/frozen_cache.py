"""The outputs of an encoder's frozen lower layers, computed once per text and reused: ``--frozen-cache``.

A recipe that trains only the top layers of its encoder (RADE's default trains the top two of MiniLM's six) runs the
lower layers forward on every step, though their weights never change: over ten epochs each text goes through them
ten times. With the cache, a token row's states after the frozen layers are computed the first time a batch holds
the row and kept (unpadded, float32, on the CPU), keyed by the row's tokens; a batch that holds the row again gathers
them and runs only the trained layers.

The frozen layers then run without dropout (the model's ``frozen_states`` computes them in eval mode, so that a
text always gets the same states), where a run without the cache draws dropout in them on every step: that is the
recipe change the option makes, and why it is an option, measured on validation (docs/training.md), not a
default. Validation and
scoring run the whole encoder in eval mode, as before.

Memory: one float32 vector of the hidden size per token kept, 1.5 KB for MiniLM's 384 (RADE's stage 1 on every
DailyDialog++ context: about 3M evaluator tokens, 4.6 GB, and the distinct contexts' tokens). Nothing is saved with
the run: a resumed run fills the cache again as its batches come.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


#: The help text of ``--frozen-cache`` (GRADE's and RADE's recipes).
FROZEN_CACHE_HELP = ("Compute the frozen lower encoder layers' outputs once per text (without dropout) and reuse them "
                     "whenever the text comes again: only the trained layers run again (memory: 1.5 KB per token "
                     "kept; dialeval/training/frozen_cache.py).")


class FrozenStateCache:
    """Per-row states of a model's frozen lower layers, keyed by the row's tokens (its ids and the other integer
    inputs given, e.g. token types, without padding): the states are a function of them alone, so a row seen
    again, in any batch, at any position, gets the states computed the first time. ``compute(input_ids,
    attention_mask, **inputs)`` returns the states [b, L, H] of a padded batch of rows (e.g.
    ``RadeModel.frozen_states``)."""

    def __init__(self, compute: Callable[..., torch.Tensor]) -> None:
        self.compute = compute
        self.rows: dict[bytes, torch.Tensor] = {}
        self.hits = 0
        self.misses = 0

    @property
    def tokens(self) -> int:
        """Token states kept."""
        return sum(len(v) for v in self.rows.values())

    def report(self) -> dict[str, int]:
        """What the cache holds and how often a row asked for was kept (a run's ``summary.json``: ``frozen_cache``)."""
        return {"rows": len(self.rows), "tokens": self.tokens, "hits": self.hits, "misses": self.misses}

    def states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **inputs: torch.Tensor | None
               ) -> torch.Tensor:
        """The states [B, L, H] of the batch ``input_ids`` [B, L] (right-padded: ``attention_mask`` is 1 on a
        row's first tokens, 0 after): the rows not kept yet are computed once each (with the batch's other inputs,
        e.g. ``token_type_ids``, cut to them) and kept; padding positions are zeros. On ``input_ids``' device."""
        counts = attention_mask.sum(1, keepdim=True)
        if not torch.equal(attention_mask.bool(), torch.arange(input_ids.shape[1], device=attention_mask.device)
                           < counts):
            raise ValueError("the frozen-state cache needs right-padded rows (attention_mask 1s, then 0s)")
        lengths = counts.squeeze(1).tolist()
        host = [t.cpu().numpy() for t in (input_ids, *(v for v in inputs.values() if v is not None))]  # one copy
        keys = [b"|".join(t[i, :lengths[i]].tobytes() for t in host) for i in range(len(lengths))]
        firsts: dict[bytes, int] = {}  # each row not kept yet -> its first place in the batch (computed once)
        for i, key in enumerate(keys):
            if key not in self.rows:
                firsts.setdefault(key, i)
        missing = list(firsts.values())
        if missing:
            width = max(lengths[i] for i in missing)
            pick = torch.tensor(missing, device=input_ids.device)
            computed = self.compute(input_ids[pick, :width], attention_mask[pick, :width],
                                    **{k: None if v is None else v[pick, :width] for k, v in inputs.items()})
            for j, i in enumerate(missing):
                self.rows[keys[i]] = computed[j, :lengths[i]].detach().to("cpu", torch.float32).clone()
        self.hits += len(keys) - len(missing)  # a row twice in a batch: computed once, the second a hit
        self.misses += len(missing)
        out = torch.zeros((len(keys), input_ids.shape[1], next(iter(self.rows.values())).shape[-1]),
                          dtype=torch.float32)
        for i, key in enumerate(keys):
            out[i, :lengths[i]] = self.rows[key]
        return out.to(input_ids.device)


__all__ = ["FROZEN_CACHE_HELP", "FrozenStateCache"]
