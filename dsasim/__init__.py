"""dsasim: a trace-driven simulator for deep-learning accelerators (DSAs).

Write a tiled schedule as plain Python over traced DDR tensors and SRAM scopes; get real numbers checked
against torch, honest DDR traffic, and a trace for timing and analysis.
"""

from dsasim.traced.bounds import Conv2dBoundsInfer
from dsasim.errors import (CoherenceError, CrossSessionError, LevelError, ReadOnlyError, RegionError, ReuseError,
                           ScheduleError, SessionStateError, SramOverflowError, StaleTileError, UnfinishedError)
from dsasim.architect.analytic import analyze
from dsasim.hardware import PRESETS, Accelerator, load_hardware, preset
from dsasim.architect.loopnest import ConvProblem, LoopNest, MatmulProblem
from dsasim.architect.lower_bounds import lower_bound
from dsasim.traced.memory import Counters, GlobalHierarchy, Session, TensorTraffic, Tile, TracedArray
from dsasim.traced.schedule import RunResult, Schedule, Status, TensorReport, Workload, bind_tensors, run_schedule
from dsasim.architect.search import search
from dsasim.traced.segments import Segment, Segments
from dsasim.traced.tensorcore import TensorCore, VectorUnit
from dsasim.traced.trace import EventKind, Trace

__all__ = [
    "Accelerator", "CoherenceError", "Conv2dBoundsInfer", "ConvProblem", "Counters", "CrossSessionError",
    "EventKind", "GlobalHierarchy", "LevelError", "LoopNest", "MatmulProblem", "PRESETS", "ReadOnlyError",
    "RegionError", "ReuseError", "RunResult", "Schedule", "ScheduleError", "Segment", "Segments", "Session",
    "SessionStateError", "SramOverflowError", "StaleTileError", "Status", "TensorCore", "TensorReport",
    "TensorTraffic", "Tile", "Trace", "TracedArray", "UnfinishedError", "VectorUnit", "Workload", "analyze",
    "bind_tensors", "load_hardware", "lower_bound", "preset", "run_schedule", "search",
]
