"""How a problem is scheduled: loop nests as data."""
