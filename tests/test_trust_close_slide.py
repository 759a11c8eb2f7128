"""Issue 26, last gaps: the search's sliding-window rule refuses a slide along a loop that also sits above a tensor
staged strictly outside the sliding one (`Space.valid_slides`), because the nest cannot then put that loop
innermost above the sliding tensor (README, "Sliding-window reuse": a tensor slides along L only when L is the
innermost loop with more than one trip above its own staging point).

The small nest used throughout: a 3x1 conv, N = 1, IC = 2, OC = 4, H = 6, W = 1, padding 1 on rows (so OH = 6),
2-byte words; tiles oh = 2 (3 trips), oc = 2 (2 trips), every other loop whole.

    for oh in 0:6 step 2:          # 3 trips
      stage weight                 # its box depends on oc: staged above the oc loop, loaded once per oh trip
      for oc in 0:4 step 2:        # 2 trips
        stage image, output

The image's box per oh trip t is rows [2t-1, 2t+3) clipped to [0, 6): 3, 4 and 3 rows, 10 rows x 2 channels x
2 B = 40 B per sweep of oh, and the oc loop inside oh reloads it: 2 x 40 = 80 B without sliding. The innermost
loop with several trips above the image is oc, which is not a window loop, so the image cannot slide here: the
weight's staging (above-set {oh}, a strict subset of the image's {oh, oc}) pins oh outside oc. Had the search
counted a slide along oh anyway it would have charged 2 x 6 rows x 2 channels x 2 B = 48 B for the image, the
count of the *other* order (oc outside oh, weight staged at the top), a nest this row does not describe, and
building its LoopNest raises.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dsasim import preset
from dsasim.architect.model.analytic import analyze
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest
from dsasim.architect.search.layer_search import Space, _neighbours

HW = dataclasses.replace(preset("blog"), sram_bytes=1 << 40, word_bytes=2)
PROBLEM = ConvProblem(1, 2, 4, 6, 1, 3, kw=1, padding=(1, 0))
TILES = {"oh": 2, "oc": 2}
PINNED = LoopNest(PROBLEM, ("oh", "oc", "n", "ow", "ic", "kh", "kw"), TILES,
                  {"weight": "oh", "image": "oc", "output": "oc"})  # the nest of the module docstring
SLIDING = LoopNest(PROBLEM, ("oc", "oh", "n", "ow", "ic", "kh", "kw"), TILES,
                   {"weight": "top", "image": "oh", "output": "oh"}, slide=["image"])  # oh innermost above the image


def _space() -> tuple[Space, int]:
    space = Space(PROBLEM, HW, exhaustive=True)
    rows_group = next(v for v, o in space.slidable[0] if space.dims[o] == "oh")
    return space, rows_group


def test_the_hand_counts_of_the_two_nests():
    """80 B for the pinned image (reloaded per oc trip), 48 B for the sliding one (6 rows x 2 x 2 B per oc sweep)."""
    assert analyze(PINNED, HW).tensor("image").loaded_bytes == 2 * 10 * 2 * 2 == 80
    assert analyze(SLIDING, HW).tensor("image").loaded_bytes == 2 * 6 * 2 * 2 == 48


def test_a_slide_under_a_loop_of_a_tensor_staged_outside_is_refused():
    space, rows_group = _space()
    row = space.row(PINNED)
    forced = row.copy()
    forced[space.nd + 2 * space.nt + 0] = rows_group  # the image "slides" along oh
    assert space.valid_slides(forced[None, :])[0].tolist() == [-1, -1, -1]
    with pytest.raises(ValueError, match="but it is 'oc'"):  # the nest the row would describe cannot be built
        LoopNest(PROBLEM, PINNED.order, TILES, {"weight": "oh", "image": "oc", "output": "oc"}, slide=["image"])
    # the same slide is kept where oh can be innermost above the image (the weight staged at the top)
    assert space.valid_slides(space.row(SLIDING)[None, :])[0].tolist() == [rows_group, -1, -1]


def test_every_refinement_neighbour_of_a_sliding_nest_is_a_nest_counted_as_analyze_counts_it():
    """Toggling the weight's oh flag from the sliding nest gives exactly the pinned structure of the docstring: the
    neighbour must lose its slide, so that the evaluator's figures are those of a nest that exists."""
    space, _ = _space()
    cand = _neighbours(space, space.row(SLIDING)[None, :])
    ev = space.evaluate(space.batch(cand))
    pinned_seen = 0
    for i, row in enumerate(cand):
        nest = space.nest(row)  # raises ValueError for a slide the nest cannot make
        a = analyze(nest, HW)
        assert int(ev.tensors[0].loaded_bytes[i]) == a.tensor("image").loaded_bytes, nest
        pinned_seen += nest.above("weight") == ("oh",) and set(nest.above("image")) == {"oh", "oc"}
    assert pinned_seen >= 1  # the case above is among them
    assert np.all(cand[:, space.nd + 2 * space.nt + 1:] == -1)  # the weight and the output never slide
