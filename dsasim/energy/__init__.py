"""Energy and area: what a run's accesses and operations cost (access counts, the hardware's energy and area
figures with their sources, the SRAM scaling rule, and the accounting that combines them)."""
