"""scripts/module_graph.py: the package's import graph, read from the working tree or from a git commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "module_graph.py"

# A tiny package: planning imports a sink (a layering violation), a and b import each other (a cycle), the reader
# names a planning type under TYPE_CHECKING (no cycle, a type-only violation), and every import form the script
# must resolve (absolute, relative, `from package import module`, lazy, a name from a module).
FILES = {
    "pkg/__init__.py": '__version__ = "1"\n',
    "pkg/session/__init__.py": "",
    "pkg/session/reader.py": "import json\nfrom typing import TYPE_CHECKING\n\nfrom pkg import __version__\n\n"
                             "if TYPE_CHECKING:\n    from pkg.plan import f\n",
    "pkg/plan.py": "from pkg.session import reader\nfrom .sinks.manifest import Row\n\n\ndef f():\n"
                       "    import pkg.a\n",
    "pkg/sinks/__init__.py": "",
    "pkg/sinks/manifest.py": "from ..session.reader import json\n\nRow = 1\n",
    "pkg/a.py": "from pkg import b\n",
    "pkg/b.py": "import pkg.a\n",
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _graph(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--package", "pkg", *args],
                          capture_output=True, text=True, timeout=60)


def _edges(output: str) -> dict[str, str]:
    rows = [line.split(None, 2) for line in output.splitlines() if "  -> " in line]
    return {name: rest.split("-> ", 1)[1] for name, _, rest in rows}


def test_graph_lists_modules_edges_cycles_and_layering_violations(tmp_path: Path) -> None:
    _write(tmp_path, FILES)
    result = _graph(tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.splitlines()[0] == "pkg (working tree): 8 modules, 19 lines, 8 internal imports"
    assert _edges(out) == {
        "__init__": "-", "session": "-", "sinks": "-", "b": "a", "a": "b",
        "session.reader": "__init__, plan (type)", "plan": "a, session.reader, sinks.manifest",
        "sinks.manifest": "session.reader",
    }
    assert "import cycles: 1\n  a <-> b\n" in out
    assert ("layering violations (a module importing a later stage): 2\n"
            "  plan [plan] -> sinks.manifest [sinks]\n"
            "  session.reader [read] -> plan [plan] (type only)\n") in out
    assert "modules of no known stage (add them to STAGES): a, b" in out
    assert "largest: session.reader 7, plan 6," in out

    dot = _graph(tmp_path, "--format", "dot").stdout
    assert dot.startswith('digraph "pkg" {') and dot.rstrip().endswith("}")
    assert '"plan" -> "sinks.manifest" [color=red];' in dot and '"a" -> "b";' in dot
    assert '"session.reader" -> "plan" [color=red, style=dashed];' in dot


def test_ref_reads_the_tree_at_a_commit_not_the_working_tree(tmp_path: Path) -> None:
    _write(tmp_path, FILES)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=60)
    subprocess.run([*git, "add", "."], check=True, timeout=60)
    subprocess.run([*git, "commit", "-qm", "before"], check=True, timeout=60)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                            timeout=60).stdout.strip()
    # After: the sink import is gone, the cycle is broken and a module was added, in the working tree only.
    (tmp_path / "pkg" / "plan.py").write_text("from pkg.session import reader\n")
    (tmp_path / "pkg" / "b.py").write_text("")
    (tmp_path / "pkg" / "importing.py").write_text("from pkg.plan import reader\n")

    before = _graph(tmp_path, "--ref", commit)
    after = _graph(tmp_path)
    assert before.returncode == after.returncode == 0
    assert before.stdout.startswith(f"pkg ({commit}): 8 modules,") and "importing" not in _edges(before.stdout)
    assert "import cycles: 1" in before.stdout and "layering violations (a module importing a later stage): 2" \
        in before.stdout
    assert after.stdout.startswith("pkg (working tree): 9 modules,")
    assert _edges(after.stdout)["importing"] == "plan"
    assert "import cycles: 0" in after.stdout and "layering violations (a module importing a later stage): 1" \
        in after.stdout

    missing = _graph(tmp_path, "--ref", "no-such-ref")
    assert missing.returncode == 2 and "git failed" in missing.stderr and missing.stdout == ""


def test_check_fails_on_a_cycle_a_violation_a_module_of_no_stage_and_a_stage_of_no_folder(tmp_path: Path) -> None:
    _write(tmp_path, FILES)
    result = _graph(tmp_path, "--check")
    assert result.returncode == 1
    problems = result.stdout.splitlines()
    assert problems[:5] == [
        "import cycle: a <-> b",
        "layering violation: plan [plan] -> sinks.manifest [sinks]",
        "layering violation: session.reader [read] -> plan [plan] (type only)",
        "no stage: a",
        "no stage: b",
    ]
    # The toy package has none of the other folders the table names: each is named.
    assert "STAGES names a missing folder or module: routing" in problems
    assert "STAGES names a missing folder or module: session" not in problems


def test_every_module_of_the_package_is_in_a_stage_with_no_cycle_and_no_layering_violation() -> None:
    """The real package: a new module outside the stage folders, a folder the table does not know, a table entry
    left behind by a move, an import of a later stage or an import cycle fails here."""
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every one in its stage, no cycle, no layering violation" in result.stdout
