"""Your own schedule: a 1x1 conv, 64 -> 48 channels on an 8x8 image, weights on chip, output rows in pairs.

    python examples/user_schedule.py        # prints what examples/user_schedule.out holds

It prints the traffic the memory model counted (every DDR load and store, in bytes) and the timed run's summary.
"""

import numpy as np

from dsasim import GlobalHierarchy, Segments, Session, TensorCore, preset
from dsasim.timing import simulate

hardware = preset("blog")                             # 1536 KiB SRAM, 1-byte words, 16x24 TensorCore
s = Session(hardware)                                 # numeric=False: count-only, same counts, no data
image = s.input("image", np.ones((1, 64, 8, 8), np.float32))
weight = s.input("weight", np.ones((48, 64, 1, 1), np.float32))
output = s.output("output", (1, 48, 8, 8))
tc = TensorCore(s)
with GlobalHierarchy(s, "weights"):
    weight[:, :]                                      # all weights on chip: one DMA load
    for oh in Segments(0, 8, 2):
        with GlobalHierarchy(s, "rows"):              # buffers of this scope are freed (and stored) at its end
            out = output[0, :, oh, :]                 # never written before: opened as zeros, no DMA
            img = image[0, :, oh, :]                  # a DMA load
            for oc in Segments(0, 48, 24):
                out[:, oc] += tc.conv2d(img, weight[oc, :])   # weight[oc, :] is a hit
trace = s.finish()                                    # raises if a scope is open or an output element unstored
print(s.counters.loaded_bytes, s.counters.stored_bytes, s.counters.hits)   # 7168 3072 8
print(simulate(trace, hardware).summary())            # the same trace, timed
