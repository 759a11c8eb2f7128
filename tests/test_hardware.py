"""The hardware spec: presets as data, validation with reasons, TOML loading with unknown keys rejected."""

import dataclasses

import pytest

from dsasim import PRESETS, Accelerator, load_hardware, preset


def test_blog_preset_is_the_blogs_machine():
    hw = preset("blog")
    assert hw.sram_bytes == 1536 * 1024
    assert hw.word_bytes == 1
    assert (hw.tensorcore_in_channels, hw.tensorcore_out_channels) == (16, 24)
    assert hw.clock_hz == 1e9
    assert hw.dram_bytes_per_cycle == 32 and hw.dram_shared_load_store
    assert hw.dma_setup_cycles == 64
    assert hw.vector_lanes == 32
    assert preset("blog-fp32") == dataclasses.replace(hw, name="blog-fp32", word_bytes=4)


def test_spec_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        preset("blog").sram_bytes = 1


@pytest.mark.parametrize("field, value, words", [
    ("sram_bytes", 0, "sram_bytes must be a positive integer"),
    ("sram_bytes", -5, "sram_bytes must be a positive integer"),
    ("word_bytes", 0, "word_bytes must be a positive integer"),
    ("word_bytes", 1.5, "word_bytes must be a positive integer"),
    ("tensorcore_in_channels", 0, "tensorcore_in_channels"),
    ("dram_bytes_per_cycle", 0, "zero bandwidth"),
    ("dram_bytes_per_cycle", -1.0, "dram_bytes_per_cycle must be a positive number"),
    ("clock_hz", 0, "clock_hz must be a positive number"),
    ("dma_setup_cycles", -1, "dma_setup_cycles must be an integer >= 0"),
    ("vector_lanes", True, "vector_lanes must be a positive integer"),
    ("dram_shared_load_store", "yes", "must be true or false"),
    ("word_bytes", 65, r"word_bytes must be a positive integer \(at most 64\)"),
    ("sram_bytes", (1 << 50) + 1, "at most 1,125,899,906,842,624"),
    ("clock_hz", float("inf"), "clock_hz must be a positive number from 1000 to 1e\\+13"),
    ("clock_hz", float("nan"), "clock_hz must be a positive number"),
    ("dram_bytes_per_cycle", 1e-300, "dram_bytes_per_cycle must be a positive number from 0.000976562"),
    ("name", "", "name must be a non-empty string"),
    ("name", ["blog"], "name must be a non-empty string"),
])
def test_nonsense_is_rejected_with_a_reason(field, value, words):
    with pytest.raises(ValueError, match=words):
        dataclasses.replace(preset("blog"), **{field: value})


def test_a_word_larger_than_the_sram_is_rejected():
    with pytest.raises(ValueError, match=r"word_bytes \(4\) exceeds sram_bytes \(2\); not even one element fits"):
        Accelerator("x", sram_bytes=2, word_bytes=4)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown hardware preset 'tpu'.*blog"):
        load_hardware("tpu")


def test_toml_overrides_a_preset(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text('base = "blog"\nsram_bytes = 65536\nword_bytes = 2\n')
    hw = load_hardware(str(path))
    assert hw == dataclasses.replace(PRESETS["blog"], name="small", sram_bytes=65536, word_bytes=2)


def test_toml_without_base_needs_the_sizes(tmp_path):
    path = tmp_path / "bare.toml"
    path.write_text("sram_bytes = 4096\n")
    with pytest.raises(ValueError, match=r"missing \['word_bytes'\]"):
        load_hardware(path)
    path.write_text("sram_bytes = 4096\nword_bytes = 2\ndram_bytes_per_cycle = 8.0\n")
    hw = load_hardware(path)
    assert (hw.sram_bytes, hw.word_bytes, hw.dram_bytes_per_cycle) == (4096, 2, 8.0)


def test_toml_unknown_key_is_an_error(tmp_path):
    path = tmp_path / "typo.toml"
    path.write_text('base = "blog"\nsram_byte = 1024\n')
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['sram_byte'\]"):
        load_hardware(path)


def test_toml_bad_value_and_bad_syntax_and_missing_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('base = "blog"\nsram_bytes = 0\n')
    with pytest.raises(ValueError, match="sram_bytes must be a positive integer"):
        load_hardware(path)
    path.write_text("sram_bytes = = 3\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_hardware(path)
    with pytest.raises(ValueError, match="does not exist"):
        load_hardware(tmp_path / "nowhere.toml")


def test_sram_words():
    assert Accelerator("x", sram_bytes=1024, word_bytes=4).sram_words == 256


@pytest.mark.parametrize("text, words", [
    ('base = "blog"\nclock_hz = inf\n', r"clock_hz must be a positive number from 1000 to 1e\+13 .*got inf"),
    ('base = "blog"\nclock_hz = nan\n', r"clock_hz must be a positive number .*got nan"),
    ('base = "blog"\ndram_bytes_per_cycle = 1e-300\n', r"dram_bytes_per_cycle must be .*got 1e-300"),
    ('base = "blog"\ndram_bytes_per_cycle = -inf\n', r"dram_bytes_per_cycle must be a positive number"),
    ('base = "blog"\nsram_bytes = 1e-300\n', r"sram_bytes must be a positive integer .*got 1e-300"),
    ('base = "blog"\nsram_bytes = 2305843009213693952\n', r"sram_bytes must be a positive integer \(at most"),
    ('base = "blog"\nvector_lanes = -32\n', r"vector_lanes must be a positive integer .*got -32"),
    ('base = "blog"\nword_bytes = "4"\n', r"word_bytes must be a positive integer .*got '4'"),
    ('base = "blog"\ndma_load_channels = [2]\n', r"dma_load_channels must be a positive integer .*got \[2\]"),
    ('base = ["blog"]\n', r"base must be a preset name in quotes \(blog, blog-fp32, blog-l1\), got \['blog'\]"),
    ('base = "blog"\nname = ["x"]\n', r"name must be a non-empty string, got \['x'\]"),
    ('base = "blog"\n[extra]\nkey = 1\n', r"unknown key\(s\) \['extra'\]"),
])
def test_bad_hardware_file_values_name_the_key_and_what_is_allowed(tmp_path, text, words):
    path = tmp_path / "hw.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"hardware file {path}: .*{words}"):
        load_hardware(path)


def test_unreadable_hardware_files_say_why(tmp_path):
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(ValueError, match="is a folder, not a file"):
        load_hardware(folder)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"sram_bytes = 1\n# \xe9\n")
    with pytest.raises(ValueError, match=r"not UTF-8 text \(byte 17\)"):  # 15 bytes of line 1, then '# '
        load_hardware(latin)
    with pytest.raises(ValueError, match="hardware is empty"):
        load_hardware("")
    with pytest.raises(ValueError, match="a hardware preset is named by a string"):
        preset(["blog"])  # type: ignore[arg-type]


def test_a_hardware_file_may_name_itself(tmp_path):
    path = tmp_path / "file-name.toml"
    path.write_text('base = "blog"\nname = "my-chip"\n')
    assert load_hardware(path) == dataclasses.replace(PRESETS["blog"], name="my-chip")
