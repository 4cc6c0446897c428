from __future__ import annotations

import pytest

from markus_memory.search.stages import in_first_person


@pytest.mark.parametrize(
    ("query", "named", "embedded"),
    [
        ("What did Melanie paint?", {"melanie"}, "What did I paint?"),
        ("What do Melanie's kids like?", {"melanie"}, "What do my kids like?"),
        ("What do MELANIE\u2019s kids like?", {"melanie"}, "What do my kids like?"),
        ("Did Melanielle call Melanie?", {"melanie"}, "Did Melanielle call I?"),
        ("What did Jon say of Gina's store?", {"jon", "gina"}, "What did Jon say of Gina's store?"),
        ("What did they paint?", set(), "What did they paint?"),
    ],
)
def test_in_first_person_rewrites_one_named_speaker_only(
    query: str, named: set[str], embedded: str
) -> None:
    assert in_first_person(query, named) == embedded
