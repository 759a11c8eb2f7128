"""The traced modules talk to each other through public members only: no module in dsasim/traced/ reads a
`_private` attribute of an object it was handed (`session._stack`, `scope.session._exit_scope`), only its own
(`self._x`). That is what keeps `LevelState` (levels.py) on the narrow `LevelHost` protocol of the session
(level_host.py) rather than on the session's internals, and the session split by concept across files.

Read from the source with `ast`. Allowed: `self._x` and `cls._x`; a module's or a class's attribute (`_core.x`,
`sys._getframe`, `Session._access_py` where `_bind_core` routes methods to the compiled core); dunders; a
namedtuple's `_make`. The compiled core (`_core.pyx`, the session's fast path, which shares its fields by design)
is not Python and is not read."""

from __future__ import annotations

import ast
from pathlib import Path

from dsasim.traced.level_host import LEVEL_HOST_MEMBERS, LevelHost

TRACED = Path(__file__).resolve().parent.parent / "dsasim" / "traced"
NAMEDTUPLE_API = {"_make", "_asdict", "_replace", "_fields"}  # public, underscored only to leave field names free


def _names_of_modules_and_classes(tree: ast.Module) -> set[str]:
    """Names bound in the module to imported modules or names, and to classes it defines."""
    names = {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
    return names


def private_reads(source: str) -> list[tuple[int, str]]:
    """(line, `base._attr`) for each read or write of a `_private` attribute of an object that is not `self`,
    `cls`, a module or a class (a parameter, a local, or an attribute of another object)."""
    tree = ast.parse(source)
    allowed = _names_of_modules_and_classes(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attr = node.attr
        if not attr.startswith("_") or (attr.startswith("__") and attr.endswith("__")) or attr in NAMEDTUPLE_API:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in allowed:
            continue
        found.append((node.lineno, f"{ast.unparse(node.value)}.{attr}"))
    return found


def test_no_traced_module_reads_another_objects_private_attributes():
    offences = [f"{path.name}:{line}: {expr}" for path in sorted(TRACED.glob("*.py"))
                for line, expr in private_reads(path.read_text())]
    assert not offences, ("traced/ modules read private members of objects they were handed; add a public "
                          "property or method to the owner instead:\n" + "\n".join(offences))


def test_the_check_sees_a_private_read_through_a_parameter_or_an_attribute():
    """The checker itself: a parameter's, a local's and an attribute's private member are each found; self's,
    a module's and a class's are not (hand-written cases)."""
    source = ("import sys\nfrom dsasim.traced import _core\n\nclass A:\n    def f(self, session):\n"
              "        self._mine = sys._getframe(0)\n        x = _core._helper\n        y = A._ref\n"
              "        a = session._stack\n        b = self.session._log\n        c = session.numeric\n")
    assert private_reads(source) == [(9, "session._stack"), (10, "self.session._log")]


def test_the_level_host_protocol_lists_only_public_members_all_of_which_the_session_has():
    """`LEVEL_HOST_MEMBERS` is the protocol's member list (what the fake-host test allows), every one of them
    public, and Session provides each: the protocol is real, not an annotation over private names."""
    from dsasim import Session
    declared = {name for name in vars(LevelHost) if not name.startswith("_")} | set(LevelHost.__annotations__)
    assert declared == set(LEVEL_HOST_MEMBERS)
    assert all(not name.startswith("_") for name in LEVEL_HOST_MEMBERS)
    assert all(hasattr(Session, name) or name in ("numeric", "dtype") for name in LEVEL_HOST_MEMBERS)
