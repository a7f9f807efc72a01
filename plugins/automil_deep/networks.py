"""The PyTorch networks of the deep learners, on padded batches of bags.

Every network takes ``X`` of shape ``(B, N, D)`` (bags padded to the longest, ``float32``) and ``mask`` of
shape ``(B, N)`` (``True`` on real instances) and returns ``(logits, scores)``: ``logits`` a list of
``(B, K)`` class scores (one per supervised head; training averages their losses, prediction their
logits) and ``scores`` of shape ``(B, N, K)``, the per-instance evidence a bag's witness is read from.
Padded positions never change a real bag's output, so a bag gets the same scores in any batch. ``K`` is
what the task's head reads (:mod:`automil_deep.heads`): the classes, a survival model's time bins, or one
log-risk or value; :class:`WithCovariates` adds a bag's clinical covariates to any of them.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["ABMIL", "Averaged", "DSMIL", "MINet", "MiNet", "TransMIL", "WithCovariates"]


def trunk(n_features: int, widths: tuple[int, ...], dropout: float) -> list[nn.Sequential]:
    """The instance network of Wang et al. and Ilse et al.: fully connected layers with ReLU and dropout."""
    layers, width_in = [], n_features
    for width in widths:
        layers.append(nn.Sequential(nn.Linear(width_in, width), nn.ReLU(), nn.Dropout(dropout)))
        width_in = width
    return layers


def halving(hidden: int, depth: int) -> tuple[int, ...]:
    """Layer widths ``hidden, hidden / 2, ...`` (the papers' 256-128-64 at ``hidden=256``)."""
    return tuple(max(hidden >> level, 4) for level in range(depth))


def masked_pool(h: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Max or mean over the real instances of each bag: ``(B, N, E) -> (B, E)``."""
    if pooling == "max":
        return h.masked_fill(~mask[..., None], -math.inf).amax(dim=1)
    weights = mask[..., None].to(h.dtype)
    return (h * weights).sum(dim=1) / weights.sum(dim=1)


def masked_softmax(a: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the instance axis (dim 1) with padded positions at weight 0."""
    return torch.softmax(a.masked_fill(~mask.reshape(mask.shape + (1,) * (a.dim() - 2)), -math.inf), dim=1)


class ABMIL(nn.Module):
    """Attention-based MIL pooling (Ilse, Tomczak & Welling 2018): ``z = sum_i a_i h_i`` with
    ``a = softmax_i(w^T (tanh(V h_i) * sigm(U h_i)))`` (the gated variant) or ``w^T tanh(V h_i)``."""

    def __init__(self, n_features, n_classes, hidden, dropout, gated):
        super().__init__()
        widths = halving(hidden, 3)
        self.instances = nn.Sequential(*trunk(n_features, widths, dropout))
        embedding = widths[-1]
        self.V = nn.Sequential(nn.Linear(embedding, embedding), nn.Tanh())
        self.U = nn.Sequential(nn.Linear(embedding, embedding), nn.Sigmoid()) if gated else None
        self.w = nn.Linear(embedding, 1)
        self.classifier = nn.Linear(embedding, n_classes)
        self.n_classes = n_classes

    def forward(self, X, mask):
        h = self.instances(X)
        gate = self.V(h) if self.U is None else self.V(h) * self.U(h)
        a = masked_softmax(self.w(gate)[..., 0], mask)  # (B, N)
        z = (a[..., None] * h).sum(dim=1)
        return [self.classifier(z)], a[..., None].expand(-1, -1, self.n_classes)


class MiNet(nn.Module):
    """mi-Net (Wang et al. 2018): an instance classifier whose scores are pooled into the bag's."""

    def __init__(self, n_features, n_classes, hidden, dropout, pooling):
        super().__init__()
        widths = halving(hidden, 3)
        self.instances = nn.Sequential(*trunk(n_features, widths, dropout), nn.Linear(widths[-1], n_classes))
        self.pooling = pooling

    def forward(self, X, mask):
        scores = self.instances(X)
        return [masked_pool(scores, mask, self.pooling)], scores


class MINet(nn.Module):
    """MI-Net (Wang et al. 2018): instance embeddings pooled into a bag embedding, which is classified;
    with deep supervision every layer's pooled embedding has its own classifier.

    The instance scores apply each classifier to the instance's own embedding (a bag of that instance
    alone), averaged over the supervised layers like the bag's logits."""

    def __init__(self, n_features, n_classes, hidden, dropout, pooling, deep_supervision):
        super().__init__()
        widths = halving(hidden, 3)
        self.layers = nn.ModuleList(trunk(n_features, widths, dropout))
        supervised = widths if deep_supervision else widths[-1:]
        self.heads = nn.ModuleList(nn.Linear(width, n_classes) for width in supervised)
        self.pooling = pooling

    def forward(self, X, mask):
        embeddings, h = [], X
        for layer in self.layers:
            h = layer(h)
            embeddings.append(h)
        embeddings = embeddings[-len(self.heads):]
        logits = [head(masked_pool(e, mask, self.pooling)) for head, e in zip(self.heads, embeddings)]
        scores = torch.stack([head(e) for head, e in zip(self.heads, embeddings)]).mean(dim=0)
        return logits, scores


class DSMIL(nn.Module):
    """DSMIL (Li, Li & Eliceiri 2021): a max-pooling instance classifier finds each class's critical
    instance; attention by similarity to it builds one bag embedding per class, classified by a 1-D
    convolution over the classes. Both streams are supervised; the logits average them."""

    def __init__(self, n_features, n_classes, hidden, dropout):
        super().__init__()
        widths = halving(hidden, 2)
        embedding = widths[-1]
        self.instances = nn.Sequential(*trunk(n_features, widths, dropout))
        self.instance_classifier = nn.Linear(embedding, n_classes)
        self.query = nn.Sequential(nn.Linear(embedding, embedding), nn.Tanh())
        self.value = nn.Sequential(nn.Dropout(dropout), nn.Linear(embedding, embedding))
        self.bag_classifier = nn.Conv1d(n_classes, n_classes, kernel_size=embedding)

    def forward(self, X, mask):
        h = self.instances(X)
        c = self.instance_classifier(h)  # (B, N, K)
        critical = c.masked_fill(~mask[..., None], -math.inf).argmax(dim=1)  # (B, K)
        max_logits = torch.gather(c, 1, critical[:, None, :])[:, 0, :]
        q = self.query(h)  # (B, N, Q)
        q_critical = torch.gather(q, 1, critical[..., None].expand(-1, -1, q.shape[-1]))  # (B, K, Q)
        A = masked_softmax(q @ q_critical.transpose(1, 2) / math.sqrt(q.shape[-1]), mask)  # (B, N, K)
        bag_embeddings = A.transpose(1, 2) @ self.value(h)  # (B, K, E)
        bag_logits = self.bag_classifier(bag_embeddings)[..., 0]
        return [bag_logits, max_logits], c


class TransMIL(nn.Module):
    """TransMIL (Shao et al. 2021): a class token and the instance tokens pass two self-attention layers
    with a position-encoding block (depthwise convolutions, kernels 7, 5 and 3) between them; the class
    token is classified, and its last-layer attention over the instances is their score.

    Two departures, both because MIL bags here are sets, not slides: the convolutions run along the
    instance order (1-D) instead of over a square grid, and attention is exact softmax attention instead
    of its Nystrom approximation (time and memory quadratic in the bag's size)."""

    def __init__(self, n_features, n_classes, hidden, dropout, heads=4):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Dropout(dropout))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(3))
        self.attention = nn.ModuleList(nn.MultiheadAttention(hidden, heads, dropout=dropout, batch_first=True)
                                       for _ in range(2))
        self.position = nn.ModuleList(nn.Conv1d(hidden, hidden, k, padding=k // 2, groups=hidden)
                                      for k in (7, 5, 3))
        self.classifier = nn.Linear(hidden, n_classes)
        self.n_classes = n_classes

    def _attend(self, layer, x, padding):
        y = self.norms[layer](x)
        out, weights = self.attention[layer](y, y, y, key_padding_mask=padding, need_weights=True)
        return x + out, weights

    def forward(self, X, mask):
        real = mask[..., None].to(X.dtype)
        h = self.embed(X) * real
        x = torch.cat((self.cls_token.expand(len(X), -1, -1), h), dim=1)
        padding = torch.cat((torch.zeros_like(mask[:, :1]), ~mask), dim=1)
        x, _ = self._attend(0, x, padding)
        tokens = (x[:, 1:] * real).transpose(1, 2)  # (B, E, N), zero past each bag's end
        tokens = tokens + sum(conv(tokens) for conv in self.position)
        x = torch.cat((x[:, :1], tokens.transpose(1, 2) * real), dim=1)
        x, weights = self._attend(1, x, padding)
        logits = self.classifier(self.norms[2](x[:, 0]))
        return [logits], weights[:, 0, 1:, None].expand(-1, -1, self.n_classes)


class WithCovariates(nn.Module):
    """A network that also reads each bag's clinical covariates ``(B, k)``, after its pooling: a linear map of
    them is added to every head's output. That is a last linear layer over the pooled bag embedding with the
    covariates concatenated to it, as the covariates enter every network alike (mi-Net's pooled embedding is
    its pooled instance outputs; DSMIL's bag stream ends in its convolution over the classes)."""

    def __init__(self, network: nn.Module, n_covariates: int, n_outputs: int):
        super().__init__()
        self.network = network
        self.covariates = nn.Linear(n_covariates, n_outputs, bias=False)

    def forward(self, X, mask, covariates):
        heads, scores = self.network(X, mask)
        shift = self.covariates(covariates)
        return [head + shift for head in heads], scores


class Averaged(nn.Module):
    """Trained networks as one for prediction, a batch read once for all of them: a single head, ``combine``
    of each network's output (its heads averaged first, as prediction does; the task's head says how they
    combine: :meth:`automil_deep.heads.Head.combine`), and the networks' instance scores averaged."""

    def __init__(self, networks, combine):
        super().__init__()
        self.networks = nn.ModuleList(networks)
        self.combine = combine

    def forward(self, X, mask, *covariates):
        outputs = [network(X, mask, *covariates) for network in self.networks]
        combined = self.combine([torch.stack(heads).mean(dim=0) for heads, _ in outputs])
        return [combined], torch.stack([scores for _, scores in outputs]).mean(dim=0)
