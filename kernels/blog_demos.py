"""The blog's demo schedules (demo1-demo6-1), ported line by line, plus two schedules that beat them.

Shared setup: a 1x1 conv, 2048 -> 512 channels, input (1, 2048, 56, 56), stride 1, no padding (the blog's
`Infer`). Each port keeps the blog's loop structure, tile sizes, variable names, order of accesses and its
reuse-variable pattern (`reuse = False` at the top of a scope, passed to the access, switched to True after the
first iteration): the first access in a scope is a plain load the blog's counter counts, later ones reuse the
buffer. Where dsasim's API differs from the blog's, a comment says so. The blog's own code is in
../shared/seeds/002_507640ca681ccf73.txt.

API differences that apply to every port:
- The blog's `TarcedArray(array)` tensors are created by the runner from the schedule's `Workload` and passed in;
  `GlobalHierarchy(L2SIZE)` is `GlobalHierarchy(s, name)`: the capacity comes from the hardware preset ("blog":
  sram_bytes = L2SIZE = 1536 * 1024 with 1-byte words, so the blog's element counts are bytes).
- The blog's `TensorCore(image, weight)` function is `TensorCore(s).conv2d(image, weight)`; its numpy
  `np.sum(imageTile * weightTile, keepdims=True)` is `VectorUnit(s).dot(imageTile, weightTile)`.
- The blog builds one module-level `Infer` for its fixed shape; each port builds it from the traced tensors
  (`_conv_infer`), so the same body runs the reduced shapes of the tests.
- The blog's assert/print/`GlobalHierarchy.Reset()` tail is the runner's job (`run_schedule` checks the result
  against torch; each run has its own Session, so there is no global counter to reset).
- `Segments = blog_segments(s)`: dsasim's `Segments` clamps the last tile (504:512 of 512); the blog's did not
  (504:528). `dsasim demo --blog-quirks` tiles like the blog; honest traffic is the same either way.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from dsasim import (Conv2dBoundsInfer, GlobalHierarchy, Schedule, Segments, Session, TensorCore, TracedArray,
                    VectorUnit, Workload)

BATCH, IN_CHANNELS, OUT_CHANNELS, HEIGHT, WIDTH = 1, 2048, 512, 56, 56
IMAGE = (BATCH, IN_CHANNELS, HEIGHT, WIDTH)
WEIGHT = (OUT_CHANNELS, IN_CHANNELS, 1, 1)
OUTPUT = (BATCH, OUT_CHANNELS, HEIGHT, WIDTH)

if TYPE_CHECKING:
    import torch

# The torch references import torch when called: only a numeric run checks numbers, and importing these
# schedules (e.g. `dsasim demo --count-only`) should not pay for torch.


def _conv(image: torch.Tensor, weight: torch.Tensor) -> dict[str, torch.Tensor]:
    import torch.nn.functional as F

    return {"output": F.conv2d(image, weight)}


def _bias_conv(image: torch.Tensor, bias: torch.Tensor, weight: torch.Tensor) -> dict[str, torch.Tensor]:
    import torch.nn.functional as F

    return {"output": F.conv2d(image + bias, weight)}


CONV = Workload("blog-conv", inputs={"image": IMAGE, "weight": WEIGHT}, outputs={"output": OUTPUT},
                reference=_conv)
BIAS_CONV = Workload("blog-bias-conv", inputs={"image": IMAGE, "bias": IMAGE, "weight": WEIGHT},
                     outputs={"output": OUTPUT}, reference=_bias_conv)
BIAS_CONV_VIA_DDR = Workload("blog-bias-conv-ddr", inputs={"image": IMAGE, "bias": IMAGE, "weight": WEIGHT},
                             outputs={"output": OUTPUT}, intermediates={"mid": IMAGE}, reference=_bias_conv)


CORE_OC = 24  # the TensorCore's parallel limits (the blog's constants; dsasim's TensorCore reads the hardware)
CORE_IC = 16


def blog_segments(s: Session) -> partial[Segments]:
    """`Segments` as the blog's: clamped normally, full-sized last tile under `--blog-quirks` (see module doc)."""
    return partial(Segments, clamp=not s.blog_quirks)


def _conv_infer(image: TracedArray, weight: TracedArray) -> Conv2dBoundsInfer:
    """The blog's `Infer` for the 1x1 conv from image to weight's channels (its bias/test arguments do not
    change bounds and are dropped; its `intput_shape` is spelled `input_shape` here)."""
    return Conv2dBoundsInfer(in_channels=image.shape[1], out_channels=weight.shape[0], kernel_size=1, groups=1,
                             padding=(0, 0), stride=(1, 1), dilation=(1, 1), input_shape=image.shape)


def demo1(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """1. The simplest conv: one output element per scope, output += sum(image x weight) on the vector unit."""
    Segments = blog_segments(s)
    Infer = _conv_infer(image, weight)
    vector = VectorUnit(s)
    (B, OC, OH, OW) = output.shape
    (tileB, tileOC, tileOH, tileOW) = (1, 1, 1, 1)
    for b in Segments(0, B, tileB):
        for oc in Segments(0, OC, tileOC):
            for oh in Segments(0, OH, tileOH):
                for ow in Segments(0, OW, tileOW):
                    with GlobalHierarchy(s, "pixel"):
                        outputTile = output[b, oc, oh, ow]
                        imageTile = image[Infer.get_input_segment(b, oc, oh, ow)]
                        weightTile = weight[Infer.get_w_segment(oc)]
                        # blog: outputTile += np.sum((imageTile * weightTile), keepdims=True)
                        outputTile += vector.dot(imageTile, weightTile)


def demo2(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """2. On the TensorCore: a scope per output tile of 24 channels x 2 rows x all columns."""
    Segments = blog_segments(s)
    Infer = _conv_infer(image, weight)
    tc = TensorCore(s)
    (B, OC, OH, OW) = output.shape
    for b in Segments(0, B, 1):
        for oc in Segments(0, OC, CORE_OC):
            for oh in Segments(0, OH, 2):
                for ow in Segments(0, OW, OW):
                    with GlobalHierarchy(s, "tile"):
                        outputTile = output[b, oc, oh, ow]
                        imageTile = image[Infer.get_input_segment(b, oc, oh, ow)]
                        weightTile = weight[Infer.get_w_segment(oc)]
                        outputTile += tc.conv2d(imageTile, weightTile)


def demo3_1(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """3.1 All weights staged outside the OC loop, per batch; every output tile stays in that scope."""
    Segments = blog_segments(s)
    Infer = _conv_infer(image, weight)
    tc = TensorCore(s)
    (B, OC, OH, OW) = output.shape
    for b in Segments(0, B, 1):
        with GlobalHierarchy(s, "batch"):
            reuse = False
            weightTile = weight[Infer.get_w_segment(slice(0, OC))]
            for oc in Segments(0, OC, CORE_OC):
                for oh in Segments(0, OH, 2):
                    for ow in Segments(0, OW, OW):
                        outputTile = output[b, oc, oh, ow]
                        imageTile = image[Infer.get_input_segment(b, oc, oh, ow), reuse]
                        if not reuse:
                            reuse = True
                        weightSubTile = weightTile[oc]
                        outputTile += tc.conv2d(imageTile, weightSubTile)


def demo3_2(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """3.2 Weights staged inside the OC loop: a scope per 24 output channels, the image through one buffer."""
    Segments = blog_segments(s)
    Infer = _conv_infer(image, weight)
    tc = TensorCore(s)
    (B, OC, OH, OW) = output.shape
    for b in Segments(0, B, 1):
        for oc in Segments(0, OC, CORE_OC):
            with GlobalHierarchy(s, "oc"):
                reuse = False
                weightTile = weight[Infer.get_w_segment(oc)]
                for oh in Segments(0, OH, 2):
                    for ow in Segments(0, OW, OW):
                        outputTile = output[b, oc, oh, ow]
                        imageTile = image[Infer.get_input_segment(b, oc, oh, ow), reuse]
                        if not reuse:
                            reuse = True
                        outputTile += tc.conv2d(imageTile, weightTile)


def demo3_3(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """3.3 A new tiling dimension (IC): a scope per 8-channel output plane, 16-channel slices reused.

    The blog's `prefix` argument only labelled its print; demo5-1 calls this body on `mid`."""
    Segments = blog_segments(s)
    Infer = _conv_infer(image, weight)
    tc = TensorCore(s)
    (B, OC, OH, OW) = output.shape
    IC = image.shape[1]
    for b in Segments(0, B, 1):
        for oc in Segments(0, OC, 8):
            for oh in Segments(0, OH, OH):
                for ow in Segments(0, OW, OW):
                    with GlobalHierarchy(s, "out-tile"):
                        reuse = False
                        outputTile = output[b, oc, oh, ow]
                        for ic in Segments(0, IC, CORE_IC):
                            wSeg = Infer.get_w_segment(oc)
                            wSeg[1] = ic  # add slice in ic
                            weightTile = weight[wSeg, reuse]
                            imageSeg = Infer.get_input_segment(b, oc, oh, ow)
                            imageSeg[1] = ic  # add slice in ic
                            imageTile = image[imageSeg, reuse]
                            outputTile += tc.conv2d(imageTile, weightTile)
                            if reuse is False:
                                reuse = True  # reuse same buffer.


def demo4(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """4. Stream the input: the whole image staged per batch; output and weight tiles through reused buffers."""
    Segments = blog_segments(s)
    Infer = _conv_infer(image, weight)
    tc = TensorCore(s)
    (B, OC, OH, OW) = output.shape
    IC = image.shape[1]
    for b in Segments(0, B, 1):
        with GlobalHierarchy(s, "batch"):
            reuse = False
            imageTile = image[Infer.get_input_segment(b, slice(0, OC), slice(0, OH), slice(0, OW))]
            for oc in Segments(0, OC, 8):
                for oh in Segments(0, OH, OH):
                    for ow in Segments(0, OW, OW):
                        outputTile = output[(b, oc, oh, ow), reuse]
                        for ic in Segments(0, IC, CORE_IC):
                            wSeg = Infer.get_w_segment(oc)
                            wSeg[1] = ic  # add slice in ic
                            weightTile = weight[wSeg, reuse]
                            outputTile += tc.conv2d(imageTile[:, ic, :, :], weightTile)
                            if reuse is False:
                                reuse = True  # reuse same buffer.


def demo5_1(s: Session, image: TracedArray, bias: TracedArray, weight: TracedArray, mid: TracedArray,
            output: TracedArray) -> None:
    """5.1 Each operator alone: mid = image + bias through DDR (a scope per 8-channel plane), then demo3-3."""
    Segments = blog_segments(s)
    vector = VectorUnit(s)
    # binary add
    (B, C, H, W) = image.shape
    for b in Segments(0, B, 1):
        for c in Segments(0, C, 8):
            for h in Segments(0, H, H):
                for w in Segments(0, W, W):
                    with GlobalHierarchy(s, "add"):
                        imageTile = image[b, c, h, w]
                        biasTile = bias[b, c, h, w]
                        midTile = mid[b, c, h, w]
                        midTile += vector.add(imageTile, biasTile)  # blog: midTile += imageTile + biasTile
    # blog: demo3_3(mid._array, weightArr, ...) wraps mid's array in a new TarcedArray; here mid is that tensor
    demo3_3(s, mid, weight, output)


def demo5_2(s: Session, image: TracedArray, bias: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """5.2 The fused operators: demo3-3 with image + bias computed on chip per 16-channel slice."""
    Segments = blog_segments(s)
    Infer = _conv_infer(image, weight)
    tc = TensorCore(s)
    vector = VectorUnit(s)
    (B, OC, OH, OW) = output.shape
    IC = image.shape[1]
    for b in Segments(0, B, 1):
        for oc in Segments(0, OC, 8):
            for oh in Segments(0, OH, OH):
                for ow in Segments(0, OW, OW):
                    with GlobalHierarchy(s, "out-tile"):
                        reuse = False
                        outputTile = output[b, oc, oh, ow]
                        for ic in Segments(0, IC, CORE_IC):
                            wSeg = Infer.get_w_segment(oc)
                            wSeg[1] = ic  # add slice in ic
                            weightTile = weight[wSeg, reuse]
                            imageSeg = Infer.get_input_segment(b, oc, oh, ow)
                            imageSeg[1] = ic  # add slice in ic
                            imageTile = image[imageSeg, reuse]
                            biasTile = bias[imageSeg, reuse]
                            # blog: TensorCore(imageTile + biasTile, weightTile); the sum is an on-chip buffer,
                            # made explicit here (a scratch tile through one reused buffer, never in DDR)
                            summed = s.scratch("image+bias", imageTile.shape, reuse=True)
                            summed.assign(vector.add(imageTile, biasTile))
                            outputTile += tc.conv2d(summed, weightTile)
                            if reuse is False:
                                reuse = True  # reuse same buffer.


def better_weights_resident(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray,
                            rows: int = 2) -> None:
    """All weights resident, the image streamed once in `rows`-row slabs: compulsory traffic."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    oc_ = weight.shape[0]
    with GlobalHierarchy(s, "weights"):
        weight[:, :]
        for b in Segments(0, b_, 1):
            for oh in Segments(0, h_, rows):
                with GlobalHierarchy(s, "slab"):
                    img = image[b, :, oh, :]
                    out = output[b, :, oh, :]
                    for oc in Segments(0, oc_, tc.oc_block):
                        out[:, oc] += tc.conv2d(img, weight[oc, :])


def better_output_stationary(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray,
                             rows: int = 12, ic_tile: int = 16) -> None:
    """For 4-byte words: every output channel of a `rows`-row slab stays on chip while 16-channel slices of
    the image and weights stream past it; the image is read once, the weights once per slab."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for oh in Segments(0, h_, rows):
            with GlobalHierarchy(s, "slab"):
                out = output[b, :, oh, :]
                for ic in Segments(0, c_, ic_tile):
                    out += tc.conv2d(image[b, ic, oh, :, True], weight[:, ic, True])


# demo6's shapes are not in the post. These reproduce both printed counts, and are the only ones that do with a
# 224-column ImageNet-sized image, the blog's 48-row x all-column tiles and 16-channel output tiles (channel
# counts in whole tiles): each count is the
# weights (staged whole) plus the first output tile and the first input tile of each conv (later accesses reuse):
#   demo6   = C0*C1 + C1*C2 + (16 + C0)*48*W + (16 + C1)*48*W = 722,528
#   demo6-1 = C0*C1 + C1*C2 + (16 + C0)*48*W                  = 206,432
# The difference is (16 + C1)*48*W = 516,096 -> C1 = 32 at W = 224; then 32*C0 + 32*C2 + 10,752*C0 = 34,400,
# whose solutions (C0, C2) are (1, 738), (2, 401) and (3, 64): only the last has C2 in whole 16-channel output
# tiles (like C1), and C0 = 3 is an RGB image (tests/test_blog_demos.py solves this).
CHAIN_IMAGE, CHAIN_MID, CHAIN_OUT = (1, 3, 224, 224), (1, 32, 224, 224), (1, 64, 224, 224)


def _two_convs(image: torch.Tensor, weight1: torch.Tensor, weight2: torch.Tensor) -> dict[str, torch.Tensor]:
    import torch.nn.functional as F

    return {"output": F.conv2d(F.conv2d(image, weight1), weight2)}


TWO_CONVS = Workload("blog-two-convs", inputs={"image": CHAIN_IMAGE, "weight1": (32, 3, 1, 1),
                                               "weight2": (64, 32, 1, 1)},
                     outputs={"output": CHAIN_OUT}, reference=_two_convs)
TWO_CONVS_VIA_DDR = Workload("blog-two-convs-ddr", inputs=TWO_CONVS.inputs, outputs=TWO_CONVS.outputs,
                             intermediates={"mid": CHAIN_MID}, reference=_two_convs)


def demo6(s: Session, image: TracedArray, weight1: TracedArray, weight2: TracedArray, mid: TracedArray,
          output: TracedArray) -> None:
    """6.1 Two 1x1 convs one after the other through DDR, each with its weights staged whole."""
    Segments = blog_segments(s)
    tc = TensorCore(s)
    # blog: Infer1/Infer2 are arguments; tempOutput = TarcedArray(np.zeros(Infer2.in_shape)) is `mid` here
    Infer1, Infer2 = _conv_infer(image, weight1), _conv_infer(mid, weight2)
    tempOutput = mid
    (B, OC, OH, OW) = Infer2.input_shape  # blog: Infer2.in_shape
    with GlobalHierarchy(s, "conv1"):
        reuse = False
        weight1Tile = weight1[:, :, :, :]
        for b in Segments(0, B, 1):
            for oc in Segments(0, OC, 16):
                for oh in Segments(0, OH, 48):
                    for ow in Segments(0, OW, OW):
                        outputTile = tempOutput[(b, oc, oh, ow), reuse]
                        imageSeg = Infer1.get_input_segment(b, oc, oh, ow)
                        imageTile = image[imageSeg, reuse]
                        outputTile += tc.conv2d(imageTile, weight1Tile[oc])
                        if reuse is False:
                            reuse = True  # reuse same buffer.

    (B, OC, OH, OW) = output.shape
    with GlobalHierarchy(s, "conv2"):
        reuse = False
        weight2Tile = weight2[:, :, :, :]
        for b in Segments(0, B, 1):
            for oc in Segments(0, OC, 16):
                for oh in Segments(0, OH, 48):
                    for ow in Segments(0, OW, OW):
                        outputTile = output[(b, oc, oh, ow), reuse]
                        imageSeg = Infer2.get_input_segment(b, oc, oh, ow)
                        imageTile = tempOutput[imageSeg, reuse]
                        outputTile += tc.conv2d(imageTile, weight2Tile[oc])
                        if reuse is False:
                            reuse = True  # reuse same buffer.


def demo6_1(s: Session, image: TracedArray, weight1: TracedArray, weight2: TracedArray,
            output: TracedArray) -> None:
    """6.2 The two convs fused: conv1's output for conv2's input tile is computed on chip, never stored."""
    Segments = blog_segments(s)
    tc = TensorCore(s)
    Infer1 = _conv_infer(image, weight1)
    Infer2 = Conv2dBoundsInfer(in_channels=weight1.shape[0], out_channels=weight2.shape[0], kernel_size=1,
                               input_shape=Infer1.output_shape)
    (B, OC, OH, OW) = output.shape
    with GlobalHierarchy(s, "weights"):
        reuse = False
        weight1Tile = weight1[:, :, :, :]
        weight2Tile = weight2[:, :, :, :]
        for b in Segments(0, B, 1):
            for oc in Segments(0, OC, 16):
                for oh in Segments(0, OH, 48):
                    for ow in Segments(0, OW, OW):
                        outputTile = output[(b, oc, oh, ow), reuse]
                        imageSeg2 = Infer2.get_input_segment(b, oc, oh, ow)
                        imageSeg1 = Infer1.get_input_segment(
                            imageSeg2[0], imageSeg2[1], imageSeg2[2], imageSeg2[3])
                        imageTile1 = image[imageSeg1, reuse]
                        # blog: imageTile2 = TensorCore(imageTile1, weight1Tile), a numpy array its SRAM
                        # accounting never saw; here it is an on-chip scratch tile through one reused buffer
                        imageTile2 = s.scratch("conv1-out", (1, weight1.shape[0]) + imageTile1.shape[2:],
                                               reuse=True)
                        imageTile2.assign(tc.conv2d(imageTile1, weight1Tile))
                        outputTile += tc.conv2d(imageTile2, weight2Tile[oc])
                        if reuse is False:
                            reuse = True  # reuse same buffer.


# What the blog printed as "total loaded" (elements). demo3-2 and demo5-1 include the count of the demo before
# them, which failed (SRAM overflow) before its `GlobalHierarchy.Reset()`; demo3-1 and demo4 printed no count.
DEMO3_1 = Schedule("demo3-1", CONV, demo3_1, "all weights resident, outputs accumulate in one scope")
DEMO4 = Schedule("demo4", CONV, demo4, "the whole image resident")
SCHEDULES = [
    Schedule("demo1", CONV, demo1, "one output element per scope (vector dot product)",
             blog_printed=6_578_274_304),
    Schedule("demo2", CONV, demo2, "a scope per 24x2x56 output tile", blog_printed=179_651_584),
    DEMO3_1,
    Schedule("demo3-2", CONV, demo3_2, "a scope per 24 output channels, image through a reused buffer",
             blog_printed=9_586_432, blog_counter_follows=DEMO3_1),
    Schedule("demo3-3", CONV, demo3_3, "output-stationary 8x56x56, 16-channel slices reused",
             blog_printed=4_825_088),
    DEMO4,
    Schedule("demo5-1", BIAS_CONV_VIA_DDR, demo5_1, "image + bias through DDR, then demo3-3",
             blog_printed=30_515_200, blog_counter_follows=DEMO4),
    Schedule("demo5-2", BIAS_CONV, demo5_2, "demo3-3 with image + bias fused on chip", blog_printed=8_036_352),
    Schedule("demo6", TWO_CONVS_VIA_DDR, demo6, "two convs through DDR, weights resident", blog_printed=722_528),
    Schedule("demo6-1", TWO_CONVS, demo6_1, "two convs fused on chip", blog_printed=206_432),
    Schedule("weights-resident", CONV, better_weights_resident,
             "better: weights resident, image streamed once (compulsory traffic)"),
    Schedule("output-stationary-fp32", CONV, better_output_stationary,
             "better for 4-byte words: all output channels of a 12-row slab resident", hardware="blog-fp32"),
]
