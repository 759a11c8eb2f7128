"""Scaled dot-product attention as a problem: `AttentionProblem(b, h, hkv, n, m, d, causal)`.

Per batch element and query head: S = Q·Kᵀ/√d (n x m), P = softmax(S) row by row (with the causal mask), O = P·V
(n x d). b: batch, h: query heads, hkv: key/value heads (grouped-query attention: query head i reads the K and V of
head i // (h / hkv), torch's `repeat_interleave` / `enable_gqa` order; hkv = h is multi-head attention, hkv = 1
multi-query), n: query length, m: key/value length, d: head dimension.

The causal mask is aligned **bottom-right** (FlashAttention >= 2.1's convention, the one a KV cache needs): query
row i sees keys j <= i + (m - n), so the last query sees every key and a decode step (n = 1) sees the whole cache.
torch's `is_causal=True` aligns the mask top-left instead (j <= i); the two agree when n = m. With m < n the
first n - m queries would see no key at all (their softmax is 0/0), so causal attention with m < n is refused.

Tensors in DDR, 2-d, rows ordered (batch, head, position) (torch's (b, h, n, d) layout flattened):
  Q (b·h·n, d), K and V (b·hkv·m, d) (inputs), O (b·h·n, d) (output).

Spec: `attention:b=..,h=..,hkv=..,n=..,m=..,d=..[,causal=1]` (b defaults to 1, hkv to h, m to n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from dsasim.util import check_int, is_ascii_whole

__all__ = ["AttentionProblem", "parse_attention", "is_attention", "WIDEST_WORD_BYTES", "EXACT_COUNT_LIMIT"]

WIDEST_WORD_BYTES = 64  # the widest word an Accelerator allows (dsasim.hardware's word_bytes range)
EXACT_COUNT_LIMIT = 2 ** 53  # the largest count the searches evaluate exactly (search.layer_search's, checked equal)
_KEYS = ("b", "h", "hkv", "n", "m", "d", "causal")


@dataclass(frozen=True)
class AttentionProblem:
    """Attention of b x h query heads over hkv key/value heads (module docstring); bad sizes raise ValueError."""

    b: int
    h: int
    hkv: int
    n: int
    m: int
    d: int
    causal: bool = False

    def __post_init__(self) -> None:
        for label in ("b", "h", "hkv", "n", "m", "d"):
            check_int(f"AttentionProblem: {label}", getattr(self, label), 1)
        if not isinstance(self.causal, bool):
            raise ValueError(f"AttentionProblem: causal must be True or False, got {self.causal!r}")
        if self.h % self.hkv:
            raise ValueError(f"AttentionProblem: h={self.h} query heads must be a multiple of hkv={self.hkv} "
                             f"key/value heads (each group of h/hkv query heads shares one K and V)")
        if self.causal and self.m < self.n:
            raise ValueError(f"AttentionProblem: causal with m={self.m} keys < n={self.n} queries is undefined (the "
                             f"mask is aligned bottom-right: query i sees keys j <= i + m - n, so the first "
                             f"{self.n - self.m} queries would see none); use m >= n")
        bound = self.count_bound_bytes(WIDEST_WORD_BYTES)
        if bound > EXACT_COUNT_LIMIT:
            raise ValueError(f"AttentionProblem {self.spec()}: too large for exact counts: a schedule can move up to "
                             f"{bound:.3g} B ({WIDEST_WORD_BYTES}-byte words), above 2**53 = {EXACT_COUNT_LIMIT:,} B; "
                             f"split the batch or the heads")

    # -- sizes -----------------------------------------------------------------------------------------------------
    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.h // self.hkv

    @property
    def offset(self) -> int:
        """The causal mask's diagonal: query i sees keys j <= i + offset (m - n, bottom-right alignment)."""
        return self.m - self.n

    def shape(self, tensor: str) -> tuple[int, int]:
        """The DDR shape of Q, K, V or O (rows, d), in elements (module docstring)."""
        rows = {"Q": self.b * self.h * self.n, "O": self.b * self.h * self.n,
                "K": self.b * self.hkv * self.m, "V": self.b * self.hkv * self.m}
        if tensor not in rows:
            raise ValueError(f"AttentionProblem has tensors Q, K, V and O, not {tensor!r}")
        return rows[tensor], self.d

    def visible_keys(self, row: int) -> int:
        """How many keys query `row` (0-based) sees: m, or row + offset + 1 when causal."""
        return min(self.m, row + self.offset + 1) if self.causal else self.m

    def tile_computed(self, r0: int, r1: int, c0: int) -> bool:
        """Whether a kernel computes the tile of query rows [r0, r1) and keys from c0: False only when the causal
        mask hides all of it (its first key lies past the last row's last visible key)."""
        return not self.causal or c0 <= r1 - 1 + self.offset

    @property
    def visible_pairs(self) -> int:
        """(query, key) pairs the mask keeps, per (batch, head): n·m, or n·m - n(n-1)/2 when causal (bottom-right:
        row i sees i + m - n + 1 keys, summed over i)."""
        return self.n * self.m - (self.n * (self.n - 1) // 2 if self.causal else 0)

    @property
    def macs(self) -> int:
        """Useful multiply-accumulates: d per visible pair for Q·Kᵀ and d for P·V, over b x h heads."""
        return 2 * self.b * self.h * self.visible_pairs * self.d

    def tiled_macs(self, br: int, bc: int) -> int:
        """The MACs a kernel of br query rows x bc keys computes: every element of each tile not fully masked
        (a partly masked tile is computed whole, then masked), 2 x d per element, over b x h heads."""
        check_int("tiled_macs: br", br, 1)
        check_int("tiled_macs: bc", bc, 1)
        elements = 0
        for r0 in range(0, self.n, br):
            r1 = min(r0 + br, self.n)
            for c0 in range(0, self.m, bc):
                if self.tile_computed(r0, r1, c0):
                    elements += (r1 - r0) * (min(c0 + bc, self.m) - c0)
        return 2 * self.b * self.h * elements * self.d

    def compulsory_bytes(self, word_bytes: int) -> int:
        """Q, K and V loaded once and O stored once (S and P never touch DDR); every key is seen by the last query
        even when causal, so no schedule moves less."""
        return sum(math.prod(self.shape(t)) for t in "QKVO") * word_bytes

    def count_bound_bytes(self, word_bytes: int) -> int:
        """An upper bound (bytes) on every count of every schedule: 8 x word x b·h·n·m·(d + 1). Each of Q, K, V, O
        moves at most once per (query, key) pair and d (b·h·n·m·d elements), S and P at most once per pair and
        direction, the running max and sum at most twice per pair: 4(d) + 4 + 2 <= 8(d + 1) per pair."""
        return 8 * word_bytes * self.b * self.h * self.n * self.m * (self.d + 1)

    # -- description -----------------------------------------------------------------------------------------------
    def spec(self) -> str:
        """The problem as `attention:b=..,h=..,hkv=..,n=..,m=..,d=..[,causal=1]`."""
        return (f"attention:b={self.b},h={self.h},hkv={self.hkv},n={self.n},m={self.m},d={self.d}"
                + (",causal=1" if self.causal else ""))

    @property
    def name(self) -> str:
        return self.spec()

    def describe(self) -> str:
        """One line: the shapes and the mask."""
        gqa = "" if self.hkv == self.h else f" (grouped: {self.group} query heads per K/V head)"
        mask = ", causal (bottom-right)" if self.causal else ""
        return (f"# {self.spec()}: O = softmax(Q·Kᵀ/√{self.d}) · V, {self.b} x {self.h} heads over {self.hkv} K/V "
                f"heads{gqa}, {self.n} queries x {self.m} keys{mask}")

    def to_json(self) -> dict[str, Any]:
        return {"kind": "attention", "b": self.b, "h": self.h, "hkv": self.hkv, "n": self.n, "m": self.m,
                "d": self.d, "causal": self.causal}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "AttentionProblem":
        if data.get("kind", "attention") != "attention":
            raise ValueError(f"AttentionProblem.from_json: kind {data.get('kind')!r} is not 'attention'")
        return cls(data["b"], data["h"], data["hkv"], data["n"], data["m"], data["d"], data.get("causal", False))

    # -- torch -----------------------------------------------------------------------------------------------------
    def mask(self) -> Any:
        """The (n, m) bool mask torch's `attn_mask` takes (True: attend), bottom-right aligned; None when not
        causal."""
        import torch
        if not self.causal:
            return None
        return torch.ones(self.n, self.m, dtype=torch.bool).tril(diagonal=self.offset)

    def reference(self, Q: Any, K: Any, V: Any) -> dict[str, Any]:
        """torch's O (`scaled_dot_product_attention`, GQA by `enable_gqa`) for 2-d Q, K, V as the kernels hold
        them."""
        import torch.nn.functional as F
        q = Q.reshape(self.b, self.h, self.n, self.d)
        k = K.reshape(self.b, self.hkv, self.m, self.d)
        v = V.reshape(self.b, self.hkv, self.m, self.d)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask(), enable_gqa=self.hkv != self.h)
        return {"O": o.reshape(self.shape("O"))}


def is_attention(text: str) -> bool:
    """Whether `text` is an attention spec (starts with `attention:`)."""
    return text.strip().lower().startswith("attention:")


def parse_attention(text: str) -> AttentionProblem:
    """`attention:b=..,h=..,hkv=..,n=..,m=..,d=..[,causal=1]` -> AttentionProblem (b defaults to 1, hkv to h, m
    to n); ValueError saying what is wrong."""
    spec = text.strip()
    head, _, body = spec.partition(":")
    example = "attention:b=1,h=32,hkv=8,n=2048,m=2048,d=128,causal=1"
    if head.strip().lower() != "attention" or not body.strip():
        raise ValueError(f"attention spec {spec!r}: write attention:h=..,n=..,d=.. (and b, hkv, m, causal=1), "
                         f"e.g. {example}")
    values: dict[str, int] = {}
    for part in body.split(","):
        key, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not is_ascii_whole(value):
            raise ValueError(f"attention spec {spec!r}: {part.strip()!r} is not key=non-negative integer (digits 0-9)")
        if key in values:
            raise ValueError(f"attention spec {spec!r}: {key} given twice")
        if key not in _KEYS:
            raise ValueError(f"attention spec {spec!r}: unknown key {key!r}; keys are {', '.join(_KEYS)}")
        values[key] = int(value)
    missing = [k for k in ("h", "n", "d") if k not in values]
    if missing:
        raise ValueError(f"attention spec {spec!r}: missing {', '.join(missing)}, e.g. {example}")
    if values.get("causal", 0) not in (0, 1):
        raise ValueError(f"attention spec {spec!r}: causal must be 0 or 1, got {values['causal']}")
    return AttentionProblem(values.get("b", 1), values["h"], values.get("hkv", values["h"]), values["n"],
                            values.get("m", values["n"]), values["d"], bool(values.get("causal", 0)))
