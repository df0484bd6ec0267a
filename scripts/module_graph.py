#!/usr/bin/env python3
"""Print the package's internal import graph: each module, its line count and the package modules it imports.

    python scripts/module_graph.py                    # the working tree
    python scripts/module_graph.py --ref a0cbc58      # the tree at a git commit (read with git, no checkout)
    python scripts/module_graph.py --format dot | dot -Tsvg > graph.svg
    python scripts/module_graph.py --check            # exit 1 on a cycle, a layering violation or a stray module

Every ``import`` counts, also one inside a function; one only under ``if TYPE_CHECKING:`` is marked ``(type)``.
The summary gives the modules, edges, largest modules, import cycles (of imports that run: a type-only import
makes none) and layering violations: a module importing one of a later stage (the pipeline reads, shapes and
plans; sinks write; the commands run it; the CLI prints), planning importing a sink, say. A module's stage is that
of its folder (the first part of its dotted name) in STAGES; modules of no known stage, and STAGES entries the
package lacks, are listed. ``--check`` prints only the problems and exits 1 if there is any (tests run it).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The stages in pipeline order, each the package's folders (or top-level modules) it is made of: a module's stage
# is that of the first part of its dotted name, so a new module takes its folder's stage. Importing a module of a
# later stage is a layering violation. This table is the one place the order is declared; tests/test_module_graph.py
# fails when a module sits in no stage or the table names what the package lacks.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("errors", "base", "config")),  # used by every stage, using none
    ("read", ("session",)),  # session files in, entries out
    ("extension", ("extension",)),  # what the live extensions recorded: switches, retain cursors, records
    ("shape", ("retention", "redaction")),  # entries in, kept and redacted text out
    ("route", ("routing",)),  # text in, a route decision out
    ("plan", ("plan",)),  # a session in, chunks, items and manifest rows out
    ("sinks", ("sinks", "ledger", "queue")),  # rows and items in, the manifest, the ledger and the server written
    ("run", ("importing", "prune", "review", "commands")),  # the commands' work, wiring the stages
    ("api", ("api",)),  # the library's entry points
    ("cli", ("cli", "__main__")),  # the command line: parses, calls the api, prints
]
# Outside the stages: the package's own __init__ (its version and public API), which everyone may import, and the
# seams' protocols, which name every stage's types.
EXEMPT = {"__init__", "interfaces"}
_RANK = {part: (rank, name) for rank, (name, parts) in enumerate(STAGES) for part in parts}


@dataclass
class Module:
    name: str  # relative to the package: "session.reader"; the package's own __init__ is "__init__"
    lines: int
    imports: set[str] = field(default_factory=set)
    type_only: set[str] = field(default_factory=set)  # of imports, those made only under `if TYPE_CHECKING:`


def read_tree(root: Path, package: str, ref: str | None) -> dict[str, str]:
    """Path (relative to root) -> source of every .py file of the package, from the working tree or ``ref``."""
    if ref is None:
        return {str(p.relative_to(root)): p.read_text(encoding="utf-8")
                for p in sorted((root / package).rglob("*.py"))}
    listed = subprocess.run(["git", "-C", str(root), "ls-tree", "-r", "--name-only", ref, "--", f"{package}/"],
                            capture_output=True, text=True, check=True).stdout.split()
    return {path: subprocess.run(["git", "-C", str(root), "show", f"{ref}:{path}"], capture_output=True,
                                 text=True, check=True).stdout
            for path in listed if path.endswith(".py")}


def module_name(path: str, package: str) -> tuple[str, bool]:
    """Dotted name relative to the package, and whether the file is a package's ``__init__``."""
    parts = list(Path(path).with_suffix("").parts)
    assert parts[0] == package, path
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts[1:]) or "__init__", is_package


def build_graph(sources: dict[str, str], package: str) -> dict[str, Module]:
    names = {path: module_name(path, package) for path in sources}
    modules = {names[path][0]: Module(names[path][0], len(src.splitlines())) for path, src in sources.items()}

    def absolute(dotted: str) -> str | None:
        """The longest package module that ``dotted`` (an absolute import) names or lies in."""
        if dotted != package and not dotted.startswith(package + "."):
            return None
        parts = dotted.split(".")[1:]
        while parts:
            if ".".join(parts) in modules:
                return ".".join(parts)
            parts.pop()
        return "__init__"

    for path, src in sources.items():
        name, is_package = names[path]
        here = [package] + ([] if name == "__init__" else name.split("."))
        base = here if is_package else here[:-1]  # the package a relative import starts from
        tree = ast.parse(src, filename=path)
        typing_only = {id(n) for branch in ast.walk(tree)
                       if isinstance(branch, ast.If) and _is_type_checking(branch.test)
                       for stmt in branch.body for n in ast.walk(stmt)}
        runtime: set[str] = set()
        for node in ast.walk(tree):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [absolute(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                start = base[: len(base) - node.level + 1] if node.level else []
                mod = ".".join(start + (node.module.split(".") if node.module else []))
                for alias in node.names:  # `from pkg import mod` imports the module mod
                    sub = absolute(f"{mod}.{alias.name}")
                    targets.append(sub if sub == f"{mod}.{alias.name}".split(".", 1)[-1] else absolute(mod))
            found = {t for t in targets if t is not None and t != name}
            modules[name].imports |= found
            if id(node) not in typing_only:
                runtime |= found
        modules[name].type_only = modules[name].imports - runtime
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def cycles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(modules[v].imports - modules[v].type_only):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(modules) + 100))
    for v in sorted(modules):
        if v not in index:
            visit(v)
    return sorted(found)


def stage(name: str) -> tuple[int, str] | None:
    """The rank and name of the module's stage: that of its top-level folder or module; None if exempt or none."""
    if name in EXEMPT:
        return None
    return _RANK.get(name.split(".")[0])


def unplaced(modules: dict[str, Module]) -> list[str]:
    """Modules of no stage (and not exempt)."""
    return sorted(n for n in modules if stage(n) is None and n not in EXEMPT)


def missing_parts(modules: dict[str, Module]) -> list[str]:
    """What the stage table names that the package has no folder or module of."""
    present = {n.split(".")[0] for n in modules}
    return sorted(part for part in _RANK if part not in present)


def violations(modules: dict[str, Module]) -> list[tuple[str, str, str, str, bool]]:
    out = []
    for m in sorted(modules):
        mine = stage(m)
        for target in sorted(modules[m].imports):
            theirs = stage(target)
            if mine and theirs and theirs[0] > mine[0]:
                out.append((m, mine[1], target, theirs[1], target in modules[m].type_only))
    return out


def text(modules: dict[str, Module], package: str, label: str, top: int) -> str:
    edges = sum(len(m.imports) for m in modules.values())
    width = max(len(n) for n in modules)
    out = [f"{package} ({label}): {len(modules)} modules, {sum(m.lines for m in modules.values())} lines, "
           f"{edges} internal imports", ""]
    out += [f"{n:<{width}} {modules[n].lines:>5}  -> {', '.join(_named(modules[n])) or '-'}" for n in sorted(modules)]
    largest = sorted(modules.values(), key=lambda m: (-m.lines, m.name))[:top]
    out += ["", "largest: " + ", ".join(f"{m.name} {m.lines}" for m in largest)]
    found = cycles(modules)
    out.append(f"import cycles: {len(found)}")
    out += [f"  {' <-> '.join(c)}" for c in found]
    bad = violations(modules)
    out.append(f"layering violations (a module importing a later stage): {len(bad)}")
    out += [f"  {m} [{s}] -> {t} [{ts}]{' (type only)' if typed else ''}" for m, s, t, ts, typed in bad]
    lost = unplaced(modules)
    if lost:
        out.append(f"modules of no known stage (add them to STAGES): {', '.join(lost)}")
    absent = missing_parts(modules)
    if absent:
        out.append(f"STAGES names what the package lacks: {', '.join(absent)}")
    return "\n".join(out)


def problems(modules: dict[str, Module]) -> list[str]:
    """What ``--check`` fails on: import cycles, layering violations (type-only too), modules of no stage and
    stage entries of no module."""
    return ([f"import cycle: {' <-> '.join(c)}" for c in cycles(modules)]
            + [f"layering violation: {m} [{s}] -> {t} [{ts}]{' (type only)' if typed else ''}"
               for m, s, t, ts, typed in violations(modules)]
            + [f"no stage: {n}" for n in unplaced(modules)]
            + [f"STAGES names a missing folder or module: {p}" for p in missing_parts(modules)])


def _named(module: Module) -> list[str]:
    return [t + (" (type)" if t in module.type_only else "") for t in sorted(module.imports)]


def dot(modules: dict[str, Module], package: str) -> str:
    bad = {(m, t) for m, _, t, _, _ in violations(modules)}
    out = [f'digraph "{package}" {{', "  rankdir=LR; node [shape=box, fontsize=10];"]
    out += [f'  "{n}" [label="{n}\\n{modules[n].lines} lines"];' for n in sorted(modules)]
    out += [f'  "{n}" -> "{t}"{_style(n, t, modules, bad)};'
            for n in sorted(modules) for t in sorted(modules[n].imports)]
    return "\n".join([*out, "}"])


def _style(source: str, target: str, modules: dict[str, Module], bad: set[tuple[str, str]]) -> str:
    attrs = (["color=red"] if (source, target) in bad else []) + (
        ["style=dashed"] if target in modules[source].type_only else [])
    return f" [{', '.join(attrs)}]" if attrs else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", help="read the tree at this git commit instead of the working tree")
    parser.add_argument("--format", choices=("text", "dot"), default="text")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    parser.add_argument("--package", default="hindsight_batch")
    parser.add_argument("--top", type=int, default=8, help="how many of the largest modules to name")
    parser.add_argument("--check", action="store_true",
                        help="print nothing but the problems; exit 1 if there is any (cycle, layering violation, "
                             "module of no stage, stage entry of no module)")
    args = parser.parse_args(argv)
    try:
        sources = read_tree(args.root, args.package, args.ref)
    except subprocess.CalledProcessError as exc:
        print(f"module_graph: git failed: {exc.stderr.strip()}", file=sys.stderr)
        return 2
    if not sources:
        print(f"module_graph: no {args.package}/*.py under {args.root}", file=sys.stderr)
        return 2
    modules = build_graph(sources, args.package)
    if args.check:
        found = problems(modules)
        print("\n".join(found) if found else f"{args.package}: {len(modules)} modules, every one in its stage, "
              "no cycle, no layering violation")
        return 1 if found else 0
    try:
        print(text(modules, args.package, args.ref or "working tree", args.top) if args.format == "text"
              else dot(modules, args.package))
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
