"""Property: random valid plans never lose an unnamed observation, and undo is byte exact."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory.dream import dream, undo_last_dream
from markus_memory.llm import ScriptedChatModel
from tests.dream.conftest import START, FakeClock, files, open_mem

WORDS = "alpha beta gamma delta deploy friday staging port cache queue".split()


def random_plan(batch: dict[str, str], rng: random.Random) -> dict:
    ids = list(batch)
    rng.shuffle(ids)
    plan: dict = {"remove": [], "merge": [], "promote": []}
    while ids:
        kind = rng.choice(["keep", "keep", "remove", "merge", "promote"])
        if kind == "remove":
            plan["remove"].append(ids.pop())
        elif kind == "merge" and len(ids) >= 2:
            group = [ids.pop(), ids.pop()]
            content = "\n".join(batch[i] for i in group)
            plan["merge"].append({"removeIds": group, "mergedContent": content, "tags": ["m"]})
        elif kind == "promote" and len(ids) >= 3:
            group = [ids.pop(), ids.pop(), ids.pop()]
            section = rng.choice(["procedures", "lessons", "Deploy Tips"])
            plan["promote"].append(
                {"sourceIds": group, "section": section, "content": batch[group[0]]}
            )
        else:
            ids.pop()
    return plan


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("save"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
        ),
        st.tuples(st.just("dream"), st.integers(0, 2**16)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_no_unnamed_observation_disappears_and_undo_is_exact(ops: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = FakeClock(START)
        mem = open_mem(Path(tmp) / "home", clock)
        for op, arg in ops:
            clock.advance(minutes=7)
            if op == "save":
                mem.knowledge.save_observation(str(arg))
                continue
            named: set[str] = set()
            rng = random.Random(arg)

            def answer(messages, named=named, rng=rng):
                batch = {o.id: o.content for o in mem.knowledge.observations()}
                plan = random_plan(batch, rng)
                named.update(plan["remove"])
                for group in plan["merge"]:
                    named.update(group["removeIds"])
                for group in plan["promote"]:
                    named.update(group["sourceIds"])
                return json.dumps(plan)

            before_ids = {o.id for o in mem.knowledge.observations()}
            before_files = files(mem)
            report = dream(mem, ScriptedChatModel([answer]))
            after_ids = {o.id for o in mem.knowledge.observations()}
            assert before_ids - after_ids <= named
            if report.status == "applied" and files(mem) != before_files:
                assert undo_last_dream(mem).ok
                assert files(mem) == before_files
                redo = dream(mem, ScriptedChatModel([answer]))
                assert redo.status in ("applied", "failed", "unchanged")
