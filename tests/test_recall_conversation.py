"""AgentMemory.recall_conversation through the public API (sessions feed the index)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.errors import InvalidIdError, InvalidInputError
from markus_memory.search.embedders import FakeEmbedder
from markus_memory.search.recall import NOT_NAMES, named_in, speaker_of

T0 = datetime(2023, 5, 8, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def fill(mem, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    first = mem.sessions.get_or_create("chat_1")
    for role, speaker, text in [
        ("user", "Caroline", "I went to an LGBTQ support group yesterday."),
        ("assistant", "Melanie", "That sounds powerful, how did it feel?"),
        ("user", "Caroline", "Inspiring. I want to work in counseling."),
    ]:
        mem.sessions.append(
            first.id, {"role": role, "content": text, "metadata": {"speaker": speaker}}
        )
    clock.now = T0 + timedelta(days=30)
    second = mem.sessions.get_or_create("chat_2")
    mem.sessions.append(second.id, {"role": "assistant", "content": "We went camping at the lake."})
    mem.sessions.append(second.id, {"role": "user", "content": "Camping with kids is fun!"})


@pytest.fixture
def clock() -> Clock:
    return Clock()


def settings(tmp_path, clock: Clock) -> Settings:  # type: ignore[no-untyped-def]
    return Settings(home=tmp_path, clock=clock)


def test_recall_finds_appended_messages_with_context(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        fill(mem, clock)
        hits = mem.recall_conversation("support group", limit=3, neighbours=1)
        top = hits[0]
        assert (top.session_id, top.index, top.role) == ("chat_1", 0, "user")
        assert top.speaker == "Caroline" and top.timestamp == T0
        assert top.text == "I went to an LGBTQ support group yesterday."
        assert top.before == () and [t.index for t in top.after] == [1]
        assert top.metadata == {"speaker": "Caroline"}


def test_filters(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        fill(mem, clock)
        assert {h.session_id for h in mem.recall_conversation("camping", session_id="chat_2")} == {
            "chat_2"
        }
        assert mem.recall_conversation("camping", session_id="chat_1") == []
        assert [h.index for h in mem.recall_conversation("camping", role="user")] == [1]
        by_name = mem.recall_conversation("counseling", role="caroline")
        assert by_name[0].index == 2 and {h.speaker for h in by_name} == {"Caroline"}
        later = mem.recall_conversation("camping", since=T0 + timedelta(days=1))
        assert later and all(h.session_id == "chat_2" for h in later)
        assert mem.recall_conversation("camping", until=T0) == []


def test_history_is_read_back_after_reopening(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        fill(mem, clock)
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        top = mem.recall_conversation("support group", limit=1)[0]
        assert (top.session_id, top.index, top.speaker) == ("chat_1", 0, "Caroline")
        assert top.timestamp is not None
        mem.sessions.append("chat_2", {"role": "user", "content": "We saw a heron at the lake."})
        assert mem.recall_conversation("heron", limit=1)[0].index == 2


def test_agents_do_not_see_each_other(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    with open_agent("alice", settings=settings(tmp_path, clock)) as alice:
        fill(alice, clock)
    with open_agent("bob", settings=settings(tmp_path, clock)) as bob:
        assert bob.recall_conversation("camping") == []


def test_vectors_with_a_fake_embedder(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("numpy")
    fake = FakeEmbedder()
    with open_agent("alice", settings=settings(tmp_path, clock), embedder=fake) as mem:
        fill(mem, clock)
        mem.catch_up_transcripts()
        assert mem.recall_conversation("lake camping", limit=1)[0].session_id == "chat_2"
        assert fake.calls >= 2


def test_bad_arguments(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        with pytest.raises(InvalidInputError):
            mem.recall_conversation("")
        with pytest.raises(InvalidIdError):
            mem.recall_conversation("x", session_id="../etc")
        with pytest.raises(InvalidInputError):
            mem.recall_conversation("x", limit=0)


def test_vectors_are_stored_with_the_model_and_reused_after_reopening(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("numpy")
    with open_agent("alice", settings=settings(tmp_path, clock), embedder=FakeEmbedder()) as mem:
        fill(mem, clock)
        mem.catch_up_transcripts()
    again = FakeEmbedder()
    with open_agent("alice", settings=settings(tmp_path, clock), embedder=again) as mem:
        assert mem.recall_conversation("lake camping", limit=1)[0].session_id == "chat_2"
        assert again.calls == 1, "only the query was embedded"


def test_compaction_keeps_every_turn_recallable_at_its_seq(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        fill(mem, clock)
        assert mem.recall_conversation("support group", limit=1)[0].index == 0
        mem.sessions.compact("chat_1", keep_last=1)
        mem.sessions.append("chat_1", {"role": "user", "content": "Back from the pottery class."})
        hits = mem.recall_conversation("pottery class", limit=1)
        assert (hits[0].session_id, hits[0].index) == ("chat_1", 3)
        assert [t.index for t in hits[0].before] == [2]
        top = mem.recall_conversation("support group", limit=1)[0]
        assert (top.index, top.text) == (0, "I went to an LGBTQ support group yesterday.")


class GatedEmbedder(FakeEmbedder):
    """Embeds queries at once; a batch of stored turns waits until ``gate`` is set (at most
    30 s, then ``timed_out``), so a test can see who waits for the turns' vectors."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.timed_out = False
        self.turns_embedded = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if len(texts) > 1:
            self.entered.set()
            self.timed_out |= not self.gate.wait(30)
            self.turns_embedded += len(texts)
        return super().embed(texts)


def append_turns(mem, count: int) -> None:  # type: ignore[no-untyped-def]
    session = mem.sessions.get_or_create("long")
    for n in range(count):
        text = "We went camping at the lake." if n == 7 else f"Small talk number {n} about nothing."
        mem.sessions.append(session.id, {"role": "user", "content": text})


def test_a_recall_ranks_by_words_while_the_vectors_are_still_being_made(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("numpy")
    gated = GatedEmbedder()
    with open_agent("alice", settings=settings(tmp_path, clock), embedder=gated) as mem:
        append_turns(mem, 50)
        hits = mem.recall_conversation("camping lake", limit=1)
        assert not gated.timed_out, "the recall waited for the turns' vectors"
        assert gated.entered.is_set(), "the turns' vectors are being made in the background"
        assert [hit.index for hit in hits] == [7]
        gated.gate.set()
        mem.catch_up_transcripts()
        assert gated.turns_embedded == 50
        assert [hit.index for hit in mem.recall_conversation("camping lake", limit=1)] == [7]


def test_an_open_makes_the_vectors_an_earlier_process_did_not(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("numpy")
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        append_turns(mem, 40)  # no embedder: no vectors
    gated = GatedEmbedder()
    with open_agent("alice", settings=settings(tmp_path, clock), embedder=gated) as mem:
        assert [hit.index for hit in mem.recall_conversation("camping lake", limit=1)] == [7]
        assert not gated.timed_out, "the first recall waited for the history's vectors"
        gated.gate.set()
        mem.catch_up_transcripts()
        assert gated.turns_embedded == 40


def test_now_reads_the_question_s_relative_times_against_when_it_is_asked(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    with open_agent("alice", settings=settings(tmp_path, clock)) as mem:
        for when, whose in ((T0, "my cousin's"), (T0 + timedelta(days=40), "a friend's")):
            clock.now = when
            session = mem.sessions.get_or_create(f"chat_{when:%m%d}")
            mem.sessions.append(session.id, {"role": "user", "content": f"A wedding, {whose}."})
        question = "Whose wedding did I go to a week ago?"
        asked = T0 + timedelta(days=47)
        assert mem.recall_conversation(question, limit=1)[0].text == "A wedding, my cousin's."
        hit = mem.recall_conversation(question, limit=1, now=asked)[0]
        assert hit.text == "A wedding, a friend's."
        with pytest.raises(InvalidInputError, match="now must be a timezone-aware datetime"):
            mem.recall_conversation(question, now=datetime(2023, 6, 1))


@given(
    st.lists(st.from_regex(r"[A-Z][a-z]{1,12}", fullmatch=True), min_size=1, max_size=3),
    st.text(min_size=1).filter(lambda text: not text[0].isspace()),
)
def test_a_name_written_before_the_text_is_its_speaker(words: list[str], said: str) -> None:
    name = " ".join(words)
    expected = None if name.lower() in NOT_NAMES else name
    assert named_in(f"{name}: {said}") == expected
    assert speaker_of({"speaker": "Ana"}, f"{name}: {said}") == "Ana"


def test_labels_and_plain_text_name_no_speaker() -> None:
    for text in ("Note: buy milk", "We went camping: it rained", "caroline: hi", "Ana:no space"):
        assert named_in(text) is None, text
    assert named_in("Mary Jane: hello") == "Mary Jane"


def test_a_name_prefix_ranks_as_a_speaker_in_metadata(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    said = [
        ("Caroline", "I researched adoption agencies last week."),
        ("Melanie", "What did you research, Caroline? Adoption too?"),
        ("Melanie", "I painted a lake sunrise."),
        ("Caroline", "Lovely painting! Research takes my evenings now."),
    ]
    orders = []
    for agent, prefixed in (("meta", False), ("prefix", True)):
        with open_agent(agent, settings=settings(tmp_path, clock)) as mem:
            session = mem.sessions.get_or_create("chat")
            for speaker, text in said:
                message = (
                    {"role": "user", "content": f"{speaker}: {text}"}
                    if prefixed
                    else {"role": "user", "content": text, "metadata": {"speaker": speaker}}
                )
                mem.sessions.append(session.id, message)
            hits = mem.recall_conversation("What did Caroline research?", limit=4)
            orders.append([(hit.index, hit.speaker) for hit in hits])
    assert orders[0] == orders[1]
    assert orders[0][0] == (0, "Caroline")
