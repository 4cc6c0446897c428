"""Issue 28: recall hits from one short session repeated the same turns once per hit; the
windows of hits of one session that overlap or touch are now merged into one passage."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from markus_memory import open_agent
from markus_memory.cli import cli
from markus_memory.search.passages import merge_hits
from markus_memory.search.recall import ContextTurn, ConversationHit


def hit(session: str, index: int, score: float, neighbours: int, length: int) -> ConversationHit:
    def turn(i: int) -> ContextTurn:
        return ContextTurn(i, "user", None, f"{session} turn {i}")

    return ConversationHit(
        session,
        index,
        "user",
        None,
        f"{session} turn {index}",
        score,
        None,
        {},
        tuple(turn(i) for i in range(max(0, index - neighbours), index)),
        tuple(turn(i) for i in range(index + 1, min(length, index + neighbours + 1))),
    )


@st.composite
def ranked_hits(draw: st.DrawFn) -> list[ConversationHit]:
    neighbours = draw(st.integers(0, 3))
    picked = draw(
        st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 15)), unique=True, max_size=12)
    )
    return [hit(s, i, 100.0 - rank, neighbours, 16) for rank, (s, i) in enumerate(picked)]


@given(ranked_hits())
def test_every_turn_is_shown_once_and_passages_never_overlap(hits: list[ConversationHit]) -> None:
    passages = merge_hits(hits)
    shown = [(p.session_id, t.index) for p in passages for t in p.turns]
    assert len(shown) == len(set(shown))
    wanted = {(h.session_id, t.index) for h in hits for t in (*h.before, *h.after)} | {
        (h.session_id, h.index) for h in hits
    }
    assert set(shown) == wanted
    assert sorted((p.session_id, t.index) for p in passages for t in p.turns if t.hit) == sorted(
        (h.session_id, h.index) for h in hits
    )
    for p in passages:
        assert [t.index for t in p.turns] == sorted(t.index for t in p.turns)
        for q in passages:
            if p is not q and p.session_id == q.session_id:
                assert p.turns[-1].index + 1 < q.turns[0].index or (
                    q.turns[-1].index + 1 < p.turns[0].index
                )
    best = [p.score for p in passages]
    assert best == sorted(best, reverse=True)


def test_hits_of_one_short_session_make_one_passage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_agent("alice", home) as mem:
        session = mem.sessions.get_or_create("chat_1")
        for i, text in enumerate(
            [
                "the facet count query was slow",
                "which facet count query?",
                "the facet count query on search",
                "a materialised view fixed the facet count query",
            ]
        ):
            role = "user" if i % 2 == 0 else "assistant"
            mem.sessions.append(session.id, {"role": role, "content": text})
        hits = mem.recall_conversation("facet count query", limit=10, neighbours=2)
    assert len(hits) == 4
    assert sum(len(h.before) + 1 + len(h.after) for h in hits) > 4  # the windows overlap
    (passage,) = merge_hits(hits)
    assert [t.index for t in passage.turns] == sorted(h.index for h in hits)
    assert passage.hits == 4
    shown = CliRunner().invoke(
        cli,
        [
            "--home",
            str(home),
            "recall",
            "conversation",
            "facet count query",
            "-a",
            "alice",
            "--context",
            "2",
        ],
    )
    assert shown.exit_code == 0, shown.output
    for text in ("the facet count query was slow", "a materialised view fixed"):
        assert shown.output.count(text) == 1, shown.output
