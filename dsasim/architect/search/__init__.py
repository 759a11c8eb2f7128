"""Which schedule is best: objectives, the searches of layers, levels and chains, their spaces."""
