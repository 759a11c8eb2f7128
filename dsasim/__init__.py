"""dsasim: a trace-driven simulator for deep-learning accelerators (DSAs).

Write a tiled schedule as plain Python over traced DDR tensors and SRAM scopes; get real numbers checked
against torch, honest DDR traffic, and a trace for timing and analysis.
"""

from .bounds import Conv2dBoundsInfer
from .errors import (CoherenceError, CrossSessionError, ReadOnlyError, RegionError, ReuseError, ScheduleError,
                     SessionStateError, SramOverflowError, StaleTileError, UnfinishedError)
from .analytic import analyze
from .hardware import PRESETS, Accelerator, load_hardware, preset
from .loopnest import ConvProblem, LoopNest, MatmulProblem
from .lower_bounds import lower_bound
from .memory import Counters, GlobalHierarchy, Session, TensorTraffic, Tile, TracedArray
from .schedule import RunResult, Schedule, Status, TensorReport, Workload, bind_tensors, run_schedule
from .search import search
from .segments import Segment, Segments
from .tensorcore import TensorCore, VectorUnit
from .trace import EventKind, Trace

__all__ = [
    "Accelerator", "CoherenceError", "Conv2dBoundsInfer", "ConvProblem", "Counters", "CrossSessionError",
    "EventKind", "GlobalHierarchy", "LoopNest", "MatmulProblem", "PRESETS", "ReadOnlyError", "RegionError",
    "ReuseError", "RunResult", "Schedule", "ScheduleError", "Segment", "Segments", "Session", "SessionStateError",
    "SramOverflowError", "StaleTileError", "Status", "TensorCore", "TensorReport", "TensorTraffic", "Tile", "Trace",
    "TracedArray", "UnfinishedError", "VectorUnit", "Workload", "analyze", "bind_tensors", "load_hardware",
    "lower_bound", "preset", "run_schedule", "search",
]
