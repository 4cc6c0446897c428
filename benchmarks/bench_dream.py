"""Dream costs on a full buffer (500 observations): the offline consolidator, and plan
validation + application in memory. Prints medians; the baseline is one parse of the same
knowledge.md (the read every dream starts with), measured in the same process.

Run: python benchmarks/bench_dream.py [repeats]
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from markus_memory.config import Limits, Settings
from markus_memory.dream import SqliteAuditLog, dream
from markus_memory.dream.apply import apply_plan
from markus_memory.dream.offline import offline_plan
from markus_memory.dream.plan import parse_reply
from markus_memory.layers.knowledge import (
    CuratedSection,
    KnowledgeDoc,
    Observation,
    parse_knowledge,
    render_knowledge,
)
from markus_memory.llm import ScriptedChatModel
from markus_memory.memory import open_agent

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_ms  # noqa: E402

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
VOCAB = [f"w{i}" for i in range(3000)]


def buffer(size: int = 500, seed: int = 7) -> list[Observation]:
    """Observations of 15-40 words; about one in ten repeats an earlier one (some reworded)."""
    rng = random.Random(seed)
    found: list[Observation] = []
    for i in range(size):
        if found and rng.random() < 0.1:
            words = rng.choice(found).content.split()
            if rng.random() < 0.5:
                words.append(rng.choice(VOCAB))
        else:
            words = rng.choices(VOCAB, k=rng.randint(15, 40))
        moment = T0 + timedelta(minutes=i)
        found.append(Observation(f"obs_{i}", "fact", " ".join(words), moment, ("t",)))
    return found


def full_reply(observations: list[Observation]) -> str:
    """A reply using every cap: 50 removals, 20 merges, 20 promotions."""
    ids = [o.id for o in observations]
    text = {o.id: o.content for o in observations}
    merges = [
        {"removeIds": ids[i : i + 2], "mergedContent": text[ids[i]] + " " + text[ids[i + 1]]}
        for i in range(100, 140, 2)
    ]
    promotes = [
        {"sourceIds": ids[i : i + 3], "section": f"section-{i % 5}", "content": "insight " * 10}
        for i in range(200, 260, 3)
    ]
    return json.dumps({"remove": ids[:50], "merge": merges, "promote": promotes})


def full_dream_ms(text: str, reply: str, repeats: int) -> float:
    """One whole dream on disk: read, scripted model, transaction write, state prune, audit."""
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(home=Path(home))
        with open_agent("bench", settings=settings) as mem:
            audit = SqliteAuditLog(settings.database_path)
            times = []
            for _ in range(repeats):
                mem.paths.knowledge.write_text(text, encoding="utf-8")
                start = time.perf_counter()
                report = dream(mem, ScriptedChatModel([reply]), audit=audit)
                times.append((time.perf_counter() - start) * 1000)
                assert report.status == "applied", report.error
    return statistics.median(times)


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    limits = Limits()
    observations = buffer()
    sections = [CuratedSection(f"section-{i}", "existing line\n" * 20) for i in range(5)]
    doc = KnowledgeDoc("# Knowledge", sections, observations)
    reply = full_reply(observations)
    batch = {o.id: o.content for o in observations}

    def validate_and_apply() -> None:
        checked = parse_reply(reply, batch, limits)
        apply_plan(doc.copy(), checked.plan, limits, T0)

    plan = offline_plan(observations)
    checked = parse_reply(reply, batch, limits)
    text = render_knowledge(doc)
    baseline = median_ms(lambda: parse_knowledge(text), repeats)
    offline = median_ms(lambda: offline_plan(observations), repeats)
    applying = median_ms(validate_and_apply, repeats)
    print(f"observations: {len(observations)}; offline merges found: {len(plan.merge)}")
    print(
        f"plan: {len(checked.plan.remove)} removals, {len(checked.plan.merge)} merges, "
        f"{len(checked.plan.promote)} promotions, {len(checked.rejections)} rejections"
    )
    full = full_dream_ms(text, reply, max(3, repeats // 3))
    rows = [
        ("baseline parse_knowledge (500 obs)", baseline),
        ("offline consolidator (500 obs)", offline),
        ("plan validation + application", applying),
        ("whole dream on disk (scripted model)", full),
    ]
    for label, value in rows:
        print(f"{label:38s} {value:8.2f} ms median  ({value / baseline:.1f}x baseline)")


if __name__ == "__main__":
    main()
