"""The markdown layers of one agent seen as files: read their text, write a new text through
the layer, so that its locks, caps and refusals hold whoever edits the "file".

Used by the Anthropic memory tool backend (what a new text becomes is decided first, by
:mod:`._layer_text`); no framework is imported here. A write that a layer
refuses raises :class:`LayerRefusal` with the layer's reason, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .._fs import validate_key
from .._markdown import split_h2
from ..errors import InvalidInputError, MarkusMemoryError
from ..layers._knowledge_format import parse_knowledge
from ..layers.notebook import NotebookEntry, parse_notebook
from ..layers.state import parse_state_entry
from ._layer_text import LayerRefusal, settle

if TYPE_CHECKING:
    from .._docs import DocumentStore
    from ..memory import AgentMemory


class _Stored(Protocol):
    """A layer kept as one document (NotebookFile, StateFile, KnowledgeFile)."""

    @property
    def documents(self) -> DocumentStore: ...

    @property
    def store_name(self) -> str: ...


@dataclass(frozen=True)
class LayerFile:
    """One markdown layer shown as a file: its name, what it is, how to read and write it."""

    name: str
    description: str
    read: Callable[[AgentMemory], str]
    write: Callable[[AgentMemory, str], None]
    stored: Callable[[AgentMemory], _Stored]


def _write_knowledge(memory: AgentMemory, text: str) -> None:
    parsed = parse_knowledge(text, memory.settings.clock())
    with memory.knowledge.transaction() as doc:  # validated and capped as one write
        doc.preamble, doc.sections = parsed.preamble, parsed.sections
        doc.observations = parsed.observations


def _write_notebook(memory: AgentMemory, text: str) -> None:
    limits = memory.settings.limits
    wanted = parse_notebook(text, memory.settings.clock()).entries
    current = {e.key: e for e in memory.notebook.entries()}
    new = {e.key: e for e in wanted}
    for entry in wanted:
        validate_key("notebook key", entry.key)
    for key, entry in current.items():
        if entry.managed != "agent" and _differs(entry, new.get(key)):
            raise LayerRefusal(
                f"the notebook entry {key!r} is managed by the {entry.managed}; leave it as it "
                "is (agent edits never change or remove system entries)"
            )
    for entry in wanted:
        if entry.managed != "agent" and entry.key not in current:
            raise LayerRefusal(
                f"the notebook entry {entry.key!r} is marked managed: {entry.managed}; only the "
                "system adds such entries. Remove that line to keep it as your own entry"
            )
    agents = [e for e in wanted if e.managed == "agent"]
    if len(agents) > limits.notebook_max_agent_entries:
        raise LayerRefusal(
            f"the notebook holds at most {limits.notebook_max_agent_entries} entries of your "
            f"own, this text has {len(agents)}; merge or remove some"
        )
    for entry in agents:
        if len(entry.text) > limits.notebook_max_chars_per_entry:
            raise LayerRefusal(
                f"the notebook entry {entry.key!r} has {len(entry.text)} chars, over its limit "
                f"of {limits.notebook_max_chars_per_entry}; shorten it"
            )
    for key, entry in current.items():
        if entry.managed == "agent" and key not in new:
            memory.notebook.clear(key)
    for entry in agents:
        if _differs(current.get(entry.key), entry):
            memory.notebook.upsert(entry.key, entry.text)


def _differs(old: NotebookEntry | None, new: NotebookEntry | None) -> bool:
    if old is None or new is None:
        return old is not new
    return (old.text, old.managed) != (new.text, new.managed)


def _write_state(memory: AgentMemory, text: str) -> None:
    wanted = [parse_state_entry(s) for s in split_h2(text)[1]]
    for entry in wanted:
        validate_key("state key", entry.key)
        if not entry.content:
            raise LayerRefusal(f"the state entry {entry.key!r} is empty; remove its heading")
    current = {e.key: e.content for e in memory.state.entries()}
    new = {e.key: e.content for e in wanted}
    for key in current:
        if key not in new:
            memory.state.clear(key)
    for key, content in new.items():
        if current.get(key) != content:
            memory.state.update(key, content)


LAYER_FILES = (
    LayerFile(
        "knowledge.md",
        "the agent's semantic memory (curated sections and observations)",
        lambda m: m.knowledge.text(),
        _write_knowledge,
        lambda m: m.knowledge,
    ),
    LayerFile(
        "NOTEBOOK.md",
        "the agent's working memory (notebook entries)",
        lambda m: m.notebook.text(),
        _write_notebook,
        lambda m: m.notebook,
    ),
    LayerFile(
        "state.md",
        "the agent's current state snapshots",
        lambda m: m.state.text(),
        _write_state,
        lambda m: m.state,
    ),
)
"""The layers shown as files, by name."""

BY_NAME = {layer.name: layer for layer in LAYER_FILES}


def write_layer(memory: AgentMemory, layer: LayerFile, old: str, new: str) -> list[str]:
    """Write the model's ``new`` text of ``layer`` (it read ``old``) through the layer, as
    :func:`~._layer_text.settle` makes it; :class:`LayerRefusal` (nothing written) if refused.
    Returns notes for the model on what its free lines became."""
    text, notes = settle(layer.name, old, new, memory.settings.clock())
    try:
        _all_or_nothing(memory, layer, text)
    except InvalidInputError as exc:
        raise LayerRefusal(f"{layer.name} was not changed: {exc}") from None
    except MarkusMemoryError as exc:
        raise LayerRefusal(f"{layer.name} could not be written: {exc}") from None
    return notes


def _all_or_nothing(memory: AgentMemory, layer: LayerFile, text: str) -> None:
    """``layer.write``, which may take several layer writes (one per entry): when one of them
    fails, the document is put back as it was, so a refused command changes nothing."""
    stored = layer.stored(memory)
    documents, name = stored.documents, stored.store_name
    with documents.lock():
        before = documents.read(name)
        try:
            layer.write(memory, text)
        except BaseException:
            if documents.read(name) != before:
                if before is None:
                    documents.delete(name)
                else:
                    documents.write(name, before)
            raise
