"""The features that model one on-chip level (the SRAM) and refuse hardware with levels below it, in one table.

Each such feature calls `require_one_level(hardware, FEATURE)`; on hardware with `inner_levels` it raises
`MultiLevelHardwareError` (a ValueError, so the command line prints it as one line and exits 2) naming the
feature, the hardware, its levels and what to do instead. `ONE_LEVEL_FEATURES` is the table, and
`one_level_features_markdown()` the list the documentation (docs/model/levels.md) shows, so the two cannot drift.
A feature that learns levels leaves the table; a new one-level feature adds a row and one call.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsasim.hardware import Accelerator


class MultiLevelHardwareError(ValueError):
    """A feature that models one on-chip level was given hardware with levels below the SRAM."""

    def __init__(self, message: str, feature: str, hardware: str) -> None:
        super().__init__(message)
        self.feature = feature  # a key of ONE_LEVEL_FEATURES
        self.hardware = hardware  # the hardware's name


@dataclass(frozen=True)
class OneLevelFeature:
    """A feature that models the SRAM only: what it is (the subject of the refusal), where it is reached (command
    line and library), and what to do on hardware with levels instead."""

    subject: str
    command: str
    library: str
    instead: str

    def __post_init__(self) -> None:
        for name in ("subject", "command", "library", "instead"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"OneLevelFeature: {name} must be a non-empty string, got {getattr(self, name)!r}")


# What every level's loop-nest model offers instead ({hw} is the hardware's name).
_LEVEL_MODEL = ("the loop-nest model of every level is `dsasim search LAYER --hardware {hw}` and `dsasim sweep-sram "
                "LAYER --hardware {hw} --level NAME`, or use a one-level hardware such as 'blog'")

ONE_LEVEL_FEATURES: dict[str, OneLevelFeature] = {
    "search": OneLevelFeature(
        "this search", "none (`dsasim search LAYER` on levels runs the per-level search instead)",
        "`dsasim.architect.search.layer_search.search`, `run_search`, `sweep_sram`",
        "search every level with `dsasim.architect.search.level_search.search_levels`; " + _LEVEL_MODEL),
    "chain search": OneLevelFeature(
        "the chain search", "`dsasim search CHAIN`", "`dsasim.architect.search.fused_search.search_chain`", _LEVEL_MODEL),
    "chain sweep": OneLevelFeature(
        "the chain sweep", "`dsasim sweep-sram CHAIN`", "`dsasim.architect.studies.sweep.sweep_chain`", _LEVEL_MODEL),
    "attention search": OneLevelFeature(
        "the attention search", "`dsasim search attention:...`",
        "`dsasim.architect.search.attention_search.search_attention`", _LEVEL_MODEL),
    "shape sweep": OneLevelFeature(
        "the shape sweep", "`dsasim shapes LAYER`", "`dsasim.architect.studies.shapes.sweep_shapes`", _LEVEL_MODEL),
    "--no-simulate": OneLevelFeature(
        "--no-simulate (the one-level estimate of a checked nest's cycles)",
        "`dsasim search LAYER --no-simulate`, `dsasim sweep-sram LAYER --no-simulate`", "none (a command-line flag)",
        "leave --no-simulate out (on levels the traced check of the best nest is timed by the timing simulator); "
        "`dsasim search` also takes --confirm 0 to leave the traced check out"),
}


def require_one_level(hardware: Accelerator, feature: str) -> None:
    """MultiLevelHardwareError when `hardware` has levels below the SRAM, which `feature` (a key of
    ONE_LEVEL_FEATURES) does not model: its figures would silently leave them out."""
    if feature not in ONE_LEVEL_FEATURES:
        raise KeyError(f"require_one_level: unknown feature {feature!r}; features are {list(ONE_LEVEL_FEATURES)}")
    if not hardware.inner_levels:
        return
    row = ONE_LEVEL_FEATURES[feature]
    raise MultiLevelHardwareError(
        f"{row.subject} models one on-chip level (the SRAM), but hardware {hardware.name!r} has levels below it "
        f"({', '.join(lv.name for lv in hardware.inner_levels)}), which its figures would leave out; "
        + row.instead.format(hw=hardware.name), feature, hardware.name)


def one_level_features_markdown() -> str:
    """The documentation's list of the features that refuse hardware with levels below the SRAM (Markdown)."""
    lines = [f"* **{key}**: command line {row.command}; library {row.library}." for key, row in ONE_LEVEL_FEATURES.items()]
    return "\n".join(lines) + "\n"
