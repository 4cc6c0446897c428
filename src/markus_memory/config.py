"""Limits, settings, paths and the clock: every tunable number of the memory lives here.

The defaults are the constants of the original Markus system; each one can be
overridden per agent by passing a modified :class:`Limits` (``dataclasses.replace``) in
:class:`Settings`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from .errors import InvalidInputError

HOME_ENV = "MARKUS_HOME"
DATABASE_URL_ENV = "MARKUS_DATABASE_URL"
POSTGRES_URL_SCHEMES = ("postgresql://", "postgres://")
DOCUMENTS_ENV = "MARKUS_DOCUMENTS"
EMBEDDER_ENV = "MARKUS_EMBEDDER"
EMBEDDERS = ("auto", "minilm", "none")
"""What ``embedder`` may say: the local MiniLM when the ``[semantic]`` extra is installed
(``auto``), always (``minilm``: an error without the extra), or no vectors (``none``)."""
DEFAULT_HOME = "~/.markus"
# The observation types of knowledge.md (as in the original); any other type is stored as "note".
OBSERVATION_TYPES = ("conversation", "fact", "task_result", "note", "insight")

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def iso_ms(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ``: JavaScript's ``toISOString`` form, used in Markus files."""
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the Unix epoch."""
    return int(moment.timestamp() * 1000)


def from_epoch_ms(ms: int) -> datetime:
    """The UTC datetime of a millisecond epoch value."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def rand36(n: int) -> str:
    """``n`` random base-36 characters (``0-9a-z``): the random tail of Markus ids."""
    return "".join(secrets.choice("0123456789abcdefghijklmnopqrstuvwxyz") for _ in range(n))


def parse_iso(text: str) -> datetime | None:
    """Parse an ISO timestamp or ``YYYY-MM-DD`` date (read as UTC midnight); None if unparsable."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


@dataclass(frozen=True)
class Limits:
    """Every memory-related constant of the original Markus system, overridable per agent."""

    # knowledge.md (semantic)
    section_max_chars: int = 3000
    curated_max_chars: int = 15000
    max_observations: int = 500
    curated_hit_preview_chars: int = 2500
    curated_search_boost: float = 0.25
    # prompt injection
    knowledge_prompt_chars: int = 8000
    knowledge_prompt_max_tokens: int = 1500
    knowledge_prompt_max_tokens_converse: int = 1200
    knowledge_prompt_max_tokens_reflex: int = 0
    state_prompt_max_lines_reflex: int = 5
    # state.md
    state_ttl_days: int = 7
    # NOTEBOOK.md
    notebook_max_agent_entries: int = 4
    notebook_max_chars_per_entry: int = 6000
    notebook_max_chars_per_system_entry: int = 6000
    # sessions
    max_sessions_in_memory: int = 20
    session_compact_trigger: int = 2000
    session_compact_keep: int = 1000
    session_tool_shrink_chars: int = 100_000
    session_restore_max_messages: int = 80
    session_restore_max_message_tokens: int = 24_000
    session_message_max_bytes: int = 4 * 1024 * 1024
    """Largest session message accepted (its compact JSON in UTF-8); larger appends are refused."""
    history_item_max_bytes: int = 64 * 1024 * 1024
    """Largest item of a framework-owned history (its JSON in UTF-8); larger ones are refused."""
    recall_text_max_chars: int = 100_000
    """The text recall indexes of one stored message is shortened to this many characters
    (the message itself is kept whole)."""
    # activities
    recall_content_truncate: int = 500
    recall_default_limit: int = 5
    recall_max_limit: int = 20
    # dream
    dream_min_observations: int = 50
    dream_max_entries_for_llm: int = 500
    dream_entry_preview_chars: int = 200
    dream_knowledge_preview_chars: int = 1500
    dream_max_remove: int = 50
    dream_max_merge: int = 20
    dream_max_promote: int = 20
    dream_min_promote_sources: int = 3
    dream_heavy_runs_per_day: int = 4
    dream_heavy_min_observations: int = 450
    # memory flush
    memory_flush_threshold_percent: float = 75.0
    memory_flush_min_messages: int = 20
    memory_flush_min_assistant_chars: int = 100
    # relevant-context retrieval
    memory_search_top_k: int = 5

    def __post_init__(self) -> None:
        # Every limit is a size, a count, a share or a threshold: refuse a negative one, or
        # one that is no number, before an agent runs with it.
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise InvalidInputError(
                    f"Limits.{name} must be a number of 0 or more, got {value!r}"
                )

    def knowledge_tokens_for(self, profile: str) -> int:
        """Token cap of the ``## Your Knowledge`` block for a prompt profile."""
        if profile == "reflex":
            return self.knowledge_prompt_max_tokens_reflex
        if profile == "converse":
            return self.knowledge_prompt_max_tokens_converse
        return self.knowledge_prompt_max_tokens


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$MARKUS_HOME`` or ``~/.markus`` (never created here)."""
    env = os.environ if environ is None else environ
    return Path(env.get(HOME_ENV) or DEFAULT_HOME).expanduser()


@dataclass(frozen=True)
class Settings:
    """Where the memory lives and how it behaves. Build with :meth:`from_env` or directly."""

    home: Path = field(default_factory=default_home)
    database_url: str | None = None
    limits: Limits = field(default_factory=Limits)
    clock: Clock = utc_now
    lock_timeout_seconds: float = 30.0
    documents: str = "auto"
    """Where the markdown layers live: ``"auto"`` (PostgreSQL when ``database_url`` is a
    ``postgresql://`` URL, else files), ``"files"`` or ``"postgres"`` (``MARKUS_DOCUMENTS``)."""
    embedder: str = "none"
    """Which embedder an agent opened without one uses (``EMBEDDERS``). Settings made in code
    use none unless they say so; :meth:`from_env` (every command, the MCP server, the UI and
    ``open_agent`` without settings) reads ``MARKUS_EMBEDDER``, ``auto`` when it is unset."""

    def __post_init__(self) -> None:
        # ``home`` may be given as a string and may start with ``~``: always a Path with the
        # user's home expanded, so "~/.markus" never becomes a literal ``./~`` folder.
        home = self.home
        if not isinstance(home, (str, os.PathLike)):
            raise InvalidInputError(f"home must be a path, got {type(home).__name__}")
        object.__setattr__(self, "home", Path(home).expanduser())
        if self.embedder not in EMBEDDERS:
            raise InvalidInputError(
                f"embedder (MARKUS_EMBEDDER) must be one of {', '.join(EMBEDDERS)}, "
                f"got {self.embedder!r}"
            )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, home: Path | str | None = None
    ) -> Settings:
        """Settings from ``MARKUS_HOME``, ``MARKUS_DATABASE_URL``, ``MARKUS_DOCUMENTS`` and
        ``MARKUS_EMBEDDER`` (``auto`` when unset); ``home`` wins if given."""
        env = os.environ if environ is None else environ
        resolved = Path(home).expanduser() if home is not None else default_home(env)
        return cls(
            home=resolved,
            database_url=env.get(DATABASE_URL_ENV) or None,
            documents=env.get(DOCUMENTS_ENV) or "auto",
            embedder=(env.get(EMBEDDER_ENV) or "auto").strip().lower(),
        )

    @property
    def backend(self) -> Literal["sqlite", "postgres"]:
        """The one rule for what a URL means: any ``database_url`` selects PostgreSQL (and must
        start with ``postgresql://`` or ``postgres://``, else :class:`InvalidInputError`);
        without one, everything lives in ``<home>/data.db`` and the agent directories."""
        if not self.database_url:
            return "sqlite"
        if not self.database_url.startswith(POSTGRES_URL_SCHEMES):
            raise InvalidInputError(
                "a database_url (MARKUS_DATABASE_URL) starts with postgresql:// or postgres://"
            )
        return "postgres"

    @property
    def documents_on_postgres(self) -> bool:
        """Whether the markdown layers live in PostgreSQL (see :attr:`documents`)."""
        if self.documents == "files":
            return False
        on_pg = self.backend == "postgres"
        if self.documents == "postgres":
            if not on_pg:
                raise InvalidInputError(
                    "documents='postgres' needs a postgresql:// database_url (MARKUS_DATABASE_URL)"
                )
            return True
        if self.documents != "auto":
            raise InvalidInputError(
                f"documents must be 'auto', 'files' or 'postgres', got {self.documents!r}"
            )
        return on_pg

    @property
    def agents_dir(self) -> Path:
        return self.home / "agents"

    @property
    def database_path(self) -> Path:
        return self.home / "data.db"

    def agent_dir(self, agent_id: str) -> Path:
        return self.agents_dir / agent_id


@dataclass(frozen=True)
class AgentPaths:
    """The Markus on-disk layout of one agent, as the original Markus system writes it."""

    root: Path

    @property
    def notebook(self) -> Path:
        return self.root / "NOTEBOOK.md"

    @property
    def knowledge(self) -> Path:
        return self.root / "knowledge.md"

    @property
    def state(self) -> Path:
        return self.root / "state.md"

    @property
    def legacy_memory(self) -> Path:
        return self.root / "MEMORY.md"

    @property
    def legacy_memories_json(self) -> Path:
        return self.root / "memories.json"

    @property
    def role_dir(self) -> Path:
        return self.root / "role"

    @property
    def role(self) -> Path:
        return self.role_dir / "ROLE.md"

    @property
    def heartbeat(self) -> Path:
        return self.role_dir / "HEARTBEAT.md"

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def daily_logs_dir(self) -> Path:
        return self.root / "daily-logs"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"
