"""One setting chooses the embedder (MARKUS_EMBEDDER / Settings.embedder), and every door that
opens an agent from the environment honours it: the library, the CLI, the UI, the MCP server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from markus_memory import InvalidInputError, MiniLMEmbedder, Settings, open_agent
from markus_memory.search.embedders import MINILM_MODEL, SharedMiniLM, minilm_installed

PUPPY = "I adopted a puppy from the shelter last week."
SAID = [PUPPY, "The quarterly report is due on Friday.", "Our team moved to the third floor."]


def test_the_environment_chooses_and_code_says_so_itself() -> None:
    assert Settings.from_env({}).embedder == "auto"
    assert Settings.from_env({"MARKUS_EMBEDDER": " MiniLM "}).embedder == "minilm"
    assert Settings.from_env({"MARKUS_EMBEDDER": "none"}).embedder == "none"
    assert Settings().embedder == "none", "settings made in code use no embedder unless told"
    with pytest.raises(InvalidInputError, match="MARKUS_EMBEDDER"):
        Settings.from_env({"MARKUS_EMBEDDER": "bert"})


def test_an_agent_opened_without_an_embedder_takes_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not minilm_installed():
        pytest.skip("the [semantic] extra is not installed")
    for choice, expected in (("auto", MINILM_MODEL), ("minilm", MINILM_MODEL), ("none", None)):
        monkeypatch.setenv("MARKUS_EMBEDDER", choice)
        with open_agent("alice") as mem:
            assert getattr(mem.embedder, "model", None) == expected, choice
    monkeypatch.setenv("MARKUS_EMBEDDER", "minilm")
    with open_agent("alice", settings=Settings(home=Path(os.environ["MARKUS_HOME"]))) as mem:
        assert mem.embedder is None, "explicit settings keep their own choice"
    assert isinstance(SharedMiniLM(), SharedMiniLM)


def record(home: Path) -> list[str]:
    """Three turns with their MiniLM vectors, and what the library recalls for a question
    that shares no word with the answer."""
    settings = Settings(home=home)
    with open_agent("alice", settings=settings) as mem:
        session = mem.sessions.get_or_create("chat")
        for text in SAID:
            mem.sessions.append(session.id, {"role": "user", "content": text})
        assert mem.recall_conversation("my new dog", limit=1) == [], "no word in common"
    with open_agent("alice", settings=settings, embedder=MiniLMEmbedder()) as mem:
        mem.catch_up_transcripts()
        return [hit.text for hit in mem.recall_conversation("my new dog", limit=1)]


@pytest.mark.slow
def test_the_mcp_server_recalls_with_the_configured_embedder_as_the_library(
    tmp_path: Path,
) -> None:
    if not minilm_installed():
        pytest.skip("the [semantic] extra is not installed")
    mcp = pytest.importorskip("mcp")
    from tests.test_mcp_server import markus_command, with_client

    home = tmp_path / "home"
    library = record(home)
    assert library == [PUPPY]
    answers = {}
    for choice in ("minilm", "none"):
        params = mcp.StdioServerParameters(
            command=markus_command(),
            args=["serve", "--agent", "alice", "--home", str(home)],
            env={**os.environ, "MARKUS_EMBEDDER": choice},
        )

        async def body(client: mcp.Client) -> object:
            return await client.call_tool(
                "recall_conversation", {"query": "my new dog", "limit": 1}
            )

        result = with_client(params, body)
        answers[choice] = [hit["content"] for hit in json.loads(result.content[0].text)["results"]]
    assert answers == {"minilm": library, "none": []}
