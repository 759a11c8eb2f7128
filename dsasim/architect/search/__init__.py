"""Which schedule is best: objectives, the searches of layers, levels and chains, their spaces, and the `Target`
that names what is searched (one adapter per kind)."""
