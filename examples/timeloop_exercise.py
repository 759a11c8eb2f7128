"""Timeloop's tutorial exercise 01, weight-stationary mapping, read from its own YAML files and run through dsasim.

    python examples/timeloop_exercise.py     # prints what examples/timeloop_exercise.out holds

The same as, from the repository root:

    dsasim timeloop tests/data/timeloop/conv1d.prob.yaml tests/data/timeloop/2level.arch.yaml \\
        tests/data/timeloop/conv1d-2level-ws.map.yaml \\
        --accelergy tests/data/accelergy/conv1d_2level.ERT_summary.yaml tests/data/accelergy/conv1d_2level.ART_summary.yaml

Timeloop's published counts for this mapping (its timeloop-model.stats.txt) are the "reads, fills, updates"
columns, but for the Inputs' 48 fills (Timeloop: 18), the rule named under the table.
"""

import sys
from pathlib import Path

from dsasim.cli import main

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
TIMELOOP, ACCELERGY = DATA / "timeloop", DATA / "accelergy"
sys.exit(main(["timeloop", str(TIMELOOP / "conv1d.prob.yaml"), str(TIMELOOP / "2level.arch.yaml"),
               str(TIMELOOP / "conv1d-2level-ws.map.yaml"), "--accelergy",
               str(ACCELERGY / "conv1d_2level.ERT_summary.yaml"), str(ACCELERGY / "conv1d_2level.ART_summary.yaml")]))
