"""How a person sees a run: reports from a trace, plots, Perfetto export."""
