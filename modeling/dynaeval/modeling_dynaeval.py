"""DynaEval (Zhang et al., ACL 2021): dialogue-level evaluation with a structured graph over the utterances.

transformers custom code, flat on purpose (imports only torch / transformers / torch_geometric / stdlib, and its
folder's copy of the shared model code, ``modeling_shared.py``) so that it can be shipped next to a checkpoint and
loaded with ``AutoModel.from_pretrained(path_or_repo, trust_remote_code=True)`` without ``dialeval`` installed.

The model reads *utterance embeddings* (one vector per utterance, from a frozen sentence encoder run outside the
model, so embeddings can be cached) and returns one unbounded coherence score per dialogue:

1. ``Linear(utterance_dim -> node_dim)`` + dropout, then a BiLSTM (``lstm_layers``, ``node_dim // 2`` per direction,
   dropout between layers) over the utterances of each dialogue (packed: padding never enters the recurrence).
2. A directed graph per dialogue: utterance ``j`` sends an edge to every ``k`` with
   ``j - window_past <= k <= j + window_future`` (self loop included). Relation type =
   (speaker(j), speaker(k), ``j < k`` or not); the self loop falls in the "not" bucket. Speakers are ids in
   ``[0, max_speakers)``.
3. Edge weights: ``alpha_jk = softmax_k((W h_k) . h_j)`` over the window of the source ``j``.
4. ``WeightedRGCNConv`` (basis decomposition, root weight + bias, sum of ``alpha_jk * W_r h_j`` at ``k``) to
   ``graph_dim``, then ``GraphConv(graph_dim -> graph_dim, add)``; no nonlinearity between them.
5. ``cat(h, g)`` -> ``Linear -> ReLU -> dropout`` -> mean over the utterances of the dialogue -> ``Linear(-> 1)``.

Deliberate differences from the released implementation (e0397123/DynaEval, based on DialogueGCN):

* Utterance embeddings are a masked mean over the tokens (padding excluded); the original averaged the padding
  positions of its batch too, so an utterance's embedding depended on the longest utterance of its dialogue.
* Speakers are given per utterance (ids by order of first appearance, at most ``max_speakers``) instead of being
  forced to alternate A/B by position; alternation is the fallback when no speakers are given.
* The relational layer is written here (PyG 2.x ``RGCNConv`` lost the ``edge_norm`` argument the original passed the
  attention weights through); its maths and initialisation follow PyG 1.4's ``RGCNConv``.
* The dialogue mean runs over the real utterances of each dialogue only (no padding rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence
from torch_geometric.nn import GraphConv
from torch_geometric.nn.dense.linear import Linear as PygLinear
from torch_geometric.utils import softmax
from transformers import PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_dynaeval import DynaEvalConfig
from .modeling_shared import float_weight, store_int8_rows


@dataclass
class DynaEvalOutput(ModelOutput):
    """Output of [`DynaEvalModel`].

    Args:
        score (`torch.FloatTensor` of shape `(num_dialogues,)`): coherence score per dialogue (unbounded, higher is
            better).
    """

    score: torch.FloatTensor | None = None


# ---------------------------------------------------------------------------------------------------------------------
# Graph construction
# ---------------------------------------------------------------------------------------------------------------------


def _check_lengths(dialogue_lengths: torch.Tensor, num_nodes: int | None = None) -> torch.Tensor:
    lengths = torch.as_tensor(dialogue_lengths, dtype=torch.long)
    if lengths.dim() != 1:
        raise ValueError(f"dialogue_lengths must be 1-d, got shape {tuple(lengths.shape)}")
    if lengths.numel() and int(lengths.min()) < 1:
        raise ValueError(f"every dialogue needs at least one utterance; dialogue_lengths={lengths.tolist()}")
    if num_nodes is not None and int(lengths.sum()) != num_nodes:
        raise ValueError(f"dialogue_lengths sum to {int(lengths.sum())} but there are {num_nodes} utterances")
    return lengths


def alternating_speakers(dialogue_lengths: torch.Tensor) -> torch.Tensor:
    """Speaker ids 0, 1, 0, 1, ... restarting in every dialogue (the original's A/B convention)."""
    lengths = _check_lengths(dialogue_lengths)
    starts = torch.cumsum(lengths, 0) - lengths
    positions = torch.arange(int(lengths.sum()), device=lengths.device) - torch.repeat_interleave(starts, lengths)
    return positions % 2


def window_edges(dialogue_lengths: torch.Tensor, window_past: int, window_future: int) -> torch.Tensor:
    """``edge_index`` [2, E] (source, target) over flattened utterances: ``j -> k`` for every ``k`` of the same
    dialogue with ``j - window_past <= k <= j + window_future`` (self loop included; ``-1``: no limit).

    Edges are ordered by source, then target.
    """
    lengths = _check_lengths(dialogue_lengths)
    num_nodes = int(lengths.sum())
    if num_nodes == 0:
        return torch.zeros(2, 0, dtype=torch.long)
    longest = int(lengths.max())
    past = longest - 1 if window_past < 0 else window_past
    future = longest - 1 if window_future < 0 else window_future
    starts = torch.cumsum(lengths, 0) - lengths
    node = torch.arange(num_nodes)
    position = node - torch.repeat_interleave(starts, lengths)
    length = torch.repeat_interleave(lengths, lengths)
    offsets = torch.arange(-past, future + 1)
    target_position = position[:, None] + offsets[None, :]  # [N, W]
    valid = (target_position >= 0) & (target_position < length[:, None])
    source = node[:, None].expand_as(target_position)[valid]  # row-major: by source, then offset (= target)
    target = (node[:, None] + offsets[None, :])[valid]
    return torch.stack([source, target])


def relation_types(edge_index: torch.Tensor, speaker_ids: torch.Tensor, max_speakers: int) -> torch.Tensor:
    """Relation id of each edge ``j -> k``: ``(speaker(j) * max_speakers + speaker(k)) * 2 + (0 if j < k else 1)``.

    With two speakers this is the original's table ``{'000': 0, '001': 1, '010': 2, ..., '111': 7}`` keyed by
    speaker(j), speaker(k), direction.
    """
    speaker_ids = torch.as_tensor(speaker_ids, dtype=torch.long)
    if speaker_ids.numel() and (int(speaker_ids.min()) < 0 or int(speaker_ids.max()) >= max_speakers):
        raise ValueError(f"speaker ids must lie in [0, {max_speakers}); got {sorted(set(speaker_ids.tolist()))}")
    source, target = edge_index
    backward = (source >= target).long()
    return (speaker_ids[source] * max_speakers + speaker_ids[target]) * 2 + backward


def build_dialogue_graph(dialogue_lengths: torch.Tensor, speaker_ids: torch.Tensor, window_past: int,
                         window_future: int, max_speakers: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(edge_index [2, E], edge_type [E])`` of a batch of dialogues given as flattened utterances."""
    edge_index = window_edges(dialogue_lengths, window_past, window_future)
    return edge_index, relation_types(edge_index, speaker_ids, max_speakers)


# ---------------------------------------------------------------------------------------------------------------------
# BiLSTM over packed dialogues
# ---------------------------------------------------------------------------------------------------------------------


def packed_node_order(dialogue_lengths: torch.Tensor) -> PackedSequence:
    """The flattened utterances in the order the BiLSTM reads them: ``pack_padded_sequence`` of each dialogue's node
    indices (dialogues sorted by length as torch sorts them), so that ``x[order.data]`` is the packed input of
    ``x`` [N, dim] and ``order.batch_sizes`` its steps."""
    lengths = _check_lengths(dialogue_lengths)
    starts = torch.cumsum(lengths, 0) - lengths
    steps = torch.arange(int(lengths.max()) if lengths.numel() else 0)
    nodes = starts[:, None] + steps[None, :]  # [B, longest]; positions past a dialogue's end are never packed
    return pack_padded_sequence(nodes, lengths, batch_first=True, enforce_sorted=False)


def _lstm_direction(data: torch.Tensor, batch_sizes: list[int], weight_ih: torch.Tensor, weight_hh: torch.Tensor,
                    bias_ih: torch.Tensor, bias_hh: torch.Tensor, reverse: bool) -> torch.Tensor:
    hidden_size = weight_hh.size(1)
    steps = F.linear(data, weight_ih, bias_ih).split(batch_sizes)  # the input transform of every step at once
    outputs: list[torch.Tensor | None] = [None] * len(batch_sizes)
    h = c = None
    for t in (reversed(range(len(batch_sizes))) if reverse else range(len(batch_sizes))):
        rows = batch_sizes[t]
        if h is None:
            h = c = data.new_zeros(rows, hidden_size)
        elif rows < h.size(0):  # reading forward, the shortest sequences have ended
            h, c = h[:rows], c[:rows]
        elif rows > h.size(0):  # reading backward, longer sequences start from zero states
            start = data.new_zeros(rows - h.size(0), hidden_size)
            h, c = torch.cat([h, start]), torch.cat([c, start])
        gates = F.linear(h, weight_hh, bias_hh).add_(steps[t])
        in_gate, forget_gate, cell_gate, out_gate = gates.chunk(4, 1)
        c = (forget_gate.sigmoid() * c).add_(in_gate.sigmoid() * cell_gate.tanh())
        h = out_gate.sigmoid() * c.tanh()
        outputs[t] = h
    return torch.cat(outputs)


def packed_lstm_steps(lstm: nn.LSTM, data: torch.Tensor, batch_sizes: torch.Tensor) -> torch.Tensor:
    """``lstm`` (bidirectional, with biases) over packed ``data`` from zero states: its output's packed data.

    The operations, their order and their shapes are those of torch's own CPU LSTM over a packed sequence (ATen's
    ``PackedLayer`` / ``ReversedPackedLayer`` and ``LSTMCell``, dropout between layers by ``F.dropout``), so the
    values, the gradients and the random draws are the same to the bit. Written out, a step reads its rows of the
    precomputed input transform through one ``split``: torch's loop takes them by ``narrow``, whose backward fills
    a zero tensor of the whole packed input at every step, which was half of a CPU training step's time. It reads
    the weights through ``float_weight``, so it also runs an LSTM whose weights are stored as int8 rows, which torch's
    own cannot.
    """
    sizes = batch_sizes.tolist()
    x = data
    for layer in range(lstm.num_layers):
        x = torch.cat([_lstm_direction(x, sizes, *(float_weight(lstm, f"{name}_l{layer}{suffix}", data.dtype)
                                                    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
                                       reverse=suffix == "_reverse")
                       for suffix in ("", "_reverse")], dim=-1)
        if lstm.dropout and lstm.training and layer < lstm.num_layers - 1:
            x = F.dropout(x, lstm.dropout, True)
    return x


# ---------------------------------------------------------------------------------------------------------------------
# Edge products, a chunk of edges at a time
# ---------------------------------------------------------------------------------------------------------------------

#: Edges per chunk of :func:`edge_dot` and :func:`weighted_edge_sum` (a chunk's rows of 300 floats: ~5 MB).
EDGE_CHUNK = 4096


def _chunks(num_edges: int) -> list[slice]:
    return [slice(start, start + EDGE_CHUNK) for start in range(0, num_edges, EDGE_CHUNK)]


class _RowSums:
    """Rows added into zeros shaped as ``like``, chunk after chunk, as one ``index_add_`` over all the chunks adds
    them: in their order, and for float16 / bfloat16 in a float32 buffer rounded once at the end (what
    ``index_add_`` does within a call; rounding after every chunk would not give its result)."""

    def __init__(self, like: torch.Tensor, rows: int) -> None:
        self.dtype = like.dtype
        wide = torch.float32 if like.dtype in (torch.float16, torch.bfloat16) else like.dtype
        self.sums = torch.zeros(rows, *like.shape[1:], dtype=wide, device=like.device)

    def add(self, index: torch.Tensor, rows: torch.Tensor) -> None:
        self.sums.index_add_(0, index, rows.to(self.dtype).to(self.sums.dtype))

    def result(self) -> torch.Tensor:
        return self.sums.to(self.dtype)


class _EdgeDot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, index_a: torch.Tensor, index_b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b, index_a, index_b)
        out = a.new_empty(index_a.numel(), dtype=torch.result_type(a, b))
        for c in _chunks(index_a.numel()):
            out[c] = (a.index_select(0, index_a[c]) * b.index_select(0, index_b[c])).sum(dim=-1)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        a, b, index_a, index_b = ctx.saved_tensors
        grads = []
        for x, index_x, other, index_other, wanted in ((a, index_a, b, index_b, ctx.needs_input_grad[0]),
                                                       (b, index_b, a, index_a, ctx.needs_input_grad[1])):
            sums = _RowSums(x, x.size(0)) if wanted else None
            for c in _chunks(index_a.numel()) if wanted else ():
                sums.add(index_x[c], grad[c].unsqueeze(-1) * other.index_select(0, index_other[c]))
            grads.append(sums.result() if wanted else None)
        return grads[0], grads[1], None, None


class _WeightedEdgeSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, source: torch.Tensor, slot: torch.Tensor,
                num_slots: int) -> torch.Tensor:
        ctx.save_for_backward(x, weight, source, slot)
        sums = _RowSums(x, num_slots)
        for c in _chunks(source.numel()):
            sums.add(slot[c], x.index_select(0, source[c]) * weight[c].unsqueeze(-1))
        return sums.result()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, weight, source, slot = ctx.saved_tensors
        grad_x = _RowSums(x, x.size(0)) if ctx.needs_input_grad[0] else None
        grad_weight = weight.new_empty(weight.shape) if ctx.needs_input_grad[1] else None
        for c in _chunks(source.numel()):
            grad_messages = grad.index_select(0, slot[c])
            if grad_x is not None:
                grad_x.add(source[c], grad_messages * weight[c].unsqueeze(-1))
            if grad_weight is not None:
                grad_weight[c] = (grad_messages * x.index_select(0, source[c])).sum(dim=-1)
        return None if grad_x is None else grad_x.result(), grad_weight, None, None, None


def edge_dot(a: torch.Tensor, b: torch.Tensor, index_a: torch.Tensor, index_b: torch.Tensor) -> torch.Tensor:
    """``(a[index_a] * b[index_b]).sum(-1)``: one dot product per edge [E].

    This and :func:`weighted_edge_sum` run the operations of the whole-edge expression and of its backward (gather,
    product, row sum; gradients added per edge by ``index_add_``, in edge order) on ``EDGE_CHUNK`` edges at a time,
    so the values and gradients are the same to the bit while no ``[E, dim]`` tensor is made: at 512 pairs a batch
    has ~57k edges, and each such tensor was 69 MB to allocate, fill and read back.
    """
    return _EdgeDot.apply(a, b, index_a, index_b)


def weighted_edge_sum(x: torch.Tensor, weight: torch.Tensor, source: torch.Tensor, slot: torch.Tensor,
                      num_slots: int) -> torch.Tensor:
    """``zeros(num_slots, dim).index_add_(0, slot, x[source] * weight[:, None])``: each edge's weighted source row
    added into its slot [num_slots, dim], in edge order (chunked as :func:`edge_dot`)."""
    return _WeightedEdgeSum.apply(x, weight, source, slot, num_slots)


# ---------------------------------------------------------------------------------------------------------------------
# Layers
# ---------------------------------------------------------------------------------------------------------------------


class WindowEdgeAttention(nn.Module):
    """Edge weights ``alpha_jk = softmax over the targets k of source j of (W h_k) . h_j``."""

    def __init__(self, dim: int, init_std: float) -> None:
        super().__init__()
        self.dim = dim
        self.init_std = init_std
        self.weight = nn.Parameter(torch.empty(dim, dim))
        nn.init.normal_(self.weight, 0.0, init_std)

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        source, target = edge_index
        projected = h @ float_weight(self, "weight", h.dtype).t()  # W h_k for every node
        logits = edge_dot(projected, h, target, source)
        return softmax(logits, source, num_nodes=h.size(0))

    def extra_repr(self) -> str:
        return f"{self.dim}, init_std={self.init_std:.3g}"


class WeightedRGCNConv(nn.Module):
    """Relational graph convolution with per-edge weights and basis decomposition (PyG 1.4 ``RGCNConv`` with
    ``edge_norm``)::

        W_r  = sum_b comp[r, b] * basis[b]                            (num_bases basis matrices [in, out])
        out_k = x_k @ root + bias + sum_{edges j -> k} w_jk * (x_j @ W_{type(j -> k)})

    Computed as: the weighted inputs are summed per (target, relation) first, then one matmul with the stacked
    ``W_r`` (the same sum, in another order).
    """

    def __init__(self, in_dim: int, out_dim: int, num_relations: int, num_bases: int) -> None:
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.num_relations, self.num_bases = num_relations, num_bases
        self.basis = nn.Parameter(torch.empty(num_bases, in_dim, out_dim))
        self.comp = nn.Parameter(torch.empty(num_relations, num_bases))
        self.root = nn.Parameter(torch.empty(in_dim, out_dim))
        self.bias = nn.Parameter(torch.empty(out_dim))
        bound = self.init_bound()
        for p in (self.basis, self.comp, self.root, self.bias):
            nn.init.uniform_(p, -bound, bound)

    def init_bound(self) -> float:
        # PyG 1.4: uniform(num_bases * in_channels, tensor) for basis, att, root and bias
        return 1.0 / math.sqrt(self.num_bases * self.in_dim)

    def relation_weights(self) -> torch.Tensor:
        """``W_r`` for every relation: [num_relations, in_dim, out_dim]."""
        basis = float_weight(self, "basis", self.comp.dtype)
        return (self.comp @ basis.reshape(self.num_bases, -1)).view(self.num_relations, self.in_dim, self.out_dim)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor,
                edge_weight: torch.Tensor | None = None) -> torch.Tensor:
        num_nodes = x.size(0)
        source, target = edge_index
        if edge_type.numel() and (int(edge_type.min()) < 0 or int(edge_type.max()) >= self.num_relations):
            raise ValueError(f"edge_type must lie in [0, {self.num_relations})")
        if edge_weight is None:
            edge_weight = x.new_ones(source.numel())  # x * 1.0 is x: every edge counts once
        slots = weighted_edge_sum(x, edge_weight, source, target * self.num_relations + edge_type,
                                  num_nodes * self.num_relations)
        weights = self.relation_weights().reshape(self.num_relations * self.in_dim, self.out_dim)
        out = slots.view(num_nodes, self.num_relations * self.in_dim) @ weights
        return out + x @ float_weight(self, "root", x.dtype) + self.bias

    def extra_repr(self) -> str:
        return f"{self.in_dim}, {self.out_dim}, num_relations={self.num_relations}, num_bases={self.num_bases}"


# ---------------------------------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------------------------------


class DynaEvalPreTrainedModel(PreTrainedModel):
    config_class = DynaEvalConfig
    base_model_prefix = "dynaeval"
    main_input_name = "utterance_embeddings"

    def _init_weights(self, module: nn.Module) -> None:
        # torch / PyG defaults, as the original's modules; transformers' `init` functions skip loaded parameters.
        from transformers import initialization as init

        if isinstance(module, WeightedRGCNConv):
            bound = module.init_bound()
            for p in (module.basis, module.comp, module.root, module.bias):
                if p.is_floating_point():  # not int8 rows (config.int8_weights), which only loading fills
                    init.uniform_(p, -bound, bound)
        elif isinstance(module, WindowEdgeAttention) and module.weight.is_floating_point():
            init.normal_(module.weight, 0.0, module.init_std)
        elif isinstance(module, nn.LSTM):
            bound = 1.0 / math.sqrt(module.hidden_size)
            for p in module.parameters():
                init.uniform_(p, -bound, bound)
        elif isinstance(module, (nn.Linear, PygLinear)):
            init.kaiming_uniform_(module.weight, a=math.sqrt(5))
            if module.bias is not None:
                fan_in = module.weight.shape[1]
                bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                init.uniform_(module.bias, -bound, bound)


class DynaEvalModel(DynaEvalPreTrainedModel):
    """DynaEval: BiLSTM over utterance embeddings + speaker/direction-aware relational graph, one score per dialogue.

    Inputs are batched PyG-style: the utterances of all dialogues flattened into one ``[N, utterance_dim]`` tensor,
    dialogue after dialogue, with ``dialogue_lengths`` [B] saying how many belong to each.
    """

    #: Weights besides the linear layers' that a quantised checkpoint may store as int8 rows (``int8_weights``), each
    #: read through ``float_weight``: the LSTM's (by :func:`packed_lstm_steps`, which then runs on every device), the
    #: edge attention's and the relational layer's basis and root (a row per input dimension, and basis).
    int8_row_parameters = ("lstm.weight_*", "edge_attention.weight", "rgcn.basis", "rgcn.root")

    def __init__(self, config: DynaEvalConfig) -> None:
        super().__init__(config)
        d, g = config.node_dim, config.graph_dim
        self.input_proj = nn.Linear(config.utterance_dim, d)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(d, d // 2, num_layers=config.lstm_layers, bidirectional=True, batch_first=True,
                            dropout=config.dropout if config.lstm_layers > 1 else 0.0)
        self.edge_attention = WindowEdgeAttention(d, config.attention_init_std)
        self.rgcn = WeightedRGCNConv(d, g, config.num_relations, config.num_bases)
        self.graph_conv = GraphConv(g, g, aggr="add")
        self.hidden = nn.Linear(d + g, g)
        self.output = nn.Linear(g, 1)
        store_int8_rows(self, config.int8_weights)  # the weights a quantised checkpoint stores as int8 rows
        self.post_init()

    # -- pieces -------------------------------------------------------------------------------------------------------

    def contextualize(self, utterance_embeddings: torch.Tensor, dialogue_lengths: torch.Tensor) -> torch.Tensor:
        """Projected utterances through the BiLSTM, per dialogue: [N, node_dim]."""
        x = self.dropout(self.input_proj(utterance_embeddings))
        order = packed_node_order(dialogue_lengths.cpu())
        nodes = order.data.to(x.device)
        packed = x.index_select(0, nodes)
        int8_lstm = any(b.dtype == torch.int8 for b in self.lstm.buffers())  # int8 rows: torch's LSTM cannot read
        if int8_lstm or x.device.type == "cpu" and torch.is_grad_enabled():  # the same LSTM with a cheaper backward
            out = packed_lstm_steps(self.lstm, packed, order.batch_sizes)
        else:
            out = self.lstm(PackedSequence(packed, order.batch_sizes, order.sorted_indices.to(x.device),
                                           order.unsorted_indices.to(x.device)))[0].data
        return out.index_select(0, torch.argsort(nodes))  # back to dialogue order

    def graph_inputs(self, h: torch.Tensor, dialogue_lengths: torch.Tensor, speaker_ids: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(edge_index, edge_type, edge_weight)`` for node states ``h``."""
        cfg = self.config
        edge_index, edge_type = build_dialogue_graph(dialogue_lengths.cpu(), speaker_ids.cpu(), cfg.window_past,
                                                     cfg.window_future, cfg.max_speakers)
        edge_index, edge_type = edge_index.to(h.device), edge_type.to(h.device)
        return edge_index, edge_type, self.edge_attention(h, edge_index)

    # -- forward ------------------------------------------------------------------------------------------------------

    def forward(
        self,
        utterance_embeddings: torch.Tensor,
        dialogue_lengths: torch.Tensor,
        speaker_ids: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> DynaEvalOutput | tuple[torch.Tensor]:
        r"""
        Args:
            utterance_embeddings: float [N, utterance_dim], the utterances of all dialogues, dialogue after
                dialogue, each in conversation order.
            dialogue_lengths: long [B], utterances per dialogue (each >= 1, summing to N).
            speaker_ids: long [N] in ``[0, max_speakers)``, numbered by first appearance within each dialogue
                (None: 0, 1, 0, 1, ... in every dialogue).

        Returns:
            [`DynaEvalOutput`] with ``score`` [B].
        """
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if utterance_embeddings.dim() != 2 or utterance_embeddings.size(-1) != self.config.utterance_dim:
            raise ValueError(f"utterance_embeddings must be [N, {self.config.utterance_dim}], "
                             f"got shape {tuple(utterance_embeddings.shape)}")
        lengths = _check_lengths(dialogue_lengths, utterance_embeddings.size(0))
        if speaker_ids is None:
            speaker_ids = alternating_speakers(lengths)
        speaker_ids = torch.as_tensor(speaker_ids, dtype=torch.long)
        if speaker_ids.shape != (utterance_embeddings.size(0),):
            raise ValueError(f"speaker_ids must be [N] = [{utterance_embeddings.size(0)}], "
                             f"got shape {tuple(speaker_ids.shape)}")
        x = utterance_embeddings.to(self.dtype)  # the float weights' (input_proj's may be int8 rows)
        h = self.contextualize(x, lengths)
        edge_index, edge_type, edge_weight = self.graph_inputs(h, lengths, speaker_ids)
        g = self.rgcn(h, edge_index, edge_type, edge_weight)
        g = self.graph_conv(g, edge_index)
        hidden = self.dropout(F.relu(self.hidden(torch.cat([h, g], dim=-1))))
        batch = torch.repeat_interleave(torch.arange(lengths.numel(), device=h.device), lengths.to(h.device))
        pooled = hidden.new_zeros(lengths.numel(), hidden.size(-1)).index_add_(0, batch, hidden)
        pooled = pooled / lengths.to(device=h.device, dtype=hidden.dtype).unsqueeze(-1)
        score = self.output(pooled).squeeze(-1)
        if not return_dict:
            return (score,)
        return DynaEvalOutput(score=score)


DynaEvalModel.register_for_auto_class("AutoModel")

__all__ = [
    "DynaEvalModel",
    "DynaEvalOutput",
    "DynaEvalPreTrainedModel",
    "WeightedRGCNConv",
    "WindowEdgeAttention",
    "alternating_speakers",
    "build_dialogue_graph",
    "edge_dot",
    "packed_lstm_steps",
    "packed_node_order",
    "relation_types",
    "weighted_edge_sum",
    "window_edges",
]
