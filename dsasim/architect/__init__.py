"""The architects' loop: what the best schedule could do, in five steps that are the flow (each imports only the
earlier ones): `problems` (what is computed) <- `nests` (how it is scheduled) <- `model` (closed forms: traffic,
cycles, bounds) <- `search` (which schedule is best, per kind) <- `studies` (a `Target` searched, swept or evaluated in a
network; shapes)."""
