"""Reading a user's file (dsasim/user_files.py): one message shape for every format, each naming the file and
giving the reader's hint; the readers that use it (hardware TOML, Accelergy tables, ZigZag workloads) say the same."""

import pytest

from dsasim.user_files import parse_yaml, read_text


def test_each_failure_names_the_file_and_gives_its_hint(tmp_path):
    hints = dict(missing_hint="give a path", folder_hint="give a file", encoding_hint="save it as UTF-8")
    with pytest.raises(ValueError) as err:
        read_text(tmp_path / "none.toml", "hardware file", **hints)
    assert str(err.value) == f"hardware file {tmp_path / 'none.toml'} does not exist; give a path"
    with pytest.raises(ValueError) as err:
        read_text(tmp_path, "hardware file", **hints)
    assert str(err.value) == f"hardware file {tmp_path} is a folder, not a file; give a file"
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes(b"name = \"caf\xe9\"\n")  # byte 11 is 0xe9: len('name = "caf') = 11
    with pytest.raises(ValueError) as err:
        read_text(latin1, "hardware file", **hints)
    assert str(err.value) == f"hardware file {latin1}: not UTF-8 text (byte 11); save it as UTF-8"
    with pytest.raises(ValueError) as err:  # no hint given: the message ends at what is wrong
        read_text(latin1, "ZigZag workload")
    assert str(err.value) == f"ZigZag workload {latin1}: not UTF-8 text (byte 11)"


def test_the_text_of_a_good_file_and_its_yaml(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("- id: 0\n  name: conv\n", encoding="utf-8")
    assert read_text(f, "ZigZag workload") == "- id: 0\n  name: conv\n"
    assert parse_yaml(read_text(f, "ZigZag workload"), "w.yaml") == [{"id": 0, "name": "conv"}]


def test_bad_yaml_names_the_line_and_the_problem_on_one_line():
    with pytest.raises(ValueError) as err:
        parse_yaml("a: 1\nb: [unclosed\n", "ZigZag workload w.yaml")
    message = str(err.value)
    assert message.startswith("ZigZag workload w.yaml: not valid YAML (line 3): ")  # the scanner stops at the end
    assert "\n" not in message


@pytest.mark.parametrize("reader", ["hardware", "accelergy", "zigzag"])
def test_every_reader_reports_a_folder_the_same_way(tmp_path, reader):
    from dsasim.architect.problems.zigzag_workload import read_workload
    from dsasim.energy.accelergy import read_ert
    from dsasim.hardware import load_hardware

    call = {"hardware": lambda: load_hardware(tmp_path), "accelergy": lambda: read_ert(tmp_path),
            "zigzag": lambda: read_workload(str(tmp_path))}[reader]
    with pytest.raises(ValueError, match=r" is a folder, not a file"):
        call()
