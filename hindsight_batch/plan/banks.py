"""The project bank of a session, derived from its cwd exactly as the configured live extension derives it.

An import is useful only if it lands in the bank the live extension recalls from, so the rule is the extension's
own (read from its source; ``README.md`` "Which bank your import lands in"):

* **hindsight-pi** (``extensions/session.ts``): ``mappings[cwd]``, else ``bankId``, else by ``bankStrategy``
  (default ``per-repo``): ``global`` → ``globalBankId`` or ``pi-global-memory``; ``per-directory`` →
  ``dir-<last path segment>-<sha256(cwd)[:10]>``; ``per-repo`` → the last ``/``- or ``:``-separated segment of
  ``git remote get-url origin`` without ``.git``, else ``<repo root name>-<sha256(root)[:10]>``, else the directory
  key; ``git-branch`` (and ``manual`` without a ``bankId``, which falls through to the same code) → that, then
  ``--<branch>`` when HEAD is on a branch; ``pi-session`` → a new id per live session. Every id goes through
  :func:`sanitize`.
* **pi-hindsight** (``extensions/banks/banking.ts``): ``banks.project.bankId`` as written, else
  ``pi-project-<slug(basename(basis))>-<sha256(basis)[:12]>``, the basis being the cwd (``derive: cwd``) or the
  main worktree's root (git, else the nearest folder holding ``.git``, else the cwd), symlinks resolved;
  ``derive: basename`` → the root folder's name.
* **neither configured**: ``banks.project.bankId``, else ``bankId``, else the rule of the extension found installed
  (:mod:`hindsight_batch.config.installed`) with its defaults, else this tool's own ``pi-<project>-<hash of cwd>``,
  which :class:`BankChoice` marks ``unnamed`` (a dry run plans it and says so; ``--apply`` does not send it).
* **moved**: ``--map OLD=NEW`` (``pathMap``) reads a cwd under ``OLD`` as under ``NEW`` (:func:`moved`).

Git runs read-only in the cwd: ``git -C <cwd>``, no optional locks, no hooks, no pager, a timeout. Where the rule
cannot be reproduced now (``pi-session``; a cwd that no longer exists; git missing), the bank the extension recorded
for the session (its retain queue records, or a persisted recall's ``details.bankId``) is used, else the session is
skipped with the reason. A recorded bank that differs from the derived one skips the session (fail closed).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import open_regular_file
from hindsight_batch.base.masking import mask
from hindsight_batch.config.families import HINDSIGHT_PI, PI_HINDSIGHT
from hindsight_batch.config.loader import ResolvedConfig
from hindsight_batch.config.model import Settings
from hindsight_batch.extension.records import queue_path

GIT_TIMEOUT = 5.0
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                 "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
                 "GIT_PREFIX", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES")


class Unreproducible(Exception):
    """The live extension's rule cannot be re-run now; the message says why."""


class BankChoice(NamedTuple):
    """The project bank of a session (``bank_id``), or why there is none (``skip``), and how it was found.
    ``unnamed``: no extension was configured or found, so the bank is this tool's own guess; what to name (a dry
    run plans it and says so, ``--apply`` does not send it)."""

    bank_id: str | None
    why: str
    skip: str | None = None
    unnamed: str | None = None
    fix: str | None = None  # with ``skip``: the exact flag or key that gives the session a bank
    found: str | None = None  # the extension found installed whose defaults gave the bank (no configuration)


NAME_ONE = ("name the extension whose bank to use (--extension hpi|pi-hindsight, or \"extension\" in "
            "~/.hindsight/config.json), or a bank (bankId, HINDSIGHT_BANK_ID)")


def moved(cwd: str, path_map: Mapping[str, str]) -> str | None:
    """Where ``cwd`` is now, by the longest ``OLD`` of ``path_map`` (``--map OLD=NEW``) that is it or a folder
    above it; None when none is."""
    best = max((old for old in path_map if cwd == old.rstrip("/") or cwd.startswith(old.rstrip("/") + "/")),
               key=len, default=None)
    if best is None:
        return None
    return path_map[best].rstrip("/") + cwd[len(best.rstrip("/")):]


def sanitize(value: str) -> str:
    """hindsight-pi's ``sanitizeBankId``: lowercase; each run outside ``a-z 0-9 _ -`` → ``-``; dashes trimmed at
    both ends; the first 120 characters (cut after trimming, as there); ``pi-memory`` when nothing is left."""
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", value.lower())
    cleaned = re.sub(r"^-+|-+$", "", cleaned)[:120]
    return cleaned or "pi-memory"


def _slug48(value: str) -> str:
    """pi-hindsight's ``slug``: lowercase; runs outside ``a-z 0-9`` → ``-``; one dash trimmed at each end; 48
    characters; ``repo`` when empty."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", value.lower())
    cleaned = re.sub(r"^-|-$", "", cleaned)[:48]
    return cleaned or "repo"


def _sha(value: str, length: int) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:length]


def _last_segment(path: str) -> str:
    """``path.split(/[\\\\/]/).pop()``."""
    return re.split(r"[\\/]", path)[-1]


class Git:
    """Read-only git queries in a folder, as the extensions make them."""

    def __init__(self, env: Mapping[str, str] | None = None, timeout: float = GIT_TIMEOUT) -> None:
        base = dict(os.environ if env is None else env)
        for name in _GIT_ENV_DROP:
            base.pop(name, None)
        base.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"})
        self._env = base
        self._timeout = timeout

    def run(self, cwd: str, *args: str) -> tuple[int, str]:
        """(exit code, stdout). Raises :class:`Unreproducible` when git cannot run at all."""
        import subprocess  # only when a bank rule asks git: an empty import does not load it

        try:
            done = subprocess.run(
                ["git", "-C", cwd, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
                 "-c", "safe.directory=*", *args],
                capture_output=True, text=True, env=self._env, timeout=self._timeout, check=False,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise Unreproducible("git is not installed") from None
        except subprocess.TimeoutExpired:
            raise Unreproducible(f"git timed out after {self._timeout:g} s in {cwd}") from None
        except OSError as exc:
            raise Unreproducible(f"git could not run in {cwd}: {exc.strerror}") from None
        return done.returncode, done.stdout


def _need_cwd(cwd: str) -> None:
    if not os.path.isdir(cwd):
        raise Unreproducible(f"the session's cwd {cwd} no longer exists")


# hindsight-pi -----------------------------------------------------------------------------------------------


def _directory_key(cwd: str) -> str:
    return sanitize(f"dir-{_last_segment(cwd)}-{_sha(cwd, 10)}")


def _repo_slug(cwd: str, git: Git) -> tuple[str | None, str]:
    code, out = git.run(cwd, "remote", "get-url", "origin")
    url = out.strip()
    if code == 0 and url:
        name = re.split(r"[/:]", re.sub(r"\.git$", "", url))[-1]
        if name:
            return sanitize(name), f"the last segment of git remote origin {mask(url)!r}"
    code, out = git.run(cwd, "rev-parse", "--show-toplevel")
    root = out.strip() if code == 0 else ""
    if not root:
        return None, "not in a git repository"
    return sanitize(f"{_last_segment(root)}-{_sha(root, 10)}"), f"the repository root {root} (no origin)"


def hindsight_pi_bank(resolved: ResolvedConfig, cwd: str, git: Git) -> tuple[str, str]:
    settings = resolved.settings
    if cwd in settings.mappings:
        return sanitize(settings.mappings[cwd]), f"mappings[{cwd!r}] ({resolved.origin('mappings.' + cwd)})"
    if settings.bank_id:
        return sanitize(settings.bank_id), f"bankId ({resolved.origin('bankId')})"
    strategy = settings.bank_strategy or "per-repo"
    how = f"bankStrategy {strategy} ({resolved.origin('bankStrategy')})"
    if strategy == "global":
        return sanitize(settings.global_bank_id or "pi-global-memory"), f"{how}: globalBankId or pi-global-memory"
    if strategy == "pi-session":
        raise Unreproducible("bankStrategy pi-session gives every live session a new bank that only it knows")
    if strategy == "per-directory":
        return _directory_key(cwd), f"{how}: directory key of {cwd}"
    _need_cwd(cwd)
    repo, basis = _repo_slug(cwd, git)
    if strategy == "per-repo":
        if repo is None:
            return _directory_key(cwd), f"{how}: {basis}, so the directory key of {cwd}"
        return repo, f"{how}: {basis}"
    root = repo or _directory_key(cwd)
    code, out = git.run(cwd, "rev-parse", "--abbrev-ref", "HEAD")
    branch = out.strip() if code == 0 else ""
    if not branch or branch == "HEAD":
        return root, f"{how}: {basis}; no branch (detached HEAD or no commit)"
    return sanitize(f"{root}--{sanitize(branch)}"), f"{how}: {basis}, branch {branch!r}"


# pi-hindsight -----------------------------------------------------------------------------------------------


def _canonical(path: str) -> str:
    try:
        return os.path.realpath(path, strict=True)
    except OSError:
        return os.path.abspath(path)


def _main_worktree_root(cwd: str, git: Git) -> str | None:
    def rev_parse(flag: str) -> str | None:
        code, out = git.run(cwd, "rev-parse", "--path-format=absolute", flag)
        return out.strip() if code == 0 else None

    common = rev_parse("--git-common-dir")
    if not common:
        return None
    git_dir = rev_parse("--git-dir")
    if git_dir is None:
        return None
    if common != git_dir and PurePosixPath(common).name == ".git":
        return str(PurePosixPath(common).parent)
    top = rev_parse("--show-toplevel")
    if top:
        return top
    return str(PurePosixPath(common).parent) if PurePosixPath(common).name == ".git" else common


def repo_root(cwd: str, git: Git) -> str:
    """pi-hindsight's ``findRepoRoot``."""
    root = _main_worktree_root(cwd, git)
    if root:
        return _canonical(root)
    current = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return _canonical(current)
        parent = os.path.dirname(current)
        if parent == current:
            return _canonical(cwd)
        current = parent


def pi_hindsight_bank(resolved: ResolvedConfig, cwd: str, git: Git) -> tuple[str, str]:
    project = resolved.settings.banks.project
    if project.bank_id:
        return project.bank_id, f"banks.project.bankId ({resolved.origin('banks.project.bankId')})"
    derive = project.derive or "repo"
    how = f"derive {derive} ({resolved.origin('banks.project.derive')})"
    if derive == "cwd":
        basis = os.path.abspath(cwd)
        return f"pi-project-{_slug48(os.path.basename(basis))}-{_sha(basis, 12)}", f"{how}: basis {basis}"
    _need_cwd(cwd)
    root = repo_root(cwd, git)
    if derive == "basename":
        return os.path.basename(root).strip() or "default", f"{how}: the repository root {root}"
    return f"pi-project-{_slug48(os.path.basename(root))}-{_sha(root, 12)}", f"{how}: basis {root}"


def _remote_project_id(url: str) -> str:
    """pi-hindsight's ``normalizeGitRemoteToProjectId``: ``git@host:path`` as ``host/path``; userinfo, scheme,
    ``ssh://git@``, ``git://`` and ``.git`` dropped; repeated slashes collapsed; slugged."""
    value = url.strip()
    scp = re.match(r"^git@([^:]+):(.+)$", value, re.IGNORECASE)
    if scp:
        value = f"{scp.group(1)}/{scp.group(2)}"
    value = re.sub(r"^(https?://)[^/@]+@", r"\1", value, flags=re.IGNORECASE)
    value = re.sub(r"^https?://", "", value, flags=re.IGNORECASE)
    value = re.sub(r"^ssh://git@", "", value, flags=re.IGNORECASE)
    value = re.sub(r"^git://", "", value, flags=re.IGNORECASE)
    value = re.sub(r"\.git$", "", value, flags=re.IGNORECASE)
    value = re.sub(r"/+", "/", value)
    return _slug48(value) or "remote"


def pi_hindsight_tags(cwd: str, git: Git) -> list[str]:
    """The scope tags pi-hindsight puts on every live retain and filters recall by (``banks/banking.ts``
    ``baseTags``): ``source:pi``, ``project:<id from the origin URL, else the root's name>``,
    ``repo:<slug(root name)>-<sha256(root)[:12]>``."""
    _need_cwd(cwd)
    root = repo_root(cwd, git)
    code, out = git.run(root, "config", "--get", "remote.origin.url")
    remote = out.strip() if code == 0 else ""
    project = _remote_project_id(remote) if remote else (_slug48(os.path.basename(root)) or "project")
    return ["source:pi", f"project:{project}", f"repo:{_slug48(os.path.basename(root))}-{_sha(root, 12)}"]


# Recorded banks ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _queue_banks(path: str, _mtime_ns: int, _size: int) -> dict[str, frozenset[str]]:
    """A queue file's banks by document id ("" collects every record), read once per version of the file."""
    found: dict[str, set[str]] = {}
    try:
        with open_regular_file(Path(path)) as handle:
            for number, line in enumerate(handle):
                if number >= 1_000_000:
                    break
                try:
                    obj = jsoncodec.loads(line)  # whatever the extension's file holds: never a RecursionError
                except ValueError:
                    continue
                if not isinstance(obj, dict) or not isinstance(obj.get("bankId"), str):
                    continue
                found.setdefault("", set()).add(obj["bankId"])
                if isinstance(obj.get("documentId"), str):
                    found.setdefault(obj["documentId"], set()).add(obj["bankId"])
    except OSError:
        pass
    return {key: frozenset(value) for key, value in found.items()}


def _banks_in_lines(path: Path, document_id: str | None = None) -> set[str]:
    try:
        stat = path.stat()
    except OSError:
        return set()
    return set(_queue_banks(str(path), stat.st_mtime_ns, stat.st_size).get(document_id or "", frozenset()))


def recorded_banks(family: str, session_id: str, cwd: str, session_file: Path, env: Mapping[str, str]) -> set[str]:
    """Banks the live extension itself wrote down for this session: its retain queue records."""
    if family == HINDSIGHT_PI:
        return set().union(*(_banks_in_lines(queue_path(session_id, env, kind)) for kind in ("auto", "tool")))
    if family == PI_HINDSIGHT:  # its live document id under each spelling of the session's path (pi's own first)
        from hindsight_batch.extension.switches import path_hashes

        queue = Path(cwd) / ".pi" / "hindsight" / "retain-queue.jsonl"
        return set().union(*(_banks_in_lines(queue, f"pi-session:{digest}")
                             for digest in path_hashes(session_file, env)))
    return set()


def persisted_recall_bank(session_file: Path) -> str | None:
    """The bank named by the last persisted ``hindsight-recall`` entry (its ``details.bankId``), read without
    keeping any of its text."""
    bank: str | None = None
    try:
        with open_regular_file(session_file) as handle:  # a FIFO swapped in mid-run must not block the run
            for line in handle:
                if b"hindsight-recall" not in line or b"bankId" not in line:
                    continue
                try:
                    obj = jsoncodec.loads(line)
                except ValueError:
                    continue
                if not isinstance(obj, dict):
                    continue
                message = obj.get("message") if isinstance(obj.get("message"), dict) else obj
                details = message.get("details") if isinstance(message, dict) else None
                if isinstance(details, dict) and isinstance(details.get("bankId"), str):
                    bank = details["bankId"]
    except OSError:
        return None
    return bank


class BankResolver:
    """The project bank per session; git answers are cached per cwd."""

    def __init__(self, env: Mapping[str, str] | None = None, git: Git | None = None) -> None:
        self._env = dict(os.environ if env is None else env)
        self._git = git or Git(self._env)
        self._derived: dict[tuple[str, str, int, str | None], tuple[str, str] | Unreproducible] = {}
        self._tags: dict[str, list[str]] = {}
        from hindsight_batch.config.installed import Installed

        self._installed = Installed(self._env)

    def derive(self, resolved: ResolvedConfig, cwd: str, project: str, found: str | None = None) -> tuple[str, str]:
        """The bank by the rule in effect, and why. ``found``: the extension found installed where no configuration
        names one (:mod:`hindsight_batch.config.installed`): its defaults apply. Raises :class:`Unreproducible`."""
        settings = resolved.settings
        family = found or resolved.family
        theirs = resolved.family_files.get(PI_HINDSIGHT, [])
        origin = resolved.origin("banks.project.bankId")
        if family == HINDSIGHT_PI and settings.banks.project.bank_id and origin.split(" (")[0] not in theirs:
            bank = settings.banks.project.bank_id
            return bank, (f"banks.project.bankId ({resolved.origin('banks.project.bankId')}); note: hindsight-pi "
                          "itself does not read this key")
        if family == HINDSIGHT_PI:
            return hindsight_pi_bank(resolved, cwd, self._git)
        if family == PI_HINDSIGHT:
            return pi_hindsight_bank(resolved, cwd, self._git)
        from_env = resolved.origin("bankId").startswith(("env ", "flag "))  # the environment beats files
        if settings.banks.project.bank_id and not (settings.bank_id and from_env):
            return settings.banks.project.bank_id, f"banks.project.bankId ({resolved.origin('banks.project.bankId')})"
        if settings.bank_id:
            return settings.bank_id, f"bankId ({resolved.origin('bankId')})"
        from hindsight_batch.plan.items import own_project_bank_id  # items (and its models) load only when needed

        return own_project_bank_id(project, cwd), ("no extension configuration found: this tool's own rule "
                                                    "pi-<project>-<sha256(cwd)[:8]>")

    def family_tags(self, resolved: ResolvedConfig, cwd: str | None, found: str | None = None) -> list[str]:
        """Tags the configured extension (or the one ``found`` installed) adds that this tool's own do not cover
        (pi-hindsight's scope tags), so imported memories match its recall filters; none where they cannot be
        derived now."""
        if (found or resolved.family) != PI_HINDSIGHT or not cwd:
            return []
        if cwd not in self._tags:
            try:
                self._tags[cwd] = pi_hindsight_tags(cwd, self._git)
            except Unreproducible:
                self._tags[cwd] = []
        return self._tags[cwd]

    def choose(self, resolved: ResolvedConfig, cwd: str | None, project: str, session_id: str,
               session_file: Path) -> BankChoice:
        choice = self._choose(resolved, cwd, project, session_id, session_file)
        clash = user_bank_clash(resolved, choice.bank_id)
        return BankChoice(None, choice.why, clash) if clash else choice

    def derive_here(self, resolved: ResolvedConfig, cwd: str, project: str) -> tuple[str, str]:
        """:meth:`derive` with the extension found installed for ``cwd`` where no configuration names one, as an
        import chooses it (``status``). Raises :class:`Unreproducible`."""
        family, found_why, unnamed = self._found(resolved, cwd, None)
        bank, why = self.derive(resolved, cwd, project, family)
        if found_why:
            why = f"{found_why}: {why}"
        if unnamed:
            why = f"{why}; {unnamed} (import --apply does not send these sessions until then)"
        return bank, why

    def _found(self, resolved: ResolvedConfig, cwd: str, session_file: Path | None
               ) -> tuple[str | None, str, str | None]:
        """Where no configuration names an extension or a bank: the one found installed (its family and the
        signs), or none and what to name (:data:`NAME_ONE`)."""
        settings = resolved.settings
        if resolved.family != "none" or settings.extension != "auto" or settings.bank_id \
                or settings.banks.project.bank_id:
            return None, "", None
        found = self._installed(cwd, session_file)
        if len(found) == 1:
            ((family, signs),) = found.items()
            why = f"{family} found installed ({'; '.join(signs[:3])}), no configuration of it: its defaults"
            if family == HINDSIGHT_PI and "baseUrl" not in resolved.origins and "apiKey" not in resolved.origins:
                why += " (it is disabled until it is given a server: no config file, no HINDSIGHT_* variable)"
            return family, why, None
        if found:
            listed = "; ".join(f"{family}: {', '.join(s[:2])}" for family, s in sorted(found.items()))
            return None, "", f"both live extensions were found ({listed}): {NAME_ONE}"
        return None, "", f"no live extension was found (no configuration, package, extension file or entry): {NAME_ONE}"

    def _choose(self, resolved: ResolvedConfig, cwd: str | None, project: str, session_id: str,
                session_file: Path) -> BankChoice:
        if not cwd:
            return BankChoice(None, "", "the session header has no cwd", fix=f"a bank: {NAME_ONE.split('or a ')[-1]}")
        family, found_why, unnamed = self._found(resolved, cwd, session_file)
        key = (cwd, project, id(resolved), family)
        if key not in self._derived:
            try:
                self._derived[key] = self.derive(resolved, cwd, project, family)
            except Unreproducible as exc:
                self._derived[key] = exc
        derived = self._derived[key]
        recorded = recorded_banks(resolved.family, session_id, cwd, session_file, self._env)
        if isinstance(derived, Unreproducible):
            if not recorded and (family or resolved.family) == HINDSIGHT_PI:
                bank = persisted_recall_bank(session_file)
                recorded = {bank} if bank else set()
            if len(recorded) == 1:
                bank = next(iter(recorded))
                return BankChoice(bank, f"recorded by the extension for this session ({derived})")
            if len(recorded) > 1:
                return BankChoice(None, "", f"{derived}, and the extension recorded several banks for it: "
                                            f"{', '.join(sorted(recorded))}")
            fix = (f"--map {cwd}=<the folder where this repository is now>" if not os.path.isdir(cwd)
                   else f"a bank: {NAME_ONE.split('or a ')[-1]}")
            return BankChoice(None, "", f"{derived}, and the extension recorded no bank for it", fix=fix)
        bank, why = derived
        if found_why:
            why = f"{found_why}: {why}"
        others = sorted(recorded - {bank})
        if others:
            return BankChoice(None, why, f"the extension recorded bank {', '.join(others)} for this session but "
                                         f"its rule now gives {bank} ({why}); not guessing")
        return BankChoice(bank, why, unnamed=unnamed, found=family)


def project_name(settings: Settings, cwd: str | None) -> str:
    """The session's project, as its bank is chosen, ``--project`` filters and ``status`` shows it:
    ``projectName``, else the cwd's last folder."""
    return (settings.project_name or "").strip() or _folder_name(cwd)


@functools.lru_cache(maxsize=1024)
def _folder_name(cwd: str | None) -> str:
    """The last folder of ``cwd``, once per cwd (a path object per file costs a re-run over many files)."""
    return Path(cwd or "").name


def user_bank_clash(resolved: ResolvedConfig, bank_id: str | None) -> str | None:
    """Why ``bank_id`` may not be a project bank: it is the User Bank's id (S2: a session's transcript never lands
    in the User Bank, whichever file, variable or rule named it), else None."""
    user = resolved.settings.banks.user.bank_id
    if not bank_id or not user or bank_id != user:
        return None
    return (f"its project bank {bank_id} is the User Bank (banks.user.bankId, {resolved.origin('banks.user.bankId')}); "
            "transcripts are never written to the User Bank: give the project another bank")


def with_project_bank(settings: Settings, bank_id: str, extra_tags: list[str] | None = None) -> Settings:
    """The settings with the chosen project bank in ``banks.project.bankId`` (where planning takes it from), and
    the extension's own extra tags after ``constantTags``."""
    project = settings.banks.project.model_copy(update={"bank_id": bank_id})
    update: dict[str, object] = {"banks": settings.banks.model_copy(update={"project": project})}
    if extra_tags:
        update["constant_tags"] = list(dict.fromkeys([*settings.constant_tags, *extra_tags]))
    return settings.model_copy(update=update)
