from __future__ import annotations

from dataclasses import replace

from markus_memory.config import Limits
from markus_memory.dream.prompt import HEADER, KNOWLEDGE_HEADING, build_request
from tests.dream.obs import obs


def test_prompt_lists_id_type_date_tags_and_a_preview() -> None:
    entries = [obs(1, "short fact", ("ops", "deploy")), obs(2, "x" * 500, type="note")]
    request = build_request(entries, "# Knowledge\n\n## procedures\nstep", Limits())
    text = request.messages[-1]["content"]
    assert text.startswith(HEADER)
    assert "[1] id=obs_1 type=fact date=2026-11-01 [tags: ops, deploy]\nshort fact" in text
    assert ("x" * 200) in text and ("x" * 201) not in text
    assert KNOWLEDGE_HEADING in text and "## procedures\nstep" in text
    assert request.batch == {"obs_1": "short fact", "obs_2": "x" * 500}
    assert all(m["role"] in ("system", "user") for m in request.messages)


def test_only_the_most_recent_entries_are_sent() -> None:
    limits = replace(Limits(), dream_max_entries_for_llm=3)
    request = build_request([obs(i, f"fact {i}") for i in range(5)], "", limits)
    assert list(request.batch) == ["obs_2", "obs_3", "obs_4"]
    text = request.messages[-1]["content"]
    assert "showing the most recent 3 of 5" in text
    assert KNOWLEDGE_HEADING not in text


def test_existing_knowledge_is_previewed_only() -> None:
    limits = replace(Limits(), dream_knowledge_preview_chars=10)
    text = build_request([obs(1, "a")], "0123456789ABCDEF", limits).messages[-1]["content"]
    assert "0123456789" in text and "A" not in text.split(KNOWLEDGE_HEADING)[1].split("##")[0]
