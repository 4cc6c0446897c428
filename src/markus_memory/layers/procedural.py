"""Procedural memory: the agent's role/ROLE.md, HEARTBEAT.md and POLICIES.md, and role templates.

:class:`RoleLoader` reads the agent's own role files and re-reads them whenever their
:meth:`DocumentStore.version` changes (checked on every access; no watcher thread), so an edit by
the agent (``file_write``) or by a person is seen on the next call. A missing ROLE.md gives a
default role named after the agent; a missing HEARTBEAT.md gives
:data:`DEFAULT_HEARTBEAT_CHECKLIST`. Bytes that are not UTF-8 raise :class:`CorruptFileError`.

:class:`RoleTemplates` is the template side (the original's role loader): role directories
containing a ROLE.md under ``$MARKUS_TEMPLATES_DIR/roles`` or ``<cwd>/templates/roles``.
Unlike the original, text before the first ``## `` of POLICIES.md never becomes a policy.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .._docs import ROLE_DIR, DocumentStore, DocumentVersion
from .._fs import read_text
from .._fs_docs import FileDocuments
from .._lock import AgentLock
from ..config import AgentPaths, Clock, Limits
from ..errors import InvalidInputError, NotFoundError

TEMPLATES_ENV = "MARKUS_TEMPLATES_DIR"
DEFAULT_HEARTBEAT_CHECKLIST = (
    "- Check your notebook for a task in progress and continue it; keep its entry current "
    "with update_notebook."
)
ROLE_FILES = ("ROLE.md", "HEARTBEAT.md", "POLICIES.md")

_TITLE = re.compile(r"^#\s+(.+)$", re.MULTILINE)
_POLICY_SPLIT = re.compile(r"^##[ \t]+", re.MULTILINE)
_BULLET = re.compile(r"^[-*]\s*")
_CATEGORIES = (
    (("develop", "engineer"), "engineering"),
    (("product",), "product"),
    (("operation", "ops", "manager"), "operations"),
    (("market",), "marketing"),
    (("customer", "support"), "customer_service"),
    (("financ", "account"), "finance"),
    (("legal", "compliance"), "legal"),
)


@dataclass(frozen=True)
class Policy:
    """One ``## name`` block of POLICIES.md with its bullet rules."""

    name: str
    rules: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class Role:
    """A loaded role: ROLE.md verbatim as the system prompt, plus heartbeat and policies."""

    id: str
    name: str
    description: str
    category: str
    system_prompt: str
    heartbeat_checklist: str
    policies: tuple[Policy, ...]
    source_path: Path | None
    built_in: bool = True
    default_skills: tuple[str, ...] = ()


def role_name(text: str, fallback: str) -> str:
    """The first ``# `` heading's text, else ``fallback``."""
    match = _TITLE.search(text)
    return match.group(1).strip() if match else fallback


def role_description(text: str) -> str:
    """The first non-empty line that is not a heading."""
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped
    return ""


def infer_category(name: str) -> str:
    lowered = name.lower()
    for needles, category in _CATEGORIES:
        if any(needle in lowered for needle in needles):
            return category
    return "custom"


def parse_policies(text: str) -> tuple[Policy, ...]:
    """POLICIES.md: each ``## name`` block with its ``-``/``*`` bullets as rules."""
    policies = []
    for chunk in _POLICY_SPLIT.split(text)[1:]:
        first, _, rest = chunk.partition("\n")
        name = first.strip()
        if not name or name.startswith("#"):
            continue
        rules = (_BULLET.sub("", line.strip()).strip() for line in rest.split("\n"))
        policies.append(Policy(name, tuple(rule for rule in rules if rule)))
    return tuple(policies)


def _role_id(path: Path) -> str:
    return "role_" + hashlib.sha1(str(path).encode("utf-8")).hexdigest()[:24]


def build_role(directory: Path, fallback_name: str, category_hint: str) -> Role:
    """Read a role directory (ROLE.md required by the caller, the others optional)."""
    texts = [read_text(directory / name) for name in ROLE_FILES]
    return role_from_texts(directory, fallback_name, category_hint, *texts)


def role_from_texts(
    directory: Path,
    fallback_name: str,
    category_hint: str,
    role_text: str | None,
    heartbeat: str | None,
    policies_text: str | None,
) -> Role:
    """The role made of ROLE.md, HEARTBEAT.md and POLICIES.md texts (None: absent)."""
    system_prompt = role_text or ""
    policies = policies_text or ""
    return Role(
        id=_role_id(directory.resolve()),
        name=role_name(system_prompt, fallback_name),
        description=role_description(system_prompt),
        category=infer_category(category_hint),
        system_prompt=system_prompt,
        heartbeat_checklist=heartbeat if heartbeat is not None else "",
        policies=parse_policies(policies),
        source_path=directory / "ROLE.md",
    )


class RoleTemplates:
    """Role templates: sub-directories of the template dirs that contain a ROLE.md."""

    def __init__(
        self,
        dirs: Sequence[Path | str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        if dirs:
            self._dirs = [Path(d) for d in dirs]
        else:
            env = os.environ if environ is None else environ
            base = env.get(TEMPLATES_ENV)
            root = Path(base) if base else (cwd or Path.cwd()) / "templates"
            self._dirs = [root / "roles"]

    def template_dirs(self) -> list[Path]:
        return list(self._dirs)

    def list_available_roles(self) -> list[str]:
        names: list[str] = []
        for directory in self._dirs:
            if not directory.is_dir():
                continue
            for child in sorted(directory.iterdir()):
                if (child / "ROLE.md").is_file() and child.name not in names:
                    names.append(child.name)
        return names

    def resolve_template_dir(self, name_or_path: str) -> Path | None:
        if not isinstance(name_or_path, str) or not name_or_path.strip():
            raise InvalidInputError("role name must be a non-empty string")
        direct = Path(name_or_path)
        if (direct / "ROLE.md").is_file():
            return direct
        for directory in self._dirs:
            if (directory / name_or_path / "ROLE.md").is_file():
                return directory / name_or_path
        return None

    def load_role(self, name_or_path: str) -> Role:
        directory = self.resolve_template_dir(name_or_path)
        if directory is None:
            raise NotFoundError(f"Role not found: {name_or_path}")
        return build_role(directory, name_or_path, name_or_path)


class RoleLoader:
    """The agent's own role files with hot reload (``<agent dir>/role/``)."""

    def __init__(
        self,
        paths: AgentPaths,
        lock: AgentLock,
        limits: Limits,
        clock: Clock,
        *,
        templates: RoleTemplates | None = None,
        documents: DocumentStore | None = None,
    ) -> None:
        self.directory = paths.role_dir
        self.agent_name = paths.root.name
        self.templates = templates if templates is not None else RoleTemplates()
        self.documents = documents if documents is not None else FileDocuments(paths.root, lock)
        self._lock = lock
        self._cache: tuple[tuple[DocumentVersion | None, ...], Role] | None = None

    def _signatures(self) -> tuple[DocumentVersion | None, ...]:
        return tuple(self.documents.version(f"{ROLE_DIR}/{name}") for name in ROLE_FILES)

    def role(self) -> Role:
        """The current role; re-read when any role file changed on disk since the last call."""
        sigs = self._signatures()
        if self._cache is not None and self._cache[0] == sigs:
            return self._cache[1]
        texts = [self.documents.read(f"{ROLE_DIR}/{name}") for name in ROLE_FILES]
        role = role_from_texts(self.directory, self.agent_name, self.agent_name, *texts)
        if sigs[1] is None:
            role = _with_heartbeat(role, DEFAULT_HEARTBEAT_CHECKLIST)
        self._cache = (sigs, role)
        return role

    def heartbeat(self) -> str:
        """The heartbeat checklist: HEARTBEAT.md, or the default one when there is none."""
        return self.role().heartbeat_checklist or DEFAULT_HEARTBEAT_CHECKLIST

    def system_prompt(self) -> str:
        return self.role().system_prompt

    def install(self, name_or_path: str, *, overwrite: bool = False) -> Role:
        """Copy a template's role files into the agent's role dir (kept if present)."""
        source = self.templates.resolve_template_dir(name_or_path)
        if source is None:
            raise NotFoundError(f"Role not found: {name_or_path}")
        with self.documents.lock():
            for name in (*ROLE_FILES, "CONTEXT.md"):
                text = read_text(source / name)
                target = f"{ROLE_DIR}/{name}"
                if text is not None and (overwrite or not self.documents.exists(target)):
                    self.documents.write(target, text)
        return self.role()


def _with_heartbeat(role: Role, checklist: str) -> Role:
    return replace(role, heartbeat_checklist=checklist)
