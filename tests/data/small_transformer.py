"""A user's small transformer, as one would write it: an nn.MultiheadAttention encoder block and a decoder block
with F.scaled_dot_product_attention (causal, grouped-query), RMSNorm written by hand, RoPE (rotate-half) and a
SwiGLU feed-forward. `dsasim network tests/data/small_transformer.py:SmallTransformer` reads it with no unmodelled
layer (tests/test_llm_layers.py)."""

import torch
import torch.nn.functional as F
from torch import nn

example_input_shape = (2, 16, 64)  # (batch, tokens, hidden)


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class SmallTransformer(nn.Module):
    def __init__(self, hidden: int = 64, heads: int = 4, kv_heads: int = 2, tokens: int = 16) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.tokens = heads, kv_heads, hidden // heads, tokens
        self.encoder_norm = nn.LayerNorm(hidden)
        self.mha = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.norm = RMSNorm(hidden)
        self.wq = nn.Linear(hidden, hidden, bias=False)
        self.wk = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(hidden, hidden, bias=False)
        self.register_buffer("cos", torch.ones(tokens, self.head_dim))
        self.register_buffer("sin", torch.zeros(tokens, self.head_dim))
        self.ffn_norm = RMSNorm(hidden)
        self.gate = nn.Linear(hidden, 4 * hidden, bias=False)
        self.up = nn.Linear(hidden, 4 * hidden, bias=False)
        self.down = nn.Linear(4 * hidden, hidden, bias=False)

    def forward(self, x):
        b = x.shape[0]
        h = self.encoder_norm(x)
        x = x + self.mha(h, h, h, need_weights=False)[0]
        h = self.norm(x)
        q = self.wq(h).view(b, self.tokens, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, self.tokens, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, self.tokens, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, self.tokens, -1))
        h = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))
