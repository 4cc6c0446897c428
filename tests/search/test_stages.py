from __future__ import annotations

import pytest

from markus_memory.search.stages import without_speaker


@pytest.mark.parametrize(
    ("query", "named", "embedded"),
    [
        ("What did Melanie paint?", {"melanie"}, "What did paint?"),
        ("What do Melanie's kids like?", {"melanie"}, "What do kids like?"),
        ("What do MELANIE\u2019s kids like?", {"melanie"}, "What do kids like?"),
        ("Did Melanielle call?", {"melanie"}, "Did Melanielle call?"),
        (
            "What did Jon say about Gina's store?",
            {"jon", "gina"},
            "What did Jon say about Gina's store?",
        ),
        ("What did they paint?", set(), "What did they paint?"),
        ("Melanie?", {"melanie"}, "Melanie?"),
    ],
)
def test_without_speaker_takes_out_one_named_speaker_only(
    query: str, named: set[str], embedded: str
) -> None:
    assert without_speaker(query, named) == embedded
