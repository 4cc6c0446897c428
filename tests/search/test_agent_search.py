"""AgentMemory.search over the real knowledge.md layer and the index in <home>/data.db."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from markus_memory.layers.knowledge import Observation
from markus_memory.memory import AgentMemory, open_agent

from .fakes import FakeEmbedder

T0 = datetime(2026, 2, 1, tzinfo=timezone.utc)


def ids(mem: AgentMemory, query: str, **kw: object) -> list[str]:
    return [hit.id for hit in mem.search(query, **kw).hits]  # type: ignore[arg-type]


def test_search_saved_observations_and_curated_sections(isolated_home: Path) -> None:
    with open_agent("alice") as mem:
        obs = mem.knowledge.save_observation("the deploy script lives in ops", tags=["ops"])
        mem.knowledge.update_section("crypto", "seed phrases need entropy checks")
        result = mem.search("deploy")
        assert [h.id for h in result.hits] == [obs.id]
        hit = result.hits[0]
        assert hit.tags == ("ops",) and hit.source == "observation"
        assert hit.timestamp == obs.timestamp
        assert result.method == "bm25" and result.search_method == "keyword"
        curated = mem.search("entropy").hits[0]
        assert (curated.id, curated.source, curated.type) == ("curated_crypto", "curated", "fact")
    assert (isolated_home / "data.db").exists()


def test_empty_query_lists_recent(isolated_home: Path) -> None:
    with open_agent("alice") as mem:
        saved = [mem.knowledge.save_observation(f"note {i}", type="note") for i in range(4)]
        result = mem.search("", limit=2)
        assert result.method == "recent"
        assert [h.id for h in result.hits] == [saved[2].id, saved[3].id]


def test_hand_edit_of_knowledge_md_is_picked_up(isolated_home: Path) -> None:
    with open_agent("alice") as mem:
        obs = mem.knowledge.save_observation("user prefers dark mode")
        assert ids(mem, "dark mode") == [obs.id]
        path = mem.paths.knowledge
        path.write_text(path.read_text().replace("dark mode", "light themes"))
        assert ids(mem, "dark mode") == []
        assert ids(mem, "light themes") == [obs.id]
        path.write_text(path.read_text() + "\n")  # other edits keep working
        path.write_text("# Knowledge\n\n## procedures\nrestart with systemctl\n")
        assert ids(mem, "light") == []
        assert ids(mem, "systemctl") == ["curated_procedures"]


def test_item30_trimming_and_deletion_leave_no_ghost_hits(isolated_home: Path) -> None:
    embedder = FakeEmbedder()
    with open_agent("alice", embedder=embedder) as mem:
        mem.knowledge.add_observations(
            Observation(f"obs_{i:04d}", "fact", f"entry {i} marker{i}", T0 + timedelta(minutes=i))
            for i in range(480)
        )
        mem.rebuild_search_index()  # every observation gets a vector, so trimming must drop some
        index = mem._memory_searcher().index
        assert index is not None and len(index.vector_digests("alice", "fake:256")) == 480
        assert ids(mem, "marker3") != []
        for i in range(480, 510):  # the buffer keeps the newest 500
            mem.knowledge.save_observation(
                f"entry {i} marker{i}", id=f"obs_{i:04d}", timestamp=T0 + timedelta(minutes=i)
            )
        live = {o.id for o in mem.knowledge.observations()}
        assert len(live) == 500
        for query in ("marker3", "marker0", "entry marker", "marker509"):
            assert set(ids(mem, query, limit=50)) <= live, query
        mem.knowledge.remove_observations(["obs_0509"])
        assert "obs_0509" not in ids(mem, "marker509")
        with index.database.read() as conn:
            raw = conn.execute("SELECT doc_id FROM search_vectors WHERE agent_id = 'alice'")
            assert {row[0] for row in raw} <= live - {"obs_0509"}  # gone, not hidden


def test_rebuild_and_reopen(isolated_home: Path) -> None:
    with open_agent("alice") as mem:
        obs = mem.knowledge.save_observation("kafka carries the events")
        mem.rebuild_search_index()
        assert ids(mem, "kafka") == [obs.id]
    with open_agent("alice") as again:
        assert ids(again, "kafka") == [obs.id]


def test_agents_do_not_see_each_other(isolated_home: Path) -> None:
    with open_agent("alice") as alice, open_agent("bob") as bob:
        alice.knowledge.save_observation("alice secret plan")
        assert ids(bob, "secret") == []
        assert len(ids(alice, "secret")) == 1


def test_hybrid_through_the_facade(isolated_home: Path) -> None:
    with open_agent("alice", embedder=FakeEmbedder()) as mem:
        obs = mem.knowledge.save_observation("database migrations run first", tags=["db"])
        result = mem.search("database migrations")
        assert result.method == "hybrid"
        hit = result.hits[0]
        assert hit.similarity is not None
        # unlike the original, semantic hits keep the observation's timestamp and tags
        assert (hit.id, hit.timestamp, hit.tags) == (obs.id, obs.timestamp, ("db",))


def test_item29_cjk_and_tag_removal_through_the_facade(isolated_home: Path) -> None:
    with open_agent("alice") as mem:
        cn = mem.knowledge.save_observation("我们决定把数据库迁移推迟到下个季度", tags=["决定"])
        jp = mem.knowledge.save_observation("本番環境のデプロイは金曜日には行わない")
        assert ids(mem, "数据库的迁移") == [cn.id]
        assert ids(mem, "金曜日のデプロイ") == [jp.id]
        assert ids(mem, "猫") == []
        mem.knowledge.remove_observations_by_tag("决定")
        assert ids(mem, "数据库的迁移") == []
