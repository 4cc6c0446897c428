"""What a model is told never includes where the memory lives on the host.

Error texts from the layers name files by their absolute paths (useful to the host, in its
logs); before such a text reaches a model the agent directory and the memory home are cut
from every path in it, so ``/home/ana/.markus/agents/alice/knowledge.md`` reads
``knowledge.md``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import AgentMemory


def hide_host_paths(text: str, memory: AgentMemory, *, shown: dict[Path, str] | None = None) -> str:
    """``text`` with the agent directory and the home left out of the paths in it.

    ``shown`` maps further directories to the name the model knows them by (e.g. the
    Anthropic memory tool's ``/memories``); the longest directory is replaced first.
    """
    names = {memory.directory: "", memory.settings.home: "", **(shown or {})}
    forms: dict[str, str] = {}
    for directory, name in names.items():
        for form in {str(directory), str(directory.resolve())}:
            forms[form + os.sep] = name + "/" if name else ""
            forms[form] = name or "the memory's directory"
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, forms[form])
    return text
