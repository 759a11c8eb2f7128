"""ResNet-50 layer schedules: res2a_branch2b, the 3x3 conv 64 -> 64 (stride 1, pad 1) on a 56x56 image.

The schedule keeps all weights resident (64 x 64 x 3 x 3 = 36 KiB at 1-byte words) and streams the image in
slabs of output rows: for each slab, `Conv2dBoundsInfer` gives the input rows it needs (the halo rows above
and below, clipped at the borders) and `padding_for` the zero rows/columns to add on chip, so padding is never
loaded. The slab scope is 2-way buffered: the next slab's input is loaded while the TensorCore works on this
one, and the previous slab's output is stored meanwhile. The layer is compute-bound on the blog machine
(12 TensorCore steps per pixel per tap: ceil(64/16) x ceil(64/24)), so the schedule's only costs beyond the
TensorCore are the first weight and slab loads and the last store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsasim import Conv2dBoundsInfer, GlobalHierarchy, Schedule, Segment, Segments, Session, TensorCore, TracedArray, \
    Workload
from dsasim.kernels.conv_mapping import SCHEDULES as CONV_MAPPING_SCHEDULES

if TYPE_CHECKING:
    import torch

RES2A_INPUT = (1, 64, 56, 56)
RES2A_OUT_CHANNELS = 64


def conv3x3_workload(name: str, input_shape: tuple[int, int, int, int], out_channels: int,
                     padding: int = 1) -> Workload:
    """A 3x3, stride 1 convolution with zero padding: image (N, C, H, W), weight (OC, C, 3, 3) -> output."""
    conv = Conv2dBoundsInfer(input_shape[1], out_channels, 3, padding=padding, input_shape=input_shape)

    def reference(image: torch.Tensor, weight: torch.Tensor) -> dict[str, torch.Tensor]:
        import torch.nn.functional as F  # only a numeric run checks numbers: importing the schedule skips torch

        return {"output": F.conv2d(image, weight, padding=padding)}

    return Workload(name, inputs={"image": input_shape, "weight": conv.weight_shape},
                    outputs={"output": conv.output_shape}, reference=reference)


def row_slab_conv(padding: int = 1, rows: int = 4, ways: int = 2, *, buffers: int | None = None):
    """A schedule body: weights resident, `rows` output rows (all channels, full width) per `ways`-way buffered
    slab scope (`buffers` is an alias of `ways`, as in `GlobalHierarchy`)."""
    if buffers is not None:
        ways = buffers

    def body(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
        tc = TensorCore(s)
        oc_ = weight.shape[0]
        conv = Conv2dBoundsInfer(image.shape[1], oc_, (weight.shape[2], weight.shape[3]), padding=padding,
                                 input_shape=image.shape)
        n_, _, oh_, ow_ = conv.output_shape
        with GlobalHierarchy(s, "weights"):
            w = weight[:, :, :, :]
            for b in Segments(0, n_, 1):
                for oh in Segments(0, oh_, rows):
                    with GlobalHierarchy(s, "slab", ways=ways):
                        region = (b, Segment(0, oc_), oh, Segment(0, ow_))
                        x = image[conv.input_region(region)]
                        y = output[region]
                        y += tc.conv2d(x, w, padding=conv.padding_for(region))

    return body


RES2A = conv3x3_workload("resnet50-res2a-branch2b", RES2A_INPUT, RES2A_OUT_CHANNELS)

SCHEDULES = [
    Schedule("res2a-branch2b", RES2A, row_slab_conv(rows=4, ways=2),
             "ResNet-50 res2a_branch2b (3x3, 64->64, pad 1, 56x56): weights resident, 4-row slabs, 2-way"),
    # conv1 in the three conv mappings and res2a_branch2b as im2col in DDR and on chip (its direct mapping is the
    # schedule above): kernels/conv_mapping.py
    *CONV_MAPPING_SCHEDULES,
]
