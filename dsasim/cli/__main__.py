"""`python -m dsasim.cli ...`: the same as the `dsasim` console script."""

import sys

from . import main

sys.exit(main())
