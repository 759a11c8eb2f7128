"""The hardware's cost rules (`dsasim.cost`), each checked against a hand derivation, on Python ints and numpy
arrays alike, and against the timing simulator where it charges the same rule."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dsasim.cost import (ISSUE_CYCLES, Port, band_pipeline_cycles, busy_cycles, ddr_port, dma_cycles, level_port,
                         overlapped_cycles, padded_macs, pipeline_estimate, port_cycles, tensorcore_cycles,
                         tile_blocks, transfer_cycles, vector_cycles)
from dsasim.hardware import MemoryLevel, preset

SHARED = Port(setup_cycles=64, bytes_per_cycle=32.0, shared_load_store=True)
SPLIT = Port(setup_cycles=64, bytes_per_cycle=32.0, shared_load_store=False)


def test_a_transfer_is_setup_plus_the_ceiling_of_bytes_over_bandwidth():
    # 100 B at 32 B/cycle: ceil(3.125) = 4 cycles of data, + 64 setup = 68; 64 B: exactly 2, + 64 = 66
    assert transfer_cycles(SHARED, 100) == 68 and transfer_cycles(SHARED, 64) == 66
    assert transfer_cycles(SHARED, np.array([100, 64, 0])).tolist() == [68, 66, 64]


def test_busy_time_rounds_the_bytes_once_or_keeps_them_fractional():
    # 3 transfers of 100 B in all: 3 x 64 setup + ceil(100 / 32) = 192 + 4 = 196 (whole), 192 + 3.125 (fractional)
    assert busy_cycles(SHARED, 3, 100) == 196
    assert busy_cycles(SHARED, 3, 100, whole=False) == 195.125
    assert busy_cycles(SHARED, np.array([3, 0]), np.array([100, 32])).tolist() == [196, 1]


def test_the_port_rule_adds_on_a_shared_port_and_takes_the_larger_on_split_ports():
    assert port_cycles(SHARED, 300, 200) == 500 and port_cycles(SPLIT, 300, 200) == 300
    assert port_cycles(SPLIT, np.array([1, 5]), np.array([4, 2])).tolist() == [4, 5]
    # loads: 2 transfers, 96 B -> 128 + 3 = 131; stores: 1 transfer, 32 B -> 64 + 1 = 65
    # shared: one port carries all 3 transfers and 128 B: 192 + 4 = 196; split: max(131, 65) = 131
    assert dma_cycles(SHARED, 2, 96, 1, 32) == 196 and dma_cycles(SPLIT, 2, 96, 1, 32) == 131


def test_the_ports_come_from_the_hardware_and_its_levels():
    hw = replace(preset("blog"), dram_shared_load_store=False)
    assert ddr_port(hw) == Port(hw.dma_setup_cycles, hw.dram_bytes_per_cycle, False)
    lv = MemoryLevel("L1w", capacity_bytes=1024, bytes_per_cycle=128.0, holds=("weight",), setup_cycles=4)
    assert level_port(lv) == Port(4, 128.0, True)
    with pytest.raises(ValueError, match="bytes_per_cycle"):
        Port(1, 0.0)
    with pytest.raises(ValueError, match="setup_cycles"):
        Port(-1, 1.0)


def test_tensorcore_and_vector_cycles():
    hw = preset("blog")  # 16 input x 24 output channels per cycle
    assert (hw.tensorcore_in_channels, hw.tensorcore_out_channels) == (16, 24)
    # 10 pixels x 9 taps x 1 group x ceil(40 / 16) = 3 x ceil(50 / 24) = 3: 810;
    # 2 groups of 20 -> 24 channels: 10 x 9 x 2 x ceil(20 / 16) = 2 x ceil(24 / 24) = 1: 360
    assert tensorcore_cycles(hw, 10, 9, 1, 40, 50) == 810 and tensorcore_cycles(hw, 10, 9, 2, 20, 24) == 360
    assert padded_macs(hw, 7) == 7 * 16 * 24
    assert vector_cycles(129, 64) == 3 and vector_cycles(np.array([128, 1]), 64).tolist() == [2, 1]


def test_tile_blocks_sums_the_ceiling_over_full_and_ragged_tiles():
    # extent 50, tile 16, block 16: tiles 16, 16, 16, 2 -> 1 + 1 + 1 + 1 = 4; tile 20: 20, 20, 10 -> 2 + 2 + 1 = 5
    assert tile_blocks(50, 16, 16) == 4 and tile_blocks(50, 20, 16) == 5
    assert tile_blocks(50, np.array([16, 20, 50]), 16).tolist() == [4, 5, 4]
    assert tile_blocks(50, 7, 0) == 50  # a dimension that feeds no block: the sum of the tile lengths
    big = 10 ** 30  # Python ints stay exact beyond int64
    assert tile_blocks(big, big // 2, 1) == big


def test_the_estimators():
    assert overlapped_cycles(3, 9, 4) == 9
    assert overlapped_cycles(np.array([1, 8]), np.array([5, 2])).tolist() == [5, 8]
    # max(100 + 20, 90) + 7 fill + ISSUE_CYCLES x 5 iterations
    assert pipeline_estimate(100, 20, 90, 7, 5) == 127 + 5 * ISSUE_CYCLES
    # head 10, tail 5; engines 50 and 30; DDR 100 of which 85 outside the head and tail: 10 + 85 + 5
    assert band_pipeline_cycles(10, 5, [50, 30], 100) == 100
    assert band_pipeline_cycles(10, 5, [50, 30], 40) == 65  # compute bound: 10 + 50 + 5
