"""Many searches: SRAM sweeps, whole networks, dynamic shapes, and the executors that run them."""
