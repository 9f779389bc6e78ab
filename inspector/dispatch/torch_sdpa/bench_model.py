"""A small Llama-style decoder in pure PyTorch, for ``watch()``'s benchmark and tests.

It makes the SDPA calls a real decoder makes: grouped-query heads (``enable_gqa=True``), causal
prefill (``is_causal=True``), and one-token decode steps against a KV cache (``is_causal=False``,
as Hugging Face models do for a single query token), through ``F.scaled_dot_product_attention``
looked up at call time, as every model does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class LlamaConfig:
    vocab: int = 512
    dim: int = 256
    layers: int = 4
    heads: int = 8
    kv_heads: int = 2
    hidden: int = 512
    max_len: int = 512


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(head_dim: int, max_len: int) -> tuple[Tensor, Tensor]:
    """The cos and sin tables of rotary position embeddings."""
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv)
    both = torch.cat([angles, angles], dim=-1)
    return both.cos(), both.sin()


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    turned = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + turned * sin


class Attention(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads = config.heads, config.kv_heads
        self.head_dim = config.dim // config.heads
        self.q_proj = nn.Linear(config.dim, config.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.dim, config.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.dim, config.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(config.heads * self.head_dim, config.dim, bias=False)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, cache: list[Tensor] | None = None) -> Tensor:
        batch, length, _ = x.shape
        q = self.q_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        out = F.scaled_dot_product_attention(q, k, v, is_causal=length > 1, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))


class DecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.input_norm = RMSNorm(config.dim)
        self.self_attn = Attention(config)
        self.post_norm = RMSNorm(config.dim)
        self.gate = nn.Linear(config.dim, config.hidden, bias=False)
        self.up = nn.Linear(config.dim, config.hidden, bias=False)
        self.down = nn.Linear(config.hidden, config.dim, bias=False)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, cache: list[Tensor] | None = None) -> Tensor:
        x = x + self.self_attn(self.input_norm(x), cos, sin, cache)
        h = self.post_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(config.vocab, config.dim)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.layers))
        self.norm = RMSNorm(config.dim)

    def forward(self, ids: Tensor, start: int, caches: list[list[Tensor]] | None) -> Tensor:
        x = self.embed(ids)
        cos_table: Tensor = self.cos  # type: ignore[assignment]  # buffers, registered by LlamaStyle
        sin_table: Tensor = self.sin  # type: ignore[assignment]
        cos, sin = cos_table[start : start + ids.shape[1]], sin_table[start : start + ids.shape[1]]
        for index, layer in enumerate(self.layers):
            x = layer(x, cos, sin, None if caches is None else caches[index])
        return self.norm(x)


class LlamaStyle(nn.Module):
    """``model(ids)`` for a forward pass, ``model(ids, caches=...)`` to fill or extend KV caches."""

    def __init__(self, config: LlamaConfig | None = None) -> None:
        super().__init__()
        self.config = config = config or LlamaConfig()
        self.model = Decoder(config)
        cos, sin = rotary(config.dim // config.heads, config.max_len)
        self.model.register_buffer("cos", cos, persistent=False)
        self.model.register_buffer("sin", sin, persistent=False)
        self.lm_head = nn.Linear(config.dim, config.vocab, bias=False)

    def forward(self, ids: Tensor, caches: list[list[Tensor]] | None = None) -> Tensor:
        start = 0 if not caches or not caches[0] else caches[0][0].shape[2]
        return self.lm_head(self.model(ids, start, caches))

    def new_caches(self) -> list[list[Tensor]]:
        return [[] for _ in range(self.config.layers)]
