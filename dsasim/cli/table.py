"""The command line's table formatter, which lives in the view layer (`dsasim.view.table`) so that kernels print
the same tables without importing the command line."""

from dsasim.view.table import cell, format_table

__all__ = ["cell", "format_table"]
