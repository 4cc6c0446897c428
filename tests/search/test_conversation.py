from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory.errors import InvalidInputError
from markus_memory.search.conversation import ConversationIndex, RankingOptions, Turn
from markus_memory.search.embedders import FakeEmbedder
from markus_memory.search.stages import person_roles
from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.repos.transcripts import TranscriptMessage
from tests.postgres_support import new_agent_id, postgres_url  # noqa: F401

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)

DIALOGUE = [
    ("s1", "Caroline", "Hey Mel! How have you been?"),
    ("s1", "Melanie", "Busy with the kids. What's new with you?"),
    ("s1", "Caroline", "I went to a support group yesterday, it was so powerful."),
    ("s1", "Melanie", "That is wonderful, I am proud of you."),
    ("s2", "Melanie", "We went camping in the mountains last weekend."),
    ("s2", "Caroline", "Sounds lovely! Did the kids enjoy it?"),
    ("s2", "Melanie", "They loved roasting marshmallows by the fire."),
    ("s2", "Caroline", "I am researching adoption agencies these days."),
]


def turns() -> list[Turn]:
    out = []
    counters: dict[str, int] = {}
    for n, (session, speaker, text) in enumerate(DIALOGUE):
        index = counters.get(session, 0)
        counters[session] = index + 1
        role = "user" if speaker == "Caroline" else "assistant"
        stamp = T0 + timedelta(days=0 if session == "s1" else 14, minutes=n)
        out.append(Turn(session, index, role, text, stamp, speaker, {"n": n}))
    return out


# Every re-ranking stage off: each test below switches on the stage it is about.
PLAIN = {
    "speaker_boost": 0.0,
    "turn_speaker_boost": 0.0,
    "neighbour_weight": 0.0,
    "session_weight": 0.0,
    "date_boost": 0.0,
    "nearest_lift": 0.0,
    "person_boost": 0.0,
    "dense_person_boost": 0.0,
    "counting_spread": 0.0,
}


_STORES: list = []


@pytest.fixture(params=["sqlite", "postgres"], autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs on both backends: ``new_index`` opens stores of this one."""
    _STORES.clear()
    _BACKEND[0] = request.param
    if request.param == "postgres":
        _PG[0] = request.getfixturevalue("postgres_url")
    yield request.param
    for store in _STORES:
        store.close()


_BACKEND = ["sqlite"]
_PG = [""]


def new_index(embedder: object = None, options: RankingOptions | None = None) -> ConversationIndex:
    """An empty index for a fresh agent on the current backend."""
    if _BACKEND[0] == "sqlite":
        store = SqliteStore(Path(tempfile.mkdtemp()) / "data.db")
    else:
        from markus_memory.storage._postgres.store import PostgresStore

        store = PostgresStore(_PG[0])
    _STORES.append(store)
    return ConversationIndex(store.transcripts, new_agent_id(), embedder=embedder, options=options)  # type: ignore[arg-type]


def index(**options: object) -> ConversationIndex:
    built = new_index(options=RankingOptions(**{**PLAIN, **options}))  # type: ignore[arg-type]
    built.add(turns())
    return built


def ns(hits: list) -> list[int]:
    return [hit.turn.metadata["n"] for hit in hits]


def test_bm25_ranks_the_matching_turn_first_and_ignores_stop_words() -> None:
    idx = index()
    assert ns(idx.search("When did Caroline go to the support group?"))[0] == 2
    assert ns(idx.search("camping in the mountains", limit=1)) == [4]
    assert idx.search("the of and what") == [], "stop words alone are about nothing"
    assert idx.search("zebra") == []


def test_porter_stemming_matches_inflections() -> None:
    assert ns(index().search("marshmallow roasted", limit=1)) == [6]


def test_filters_session_role_speaker_and_time() -> None:
    idx = index()
    assert set(ns(idx.search("kids", session_id="s2"))) == {5}
    assert ns(idx.search("kids", role="assistant")) == [1]
    assert ns(idx.search("kids", role="melanie")) == [1]
    assert ns(idx.search("kids", until=T0 + timedelta(days=1))) == [1]
    assert ns(idx.search("kids", since=T0 + timedelta(days=1))) == [5]
    assert idx.search("kids", session_id="nope") == []
    assert idx.search("kids", limit=0) == []


def test_speaker_name_in_query_boosts_that_speakers_turns() -> None:
    plain = index(strip_speaker_names=False)
    boosted = index(speaker_boost=1.0)
    query = "What did Melanie say about the kids?"
    assert ns(plain.search(query, limit=1)) != [5] or ns(boosted.search(query, limit=1)) == [1]
    assert ns(boosted.search(query, limit=1)) == [1]


def test_fused_speaker_boost_reaches_the_named_speakers_reply_next_to_a_hit() -> None:
    # John's turn holds the query's words; Maria's reply right after it holds none: only a
    # boost applied after neighbour propagation can lift it first.
    said = [
        ("John", "I hiked to the waterfall in Oregon last week."),
        ("Maria", "It felt like a fairy tale!"),
        ("John", "Glad you liked the pictures."),
    ]
    turns = [
        Turn("s1", n, "user", text, T0 + timedelta(minutes=n), speaker)
        for n, (speaker, text) in enumerate(said)
    ]
    query = "What did Maria say about the waterfall?"
    stages = {**PLAIN, "neighbour_weight": 0.6, "neighbour_window": 1}
    for options, first in (({"speaker_boost": 1.0}, 0), ({"turn_speaker_boost": 1.0}, 1)):
        idx = new_index(options=RankingOptions(**{**stages, **options}))  # type: ignore[arg-type]
        idx.add(turns)
        assert [hit.turn.index for hit in idx.search(query, limit=1)] == [first]


@pytest.mark.parametrize(
    ("query", "roles"),
    [
        ("Where did I buy my bookshelf?", {"user"}),
        ("What\u2019s the name of the shop I\u2019m fond of?", {"user"}),
        ("Which bookshelf did you recommend?", {"assistant"}),
        ("Can you remind me which bookshelf you recommended?", set()),
        ("Where did Caroline buy the bookshelf?", set()),
    ],
)
def test_a_question_in_one_person_is_about_that_roles_turns(query: str, roles: set[str]) -> None:
    assert person_roles(query) == roles


def test_person_boost_lifts_the_turns_of_the_role_the_question_speaks_as() -> None:
    # The assistant's turn is shorter, so bm25 alone ranks it above the user's.
    said = [
        ("user", "I bought the oak bookshelf at the flea market on Sunday morning."),
        ("assistant", "An oak bookshelf from a flea market!"),
    ]
    turns = [Turn("s1", n, role, text, T0) for n, (role, text) in enumerate(said)]
    for boost, query, first in (
        (0.0, "Where did I buy my oak bookshelf?", 1),
        (0.5, "Where did I buy my oak bookshelf?", 0),
        (0.5, "Where did you say the oak bookshelf came from?", 1),
    ):
        idx = new_index(options=RankingOptions(**{**PLAIN, "person_boost": boost}))  # type: ignore[arg-type]
        idx.add(turns)
        assert [hit.turn.index for hit in idx.search(query, limit=1)] == [first]


def test_a_counting_question_gathers_turns_from_several_sessions() -> None:
    # One session talks about the plants at length; two others mention one plant each.
    said = [
        ("s1", "I repotted my new snake plant and the plant looks happy in the new pot."),
        ("s1", "The snake plant needs little water, so the plant suits me."),
        ("s1", "My snake plant sits by the window; such an easy plant."),
        ("s2", "I bought a fern plant at the market today."),
        ("s3", "A friend gave me a cactus plant for my birthday."),
    ]
    turns = [Turn(sid, n, "user", text, T0) for n, (sid, text) in enumerate(said)]
    question = "How many plants did I get?"
    for spread, sessions in ((0.0, {"s1"}), (0.5, {"s1", "s2", "s3"})):
        idx = new_index(options=RankingOptions(**{**PLAIN, "counting_spread": spread}))  # type: ignore[arg-type]
        idx.add(turns)
        assert {hit.turn.session_id for hit in idx.search(question, limit=3)} == sessions
        plain = {hit.turn.session_id for hit in idx.search("Which plants did I get?", limit=3)}
        assert plain == {"s1"}, "a question that does not count is ranked as before"
        ten = [hit.turn.index for hit in idx.search(question, limit=10)]
        for limit in (1, 2, 4, 20):
            first = [hit.turn.index for hit in idx.search(question, limit=limit)]
            assert first == ten[:limit], "a shorter list is the start of a longer one"


def test_dense_person_boost_lifts_that_roles_turns_in_the_vector_list() -> None:
    said = [
        ("user", "I bought the oak bookshelf at the flea market on Sunday morning."),
        ("assistant", "An oak bookshelf from a flea market!"),
    ]
    turns = [Turn("s1", n, role, text, T0) for n, (role, text) in enumerate(said)]
    query = "Where did I buy my oak bookshelf?"
    # The vector list outweighs the lexical one here, so its order decides the first hit.
    vectors = {**PLAIN, "vector_weight": 2.0, "fusion": "rrf"}
    for boost, first in ((0.0, 1), (1.0, 0)):
        options = RankingOptions(**{**vectors, "dense_person_boost": boost})  # type: ignore[arg-type]
        idx = new_index(FakeEmbedder(), options)
        idx.add(turns)
        assert [hit.turn.index for hit in idx.search(query, limit=1)] == [first]


def test_neighbour_weight_lifts_the_reply_to_a_hit() -> None:
    without = index()
    with_neighbours = index(neighbour_weight=0.5, neighbour_window=1)
    assert 3 not in ns(without.search("support group"))
    assert 3 in ns(with_neighbours.search("support group"))
    assert ns(with_neighbours.search("support group", limit=1)) == [2]
    assert 3 not in ns(with_neighbours.search("support group", session_id="s1", until=T0))


def test_readding_a_turn_replaces_it() -> None:
    idx = index()
    idx.add([Turn("s1", 2, "user", "I adopted a cat named Oscar.", T0, "Caroline", {"n": 99})])
    assert ns(idx.search("support group")) != [99]
    assert ns(idx.search("Oscar")) == [99]
    assert idx.get("s1", 2) is not None and idx.get("s1", 2).text.endswith("Oscar.")  # type: ignore[union-attr]


def test_hostile_query_syntax_is_literal() -> None:
    idx = index()
    for query in ['"', "NOT OR AND", "kids*", "speaker:kids", "NEAR(kids fire)"]:
        idx.search(query)
    assert set(ns(idx.search("speaker:kids"))) == {1, 5}


def test_vectors_fuse_with_bm25_and_find_paraphrase_free_matches() -> None:
    pytest.importorskip("numpy")
    fake = FakeEmbedder()
    idx = new_index(embedder=fake, options=RankingOptions(**PLAIN, vector_weight=1.0))
    idx.add(turns())
    assert ns(idx.search("adoption agencies", limit=1)) == [7]
    dense_only = idx.search("agencies adoption researching", session_id="s2", limit=2)
    assert ns(dense_only)[0] == 7


def test_query_naming_one_speaker_is_embedded_in_the_first_person() -> None:
    pytest.importorskip("numpy")

    class Recording(FakeEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            self.seen.extend(texts)
            return super().embed(texts)

    for first_person, query, embedded in [
        (True, "What did Melanie say about camping?", "What did I say about camping?"),
        (True, "Did Caroline tell Melanie about it?", "Did Caroline tell Melanie about it?"),
        (False, "What did Melanie say about camping?", "What did Melanie say about camping?"),
    ]:
        fake = Recording()
        options = RankingOptions(**PLAIN, vector_weight=1.0, dense_first_person=first_person)
        idx = new_index(embedder=fake, options=options)
        idx.add(turns())
        idx.search(query)
        assert fake.seen[-1] == embedded


def test_nearest_lift_brings_a_turn_sharing_no_word_above_the_lexical_hits() -> None:
    pytest.importorskip("numpy")

    class Meaning(FakeEmbedder):
        """Embeds every text about unwinding or relaxing alike: a paraphrase bm25 cannot see."""

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            calm = ("unwind", "relax")
            return super().embed(["calm" if any(w in t for w in calm) else t for t in texts])

    said = [
        "Work was long today, my boss kept me late at work.",
        "After work I usually cook dinner for the kids.",
        "Pottery helps me relax.",
        "Work has been busy, we have a deadline at work.",
    ]
    history = [
        Turn("s1", n, "user", text, T0 + timedelta(minutes=n), "Melanie", {"n": n})
        for n, text in enumerate(said)
    ]
    query = "unwind after work"
    first = {}
    for lift in (0.0, 1.0):
        chosen = {"fusion": "score", "vector_weight": 0.3, "nearest_lift": lift, "nearest_top": 1}
        options = RankingOptions(**{**PLAIN, **chosen})  # type: ignore[arg-type]
        idx = new_index(embedder=Meaning(), options=options)
        idx.add(history)
        first[lift] = ns(idx.search(query, limit=1))
    assert first == {0.0: [0], 1.0: [2]}


def test_model_change_reembeds_and_never_mixes_dimensions() -> None:
    pytest.importorskip("numpy")
    small, large = FakeEmbedder(dimension=16), FakeEmbedder(dimension=48)
    idx = new_index(embedder=small, options=RankingOptions(**PLAIN, vector_weight=1.0))
    idx.add(turns())
    idx.set_embedder(large)
    assert large.calls == 1
    assert ns(idx.search("camping mountains", limit=1)) == [4]
    same = FakeEmbedder(dimension=48)
    idx.set_embedder(same)
    assert same.calls == 0, "same model and dimension: nothing re-embedded"
    assert ns(idx.search("camping mountains", limit=1)) == [4]
    idx.set_embedder(None)
    assert ns(idx.search("camping mountains", limit=1)) == [4]


def test_embedder_returning_wrong_dimension_is_refused() -> None:
    pytest.importorskip("numpy")

    class Liar(FakeEmbedder):
        @property
        def dimension(self) -> int:
            return 3

    with pytest.raises(InvalidInputError, match="dimensions"):
        new_index(embedder=Liar()).add(turns())


def test_session_weight_prefers_turns_from_the_best_matching_session() -> None:
    query = "kids proud"
    plain = ns(index().search(query))
    assert plain[0] == 3 and plain.index(5) < plain.index(1)
    weighted = ns(index(session_weight=1.0).search(query))
    assert weighted[0] == 3 and weighted.index(1) < weighted.index(5)


def test_wider_neighbour_window_decays_with_distance() -> None:
    hits = index(neighbour_weight=0.5, neighbour_window=2).search("support group")
    scores = {hit.turn.metadata["n"]: hit.score for hit in hits}
    assert scores[2] > scores[3] > 0 and scores[1] > scores[0] > 0
    assert scores[3] == 0.5 * scores[2] and scores[0] == 0.25 * scores[2]


def test_default_options_run_every_stage() -> None:
    idx = new_index()
    idx.add(turns())
    assert ns(idx.search("What did Melanie say about camping?", limit=1)) == [4]
    assert new_index().search("anything") == []


def test_rrf_fusion_mode() -> None:
    pytest.importorskip("numpy")
    idx = new_index(
        embedder=FakeEmbedder(), options=RankingOptions(**PLAIN, fusion="rrf", vector_weight=1.0)
    )
    idx.add(turns())
    assert ns(idx.search("adoption agencies", limit=1)) == [7]


def test_very_common_terms_are_pruned_only_in_large_histories() -> None:
    bounded = index(common_docs=2, common_share=0.0, recent_window=3)
    # "kids" is in 2 turns (kept), "went" in 2 (kept): nothing is pruned at the bound.
    assert set(ns(bounded.search("kids"))) == {1, 5}
    bounded.add(
        [Turn("s3", i, "user", f"the kids again {i}", T0, None, {"n": 10 + i}) for i in range(3)]
    )
    # Now "kids" is in 5 turns: a query with a rarer term ranks by that term alone.
    assert ns(bounded.search("kids marshmallows")) == [6]
    # Every term common: only the rarest is searched, and only among the newest turns.
    assert set(ns(bounded.search("kids"))) == {10, 11, 12}
    assert set(ns(index().search("kids"))) == {1, 5}


def test_a_term_is_ranked_over_at_most_its_newest_max_postings_turns() -> None:
    bounded = index(max_postings=1)
    assert ns(bounded.search("kids")) == [5], "the newest turn with 'kids' only"
    assert set(ns(index().search("kids"))) == {1, 5}


def test_a_turn_said_on_the_named_day_ranks_as_one_that_mentions_it() -> None:
    said_that_day = Turn("s1", 0, "user", "Dinner with Ben was lovely.", T0, "Maria", {"n": 0})
    mentions_it = Turn(
        "s2", 0, "user", "Dinner with Ben last night was lovely.", T0 + timedelta(days=1), "Maria"
    )
    other = Turn("s3", 0, "user", "Dinner with Ben again!", T0 + timedelta(days=40), "Maria")
    idx = new_index(options=RankingOptions(**{**PLAIN, "date_boost": 2.0}))  # type: ignore[arg-type]
    idx.add(
        [said_that_day, replace(mentions_it, metadata={"n": 1}), replace(other, metadata={"n": 2})]
    )
    on_the_day = f"Who did Maria have dinner with on {T0:%d %B, %Y}?"
    assert ns(idx.search(on_the_day)) == [0, 1, 2]  # equal lift: the shorter turn first
    in_the_month = f"Who did Maria have dinner with in {T0:%B %Y}?"
    assert ns(idx.search(in_the_month))[0] == 1  # a month is wide: being said in it counts half


def test_two_query_words_match_the_compound_written_as_one() -> None:
    said = [
        Turn("s1", 0, "user", "I made coconut icecream today!", T0, "Nate", {"n": 0}),
        Turn("s1", 1, "assistant", "Coconut cake sounds great.", T0, "Joanna", {"n": 1}),
    ]
    idx = new_index(options=RankingOptions(**PLAIN))  # type: ignore[arg-type]
    idx.add(said)
    assert ns(idx.search("What coconut ice cream did Nate make?")) == [0, 1]
    assert ns(idx.search("What coconut ice-cream did Nate make?")) == [0, 1]
    assert ns(idx.search("Which cake did Joanna like?", limit=1)) == [1]


def test_propagation_steps_aside_when_turns_are_long() -> None:
    """Short turns lean on their neighbours; long turns stand alone: the reply next to a strong
    hit outranks a weaker hit elsewhere only where the agent's turns are short."""

    def said(words: str, length: int) -> str:
        filler = " ".join(f"word{i}" for i in range(length))
        return f"{words} {filler}"

    def history(length: int) -> list[Turn]:
        return [
            Turn(
                "s1", 0, "user", said("violin recital violin recital", length), T0, None, {"n": 0}
            ),
            Turn("s1", 1, "assistant", said("that is lovely", length), T0, None, {"n": 1}),
            Turn("s2", 0, "user", said("my violin lesson", length), T0, None, {"n": 2}),
        ] + [
            Turn("s3", n, "user", said("the weather", length), T0, None, {"n": 3}) for n in range(6)
        ]

    short = RankingOptions(**{**PLAIN, "neighbour_weight": 0.5, "session_weight": 0.3})
    for length, scaled, second in ((4, 40.0, 1), (120, 40.0, 2), (120, 0.0, 1)):
        idx = new_index(options=replace(short, short_turns=scaled))
        idx.add(history(length))
        assert ns(idx.search("violin recital", limit=2)) == [0, second], (length, scaled)


def test_turn_length_scales_propagation_from_the_reference_length() -> None:
    from markus_memory.search.ranking_options import for_turn_length

    options = RankingOptions(neighbour_weight=0.5, session_weight=0.3, short_turns=40.0)
    assert for_turn_length(options, 25.0) is options
    scaled = for_turn_length(options, 80.0)
    assert (scaled.neighbour_weight, scaled.session_weight) == (0.125, 0.075)
    off = replace(options, short_turns=0.0)
    assert for_turn_length(off, 500.0) is off


def test_the_vectors_say_less_where_turns_are_long() -> None:
    """A turn only the vectors find (it shares no word with the question) is lifted above the
    lexical hit where turns are short; where they are long, the vector weight and the nearest
    lift shrink by ``factor ** dense_short_power`` and the lexical hit stays first."""
    pytest.importorskip("numpy")
    from markus_memory.search.ranking_options import for_turn_length

    class Meaning(FakeEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            calm = ("unwind", "relax")
            return super().embed(["calm" if any(w in t for w in calm) else t for t in texts])

    def history(length: int) -> list[Turn]:
        filler = " ".join(f"word{i}" for i in range(length))
        said = ["Work was long today, my boss kept me late.", "Pottery helps me relax."]
        return [
            Turn("s1", n, "user", f"{text} {filler}", T0, None, {"n": n})
            for n, text in enumerate(said)
        ]

    chosen = {"fusion": "score", "vector_weight": 0.3, "nearest_lift": 1.0, "nearest_top": 1}
    first = {}
    for length, power in ((0, 1.0), (120, 0.0), (120, 1.0)):
        options = RankingOptions(**{**PLAIN, **chosen, "dense_short_power": power})  # type: ignore[arg-type]
        idx = new_index(embedder=Meaning(), options=options)
        idx.add(history(length))
        first[(length, power)] = ns(idx.search("unwind after work", limit=1))
    assert first == {(0, 1.0): [1], (120, 0.0): [1], (120, 1.0): [0]}
    scaled = for_turn_length(RankingOptions(dense_short_power=0.5), 160.0)  # factor 1/16
    assert (scaled.vector_weight, scaled.nearest_lift) == pytest.approx((0.15, 0.0375))


def test_blank_messages_never_stop_the_vectors_of_the_rest() -> None:
    """Tool-call messages often have no text: a batch of stored turns holding some must not
    end the embedding before every turn with text has its vector."""
    pytest.importorskip("numpy")
    from markus_memory.search.conversation import model_key

    fake = FakeEmbedder()
    idx = new_index(embedder=fake, options=RankingOptions(**PLAIN, vector_weight=1.0))
    said = ["  " if n % 4 == 1 else f"turn {n} about the lake" for n in range(40)]
    idx.store.import_transcript(
        idx.agent_id,
        "s1",
        [
            TranscriptMessage(idx.agent_id, "s1", n, "user", text, T0, None, None)
            for n, text in enumerate(said)
        ],
        synced_at=T0,
    )
    idx.due()
    idx.embed_missing(batch=8)
    key = model_key(fake.model, fake.dimension)
    assert idx.store.unvectored(idx.agent_id, key, 100) == []
