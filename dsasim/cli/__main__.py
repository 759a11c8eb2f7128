"""`python -m dsasim.cli ...`: the same as the `dsasim` console script."""

import sys

from dsasim.cli import main

sys.exit(main())
