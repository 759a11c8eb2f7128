"""An attention schedule as data: `AttentionSchedule(problem, kind, br, bc, ways)`.

Every schedule walks the (batch, key/value head) groups; within one, the g = h / hkv query heads of the group are
processed together, so that one K or V tile serves all g heads (grouped-query attention loads K and V once per
group and tile visit, not once per query head). Query rows go in tiles of `br`, keys in tiles of `bc` (the last
of each may be ragged); a (row tile, key tile) pair the causal mask hides whole is skipped (`tile_computed`).
Kinds (what `dsasim.kernels.attention_kernel` executes and `dsasim.architect.model.attention` counts):

  unfused    three passes through DDR: S = Q·Kᵀ stored; P = softmax(S) (S rows loaded, P rows stored); O = P·V
  store-p    Q·Kᵀ and the softmax fused (S rows on chip), P stored; O = P·V as in unfused
  store-s    S stored as in unfused; the softmax and P·V fused (S rows loaded, P on chip, O normalised at the end)
  q-outer    fused, online softmax (FlashAttention-2): per row tile, O, the running max and sum stay on chip while
             the key tiles stream past
  kv-outer   fused, online softmax (FlashAttention's Algorithm 1): per key tile, the row tiles stream past, O and
             the running max (M) and sum (L) re-loaded from and stored to DDR on every visit after the first

`ways` buffers the innermost streamed scope (@kv for unfused, store-*, q-outer; @q for kv-outer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from dsasim.architect.problems.attention import AttentionProblem
from dsasim.util import check_int

__all__ = ["ATTENTION_KINDS", "FUSED_KINDS", "AttentionSchedule"]

ATTENTION_KINDS = ("unfused", "store-p", "store-s", "q-outer", "kv-outer")
FUSED_KINDS = ("q-outer", "kv-outer")


@dataclass(frozen=True)
class AttentionSchedule:
    """A schedule of an `AttentionProblem` (module docstring); bad values raise ValueError."""

    problem: AttentionProblem
    kind: str
    br: int
    bc: int
    ways: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.problem, AttentionProblem):
            raise ValueError(f"AttentionSchedule needs an AttentionProblem, got {type(self.problem).__name__}")
        if self.kind not in ATTENTION_KINDS:
            raise ValueError(f"AttentionSchedule kind {self.kind!r}: kinds are {', '.join(ATTENTION_KINDS)}")
        check_int("AttentionSchedule br", self.br, 1)
        check_int("AttentionSchedule bc", self.bc, 1)
        if self.br > self.problem.n or self.bc > self.problem.m:
            raise ValueError(f"AttentionSchedule tiles br={self.br}, bc={self.bc}: a tile holds at most n="
                             f"{self.problem.n} query rows and m={self.problem.m} keys")
        check_int("AttentionSchedule ways", self.ways, 1)

    def row_tiles(self) -> Iterator[tuple[int, int]]:
        """The query row tiles [r0, r1), in order."""
        n = self.problem.n
        for r0 in range(0, n, self.br):
            yield r0, min(r0 + self.br, n)

    def key_tiles(self, r0: int, r1: int) -> list[tuple[int, int]]:
        """The key tiles [c0, c1) computed for query rows [r0, r1) (those the causal mask does not hide whole)."""
        p = self.problem
        return [(c0, min(c0 + self.bc, p.m)) for c0 in range(0, p.m, self.bc) if p.tile_computed(r0, r1, c0)]

    def masked(self, r0: int, c1: int) -> bool:
        """Whether the mask hides part of a tile of rows from r0 and keys before c1 (its last key lies past the
        first row's last visible key)."""
        return self.problem.causal and c1 - 1 > r0 + self.problem.offset

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem.to_json(), "kind": self.kind, "br": self.br, "bc": self.bc, "ways": self.ways}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "AttentionSchedule":
        return cls(AttentionProblem.from_json(data["problem"]), data["kind"], data["br"], data["bc"],
                   data.get("ways", 1))
