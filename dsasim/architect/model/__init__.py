"""Closed forms: the traffic, cycles and SRAM of a nest and the lower bounds of any schedule; no search."""
