"""The blog's demo schedules (demo1-demo6), ported literally, plus two schedules that beat them.

Shared setup: a 1x1 conv, 2048 -> 512 channels, input (1, 2048, 56, 56), stride 1, no padding. Loop order and
tile sizes follow the blog; `GlobalHierarchy` is the blog's SRAM scope; `arr[region, True]` is its reuse flag.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dsasim import GlobalHierarchy, Schedule, Segments, Session, TensorCore, TracedArray, VectorUnit, Workload

BATCH, IN_CHANNELS, OUT_CHANNELS, HEIGHT, WIDTH = 1, 2048, 512, 56, 56
IMAGE = (BATCH, IN_CHANNELS, HEIGHT, WIDTH)
WEIGHT = (OUT_CHANNELS, IN_CHANNELS, 1, 1)
OUTPUT = (BATCH, OUT_CHANNELS, HEIGHT, WIDTH)


def _conv(image: torch.Tensor, weight: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"output": F.conv2d(image, weight)}


def _bias_conv(image: torch.Tensor, bias: torch.Tensor, weight: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"output": F.conv2d(image + bias, weight)}


CONV = Workload("blog-conv", inputs={"image": IMAGE, "weight": WEIGHT}, outputs={"output": OUTPUT},
                reference=_conv)
BIAS_CONV = Workload("blog-bias-conv", inputs={"image": IMAGE, "bias": IMAGE, "weight": WEIGHT},
                     outputs={"output": OUTPUT}, reference=_bias_conv)
BIAS_CONV_VIA_DDR = Workload("blog-bias-conv-ddr", inputs={"image": IMAGE, "bias": IMAGE, "weight": WEIGHT},
                             outputs={"output": OUTPUT}, intermediates={"mid": IMAGE}, reference=_bias_conv)


def demo1(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """One output element per scope: output += sum(image x weight) on the vector unit."""
    vec = VectorUnit(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for oc in Segments(0, weight.shape[0], 1):
            for oh in Segments(0, h_, 1):
                for ow in Segments(0, w_, 1):
                    with GlobalHierarchy(s, "pixel"):
                        out = output[b, oc, oh, ow]
                        out += vec.dot(image[b, :, oh, ow], weight[oc, :])


def demo2(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """A scope per output tile (24 channels x 2 rows x 56 columns) on the TensorCore."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for oc in Segments(0, weight.shape[0], 24):
            for oh in Segments(0, h_, 2):
                for ow in Segments(0, w_, 56):
                    with GlobalHierarchy(s, "tile"):
                        out = output[b, oc, oh, ow]
                        out += tc.conv2d(image[b, :, oh, ow], weight[oc, :])


def demo3_1(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """All weights resident per batch; output tiles accumulate in the same scope (reuse flag on the image)."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    reuse = False
    for b in Segments(0, b_, 1):
        with GlobalHierarchy(s, "batch"):
            weight[:, :]
            for oc in Segments(0, weight.shape[0], 24):
                for oh in Segments(0, h_, 2):
                    for ow in Segments(0, w_, 56):
                        out = output[b, oc, oh, ow]
                        img = image[b, :, oh, ow, reuse]
                        reuse = True
                        out += tc.conv2d(img, weight[oc, :])


def demo3_2(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """A scope per 24 output channels holding their weights; image tiles through one reused buffer."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for oc in Segments(0, weight.shape[0], 24):
            with GlobalHierarchy(s, "oc"):
                w = weight[oc, :]
                for oh in Segments(0, h_, 2):
                    for ow in Segments(0, w_, 56):
                        out = output[b, oc, oh, ow]
                        out += tc.conv2d(image[b, :, oh, ow, True], w)


def demo3_3(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """Output-stationary: a scope per 8-channel output plane; 16-channel image and weight slices reused."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for oc in Segments(0, weight.shape[0], 8):
            for oh in Segments(0, h_, 56):
                for ow in Segments(0, w_, 56):
                    with GlobalHierarchy(s, "out-tile"):
                        out = output[b, oc, oh, ow]
                        for ic in Segments(0, c_, 16):
                            w = weight[oc, ic, True]
                            out += tc.conv2d(image[b, ic, oh, ow, True], w)


def demo4(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """The whole image resident per batch; output and weight tiles through reused buffers."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        with GlobalHierarchy(s, "batch"):
            image[b, :, :, :]
            for oc in Segments(0, weight.shape[0], 8):
                for oh in Segments(0, h_, 56):
                    for ow in Segments(0, w_, 56):
                        out = output[b, oc, oh, ow, True]
                        for ic in Segments(0, c_, 16):
                            w = weight[oc, ic, True]
                            out += tc.conv2d(image[b, ic, oh, ow], w)


def demo5_1(s: Session, image: TracedArray, bias: TracedArray, weight: TracedArray, mid: TracedArray,
            output: TracedArray) -> None:
    """mid = image + bias through DDR (a scope per 8x56x56 tile), then demo3-3 on mid."""
    vec = VectorUnit(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for c in Segments(0, c_, 8):
            for h in Segments(0, h_, 56):
                for w in Segments(0, w_, 56):
                    with GlobalHierarchy(s, "add"):
                        m = mid[b, c, h, w]
                        m.assign(vec.add(image[b, c, h, w], bias[b, c, h, w]))
    demo3_3(s, mid, weight, output)


def demo5_2(s: Session, image: TracedArray, bias: TracedArray, weight: TracedArray, output: TracedArray) -> None:
    """demo3-3 with image + bias computed on chip per 16-channel slice (bias through a reused buffer)."""
    tc = TensorCore(s)
    vec = VectorUnit(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for oc in Segments(0, weight.shape[0], 8):
            for oh in Segments(0, h_, 56):
                for ow in Segments(0, w_, 56):
                    with GlobalHierarchy(s, "out-tile"):
                        out = output[b, oc, oh, ow]
                        for ic in Segments(0, c_, 16):
                            w = weight[oc, ic, True]
                            img = image[b, ic, oh, ow, True]
                            summed = s.scratch("image+bias", img.shape, reuse=True)
                            summed.assign(vec.add(img, bias[b, ic, oh, ow, True]))
                            out += tc.conv2d(summed, w)


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


CHAIN_IMAGE, CHAIN_MID, CHAIN_OUT = (1, 3, 224, 224), (1, 32, 224, 224), (1, 64, 224, 224)


def _two_convs(image: torch.Tensor, weight1: torch.Tensor, weight2: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"output": F.conv2d(F.conv2d(image, weight1), weight2)}


TWO_CONVS = Workload("blog-two-convs", inputs={"image": CHAIN_IMAGE, "weight1": (32, 3, 1, 1),
                                               "weight2": (64, 32, 1, 1)},
                     outputs={"output": CHAIN_OUT}, reference=_two_convs)
TWO_CONVS_VIA_DDR = Workload("blog-two-convs-ddr", inputs=TWO_CONVS.inputs, outputs=TWO_CONVS.outputs,
                             intermediates={"mid": CHAIN_MID}, reference=_two_convs)


def _conv_stage(s: Session, tc: TensorCore, x: TracedArray, weight: TracedArray, y: TracedArray) -> None:
    """demo6's loop for one conv: its weights resident; output and input tiles through reused buffers."""
    b_, c_, h_, w_ = x.shape
    with GlobalHierarchy(s, "weights"):
        weight[:, :]
        for b in Segments(0, b_, 1):
            for oc in Segments(0, weight.shape[0], 16):
                for oh in Segments(0, h_, 48):
                    for ow in Segments(0, w_, 224):
                        out = y[b, oc, oh, ow, True]
                        out += tc.conv2d(x[b, :, oh, ow, True], weight[oc, :])


def demo6(s: Session, image: TracedArray, weight1: TracedArray, weight2: TracedArray, mid: TracedArray,
          output: TracedArray) -> None:
    """Two 1x1 convs (3 -> 32 -> 64) one after the other through DDR."""
    tc = TensorCore(s)
    _conv_stage(s, tc, image, weight1, mid)
    _conv_stage(s, tc, mid, weight2, output)


def demo6_1(s: Session, image: TracedArray, weight1: TracedArray, weight2: TracedArray,
            output: TracedArray) -> None:
    """The same two convs fused: conv1's output for conv2's input tile is computed on chip, never stored."""
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    with GlobalHierarchy(s, "weights"):
        weight1[:, :]
        weight2[:, :]
        for b in Segments(0, b_, 1):
            for oc in Segments(0, weight2.shape[0], 16):
                for oh in Segments(0, h_, 48):
                    for ow in Segments(0, w_, 224):
                        out = output[b, oc, oh, ow, True]
                        x = image[b, :, oh, ow, True]
                        hidden = s.scratch("conv1-out", (1, weight1.shape[0], oh.size, ow.size), reuse=True)
                        hidden.assign(tc.conv2d(x, weight1[:, :]))
                        out += tc.conv2d(hidden, weight2[oc, :])


SCHEDULES = [
    Schedule("demo1", CONV, demo1, "one output element per scope (vector dot product)"),
    Schedule("demo2", CONV, demo2, "a scope per 24x2x56 output tile"),
    Schedule("demo3-1", CONV, demo3_1, "all weights resident, outputs accumulate in one scope"),
    Schedule("demo3-2", CONV, demo3_2, "a scope per 24 output channels, image through a reused buffer"),
    Schedule("demo3-3", CONV, demo3_3, "output-stationary 8x56x56, 16-channel slices reused"),
    Schedule("demo4", CONV, demo4, "the whole image resident"),
    Schedule("demo5-1", BIAS_CONV_VIA_DDR, demo5_1, "image + bias through DDR, then demo3-3"),
    Schedule("demo5-2", BIAS_CONV, demo5_2, "demo3-3 with image + bias fused on chip"),
    Schedule("demo6", TWO_CONVS_VIA_DDR, demo6, "two convs through DDR, weights resident"),
    Schedule("demo6-1", TWO_CONVS, demo6_1, "two convs fused on chip"),
    Schedule("weights-resident", CONV, better_weights_resident,
             "better: weights resident, image streamed once (compulsory traffic)"),
    Schedule("output-stationary-fp32", CONV, better_output_stationary,
             "better for 4-byte words: all output channels of a 12-row slab resident", hardware="blog-fp32"),
]
