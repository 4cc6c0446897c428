"""An agent with realistic memory in every layer, for the UI tests and screenshots."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from markus_memory import open_agent
from markus_memory.config import Limits, Settings
from markus_memory.dream import dream

from ..clocks import FakeClock

START = datetime(2026, 11, 20, 8, 30, tzinfo=timezone.utc)
NOW = START + timedelta(days=3, hours=5)

SECTIONS = {
    "People": "- Ana Ruiz leads the payments team; prefers short answers with links.\n"
    "- Tomás owns the deploy pipeline and is on call on Thursdays.\n"
    "- Priya reviews every database migration before it ships.",
    "Projects": "### Checkout rewrite\nMove the checkout flow to the new payments API by "
    "December 15. Feature flag: `checkout_v2`.\n\n### Search latency\nKeep p95 under 300 ms; "
    "the slow path is the facet count query.",
    "Procedures": "1. Deploy with `make release` from a clean main.\n2. Watch the error budget "
    "dashboard for 15 minutes.\n3. Roll back with `make rollback VERSION=…` if 5xx > 1 %.",
}

OBSERVATIONS = [
    ("fact", "Ana prefers answers under five sentences, with links to the source.", ["ana"]),
    ("preference", "Tomás wants deploy notes in #releases, not in DMs.", ["tomas", "deploy"]),
    ("fact", "The staging database is refreshed from production on Sundays at 02:00.", ["db"]),
    ("decision", "We keep PostgreSQL 15 until the checkout rewrite ships.", ["db", "checkout"]),
    ("lesson", "A migration that rewrites a large table must run in batches of 10k rows.", ["db"]),
    ("fact", "The payments API rate limit is 200 requests per second per merchant.", ["checkout"]),
    ("note", "Search p95 was 412 ms on Monday; the facet count query dominated.", ["search"]),
    ("fact", "Priya reviews migrations on Tuesdays and Thursdays.", ["priya", "db"]),
    ("lesson", "Rolling back the checkout flag needs a cache purge of /cart.", ["checkout"]),
    ("preference", "Ana likes weekly summaries on Friday mornings.", ["ana"]),
    ("fact", "The deploy pipeline runs the full test suite in 11 minutes.", ["deploy"]),
    ("fact", "The deploy pipeline runs the full test suite in about 11 minutes.", ["deploy"]),
    ("fact", "Staging is refreshed from production every Sunday at 02:00 UTC.", ["db"]),
    ("decision", "Facet counts move to a materialised view refreshed every minute.", ["search"]),
    ("note", "Ticket #4412: double charge when the checkout page was reloaded.", ["checkout"]),
]

CONVERSATION = [
    ("user", "Can you check why search got slow on Monday?"),
    (
        "assistant",
        "The p95 went from 280 ms to 412 ms. The facet count query scans the whole orders table.",
    ),
    ("user", "What would fix it without a schema change?"),
    ("assistant", "A materialised view for the facet counts, refreshed every minute."),
    ("user", "Do it, and tell Ana in the weekly summary."),
    ("assistant", "Done: the view is live and search p95 is back to 240 ms."),
]
SECOND = [
    ("user", "Tomás asked where deploy notes go."),
    ("assistant", "He wants them in #releases, not in direct messages."),
    ("user", "And what's the rollback procedure for checkout?"),
    (
        "assistant",
        "Flip checkout_v2 off, then purge the /cart cache; otherwise carts keep the old prices.",
    ),
]

ACTIVITIES = [
    (
        "Investigate search latency",
        "task",
        [
            ("llm_request", "plan the investigation", {"tokensUsed": 1840}),
            ("tool_start", "run_sql", {}),
            ("tool_end", "query plan shows a seq scan on orders", {}),
            ("tool_start", "create_view", {}),
            ("tool_end", "created materialised view facet_counts", {}),
            ("text", "p95 is 240 ms after the change.", {}),
        ],
        True,
    ),
    (
        "Weekly summary for Ana",
        "chat",
        [
            ("llm_request", "draft the summary", {"tokensUsed": 2210}),
            ("text", "Sent Ana five bullet points with links.", {}),
        ],
        True,
    ),
    (
        "Migrate carts table",
        "task",
        [
            ("tool_start", "run_migration", {}),
            ("tool_end", "batch 1 of 12 done", {}),
            ("error", "Error: lock timeout on carts after 30 s", {}),
        ],
        False,
    ),
]


def settings_for(home: Path, clock: FakeClock, limits: Limits | None = None) -> Settings:
    return Settings(home=home, clock=clock, limits=limits or Limits())


def seed(home: Path, agent: str = "alice") -> FakeClock:
    """Fill ``agent`` under ``home``; returns the clock (at :data:`NOW`) the UI should use."""
    clock = FakeClock(START)
    with open_agent(agent, settings=settings_for(home, clock)) as mem:
        for name, body in SECTIONS.items():
            assert mem.knowledge.update_section(name, body).ok
        for kind, content, tags in OBSERVATIONS:
            clock.advance(minutes=47)
            mem.knowledge.save_observation(content, kind, tags)
        mem.notebook.upsert(
            "current-task",
            "Ship the search latency fix; then write Ana's weekly summary (due Friday 10:00).",
        )
        mem.notebook.upsert(
            "open-questions",
            "- Does the materialised view need an index on "
            "merchant_id?\n- Who approves the December freeze?",
        )
        mem.notebook.upsert(
            "relevant-context", "Recalled: Tomás wants deploy notes in #releases.", "system"
        )
        mem.state.update("deploy", "checkout_v2 at 25 % of traffic; error rate 0.2 %.")
        mem.state.update("on-call", "Tomás until Friday 18:00 UTC.")
        for lines, prefix in ((CONVERSATION, "chat"), (SECOND, "chat")):
            clock.advance(hours=3)
            session = mem.sessions.create(prefix)
            for role, text in lines:
                clock.advance(minutes=2)
                mem.sessions.append(session.id, {"role": role, "content": text})
        for label, kind, logs, ok in ACTIVITIES:
            clock.advance(hours=2)
            act = mem.activities.start(kind, label)
            for log_type, content, metadata in logs:
                clock.advance(minutes=5)
                mem.activities.log(act, log_type, content, metadata)
            mem.activities.end(act, success=ok)
        clock.advance(hours=1)
        report = dream(mem)
        assert report.status == "applied", report
    with open_agent("bob", settings=settings_for(home, clock)) as mem:
        mem.notebook.upsert("current-task", "Triage the support inbox.")
        for content in ("Support hours are 08:00-18:00 CET.", "Refunds over 500 EUR need Ana."):
            mem.knowledge.save_observation(content, "fact", ["support"])
    clock.now = NOW
    return clock
