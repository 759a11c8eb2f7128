"""traffic_by_scope attributes every byte to the scope whose instance moved it (derived by hand)."""

import dataclasses


from dsasim import GlobalHierarchy, Session, TensorCore, preset
from dsasim.cli.demo import format_traffic_by_scope
from dsasim.view.report import traffic_by_scope


def test_bytes_land_in_the_scope_that_moved_them():
    s = Session(dataclasses.replace(preset("blog"), sram_bytes=1 << 16, word_bytes=2), numeric=False)
    x = s.input("x", (1, 16, 4, 6))
    w = s.input("w", (24, 16, 1, 1))
    y = s.output("y", (1, 24, 4, 6))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "weights"):
        w[:, :]                                     # 24*16 elements * 2 B = 768 B, once
        for row in range(4):
            with GlobalHierarchy(s, "row"):
                out = y[0, :, row, :]               # zero-open, stored at exit: 24*6*2 = 288 B per row
                out += tc.conv2d(x[0, :, row, :], w[:, :])   # x: 16*6*2 = 192 B per row; w[:, :] is a hit
    rows = {(r.scope, r.tensor): r for r in traffic_by_scope(s.finish())}
    assert rows[("weights", "w")].loaded_bytes == 768 and rows[("weights", "w")].instances == 1
    assert rows[("weights/row", "x")].loaded_bytes == 4 * 192 and rows[("weights/row", "x")].loads == 4
    assert rows[("weights/row", "y")].stored_bytes == 4 * 288 and rows[("weights/row", "y")].stores == 4
    assert rows[("weights/row", "w")].hits == 4 and rows[("weights/row", "w")].loaded_bytes == 0
    assert rows[("weights/row", "x")].instances == 4
    total_loaded = sum(r.loaded_bytes for r in rows.values())
    assert total_loaded == s.counters.loaded_bytes
    assert "weights/row" in format_traffic_by_scope(list(rows.values()))
