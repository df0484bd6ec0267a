"""The exception tree drawn in errors.py's docstring is the tree of classes, and the CLI exits with its codes."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import hindsight_batch
from hindsight_batch import errors
from hindsight_batch.cli import app

_ROW = re.compile(r"^    ( *)([*-]) (\w[\w ]*?) \.+ (\d+)(?:\s+([\w.]+))?")
_CLI = Path(hindsight_batch.__file__).parent / "cli"


def _drawn() -> list[tuple[int, str, int, str]]:
    """(depth, class name, exit code, module) of each row of the drawing."""
    rows = []
    for line in (errors.__doc__ or "").splitlines():
        match = _ROW.match(line)
        if match:
            indent, _, name, code, module = match.groups()
            rows.append((len(indent) // 2, name, int(code), module or "hindsight_batch.errors"))
    return rows


def _tree_classes() -> dict[str, type[errors.HindsightBatchError]]:
    """Every subclass of HindsightBatchError the package defines, by name (each module imported)."""
    for info in pkgutil.walk_packages(hindsight_batch.__path__, "hindsight_batch."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found: dict[str, type[errors.HindsightBatchError]] = {}
    pending: list[type[errors.HindsightBatchError]] = [errors.HindsightBatchError]
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("hindsight_batch."):
            assert found.setdefault(cls.__name__, cls) is cls, f"two classes named {cls.__name__}"
        pending.extend(cls.__subclasses__())
    return found


def test_the_drawn_tree_is_the_class_tree() -> None:
    rows = _drawn()
    classes = _tree_classes()
    tree = [row for row in rows if row[1] in classes]
    assert {name for _, name, _, _ in tree} == set(classes), "a class missing from the drawing, or drawn but gone"
    parents: list[str] = []
    for depth, name, code, module in tree:
        del parents[depth:]
        cls = classes[name]
        assert cls.exit_code == code, name
        assert cls.__module__.startswith(module), name
        if parents:
            assert cls.__bases__ == (classes[parents[-1]],), f"{name} is drawn under {parents[-1]}"
        parents.append(name)
    drawn_names = [name for _, name, _, _ in rows]
    assert "Terminated" in drawn_names and not issubclass(errors.Terminated, Exception)
    codes = {name: code for _, name, code, _ in rows}
    assert (codes["KeyboardInterrupt"], codes["Terminated"], codes["BrokenPipeError"],
            codes["any other Exception"]) == (errors.EXIT_SIGINT, errors.EXIT_SIGTERM, errors.EXIT_SIGPIPE,
                                              errors.EXIT_INTERNAL)


def _instance(cls: type[BaseException]) -> BaseException:
    exc = cls.__new__(cls)
    BaseException.__init__(exc, "what went wrong")
    return exc


def test_each_ending_exits_with_its_drawn_code(capsys: pytest.CaptureFixture[str]) -> None:
    classes: dict[str, type[BaseException]] = {**_tree_classes(), "KeyboardInterrupt": KeyboardInterrupt,
                                              "Terminated": errors.Terminated, "any other Exception": ValueError}
    for _, name, code, _ in _drawn():
        if name == "BrokenPipeError":  # it points stdout at /dev/null: tests/test_run_isolation.py runs it in a process
            continue
        with pytest.raises(SystemExit) as ended:
            app._exit_for(_instance(classes[name]), debug=False)
        assert ended.value.code == code, name
    capsys.readouterr()


def test_the_cli_exits_only_with_the_trees_codes() -> None:
    """Every ``sys.exit`` in the CLI exits with a code named in errors.py (or an exception's own), and every code
    named there is drawn (0 and 1 are also results)."""
    constants = {name: value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert set(constants.values()) <= {code for _, _, code, _ in _drawn()} | {errors.EXIT_OK}
    for path in _CLI.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "sys.exit":
                (argument,) = node.args
                text = ast.unparse(argument)
                assert text in constants or text in ("code", "exc.exit_code"), f"{path.name}: sys.exit({text})"
