"""Many searches, all over targets (`Target`: a layer, a layer on levels, a chain; one adapter per kind): SRAM sweeps,
whole networks, dynamic shapes, and the executors that run them."""
