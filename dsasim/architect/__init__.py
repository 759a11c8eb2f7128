"""The architects' loop: what the best schedule could do (loop nests as data, the analytic model, lower bounds, the search and SRAM sweeps, layer specs)."""
