"""What is computed: layers, chains of layers and their catalogue, as data (no schedule, no model)."""
