"""The checker of ``bench_hosts.py``: reads back, from a fresh host, every write the hosts
logged, through the public API only.

For each operation: ``acked`` (writes that returned), ``lost`` (acknowledged, not there),
``duplicated`` (there more than once), ``torn`` (there, but not the text written) and
``phantom`` (there, but never logged: neither acknowledged nor failed). A failed write may or
may not be there (the connection may have dropped after the commit): it is counted as
``failed_present`` when it is, never as lost or phantom. Sessions are read with
``mem.sessions.get(session_id)``, so the check stays right wherever sessions are kept.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks._hosts_ops import KEY, WRITES, digest
from markus_memory import AgentMemory, NotFoundError


@dataclass
class Tally:
    acked: int = 0
    failed: int = 0
    lost: int = 0
    duplicated: int = 0
    torn: int = 0
    phantom: int = 0
    failed_present: int = 0

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.torn or self.phantom)


def read_logs(run: Path) -> list[dict[str, Any]]:
    """Every line of every host's write log (a SIGKILLed host's last line may be cut)."""
    entries = []
    for path in sorted(run.glob("writes-*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
    return entries


def _by_key(texts: Iterable[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for text in texts:
        match = KEY.match(text)
        if match is not None:
            found[match.group(0)].append(text)
    return found


def _keyed(tally: Tally, entries: list[dict[str, Any]], stored: dict[str, list[str]]) -> None:
    """Writes identified by their key: each acknowledged one there exactly once, unchanged."""
    logged = {e["key"]: e for e in entries}
    for entry in entries:
        texts = stored.get(entry["key"], [])
        if not entry["ok"]:
            tally.failed += 1
            tally.failed_present += bool(texts)
            continue
        tally.acked += 1
        if not texts:
            tally.lost += 1
        elif len(texts) > 1:
            tally.duplicated += 1
        elif digest(texts[0]) != entry["digest"]:
            tally.torn += 1
    tally.phantom += sum(1 for key in stored if key not in logged)


def _slots(tally: Tally, entries: list[dict[str, Any]], stored: dict[str, str | None]) -> None:
    """Overwritten entries: the stored text is the last acknowledged write of its slot or a
    later one (failed writes after it may have landed), and exactly what that write wrote."""
    by_slot: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        by_slot[f"{entry['agent']}/{entry['slot']}"].append(entry)
        tally.acked += entry["ok"]
        tally.failed += not entry["ok"]
    for slot, writes in by_slot.items():
        acked = [w["n"] for w in writes if w["ok"]]
        text = stored.get(slot)
        if text is None:
            tally.lost += bool(acked)
            continue
        match = KEY.match(text)
        mine = [w for w in writes if match is not None and w["key"] == match.group(0)]
        if not mine:
            tally.phantom += 1
        elif acked and mine[0]["n"] < max(acked):
            tally.lost += 1
        elif digest(text) != mine[0]["digest"]:
            tally.torn += 1


def check(run: Path, open_memory: Any) -> dict[str, Any]:
    """Read back every logged write with ``open_memory(agent_id)`` (a context manager giving
    an :class:`AgentMemory` of a fresh host); the tallies by operation."""
    entries = read_logs(run)
    by_op: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        by_op[entry["op"]].append(entry)
    agents = sorted({e["agent"] for e in entries})
    tallies = {op: Tally() for op in sorted(WRITES)}
    observations: dict[str, list[str]] = {}
    slots: dict[str, dict[str, str | None]] = {"notebook": {}, "state": {}}
    sessions: dict[str, list[str]] = defaultdict(list)
    activities: dict[str, list[str]] = {}
    for agent in agents:
        with open_memory(agent) as mem:
            observations.update(_by_key(o.content for o in mem.knowledge.observations()))
            for entry in by_op["notebook"] + by_op["state"]:
                if entry["agent"] != agent:
                    continue
                slot = f"{agent}/{entry['slot']}"
                if entry["op"] == "notebook":
                    found = mem.notebook.get(entry["slot"])
                    slots["notebook"][slot] = None if found is None else found.text
                else:
                    got = mem.state.get(entry["slot"])
                    slots["state"][slot] = None if got is None else got.content
            for sid in sorted({e["session"] for e in by_op["append"] if e["agent"] == agent}):
                session = mem.sessions.get(sid)
                if session is not None:
                    sessions[agent].extend(str(m.get("content")) for m in session.messages)
            activities.update(_activity_texts(mem, by_op["activity"]))
    _keyed(tallies["observe"], by_op["observe"], observations)
    _keyed(tallies["append"], by_op["append"], _by_key(t for ts in sessions.values() for t in ts))
    _keyed(
        tallies["activity"], by_op["activity"], _by_key(t for ts in activities.values() for t in ts)
    )
    _slots(tallies["notebook"], by_op["notebook"], slots["notebook"])
    _slots(tallies["state"], by_op["state"], slots["state"])
    return {op: {**asdict(t), "ok": t.ok} for op, t in tallies.items()}


def _activity_texts(
    mem: AgentMemory, entries: list[dict[str, Any]]
) -> Iterator[tuple[str, list[str]]]:
    """The note logged in each of this agent's logged activities."""
    for entry in entries:
        found = entry.get("activity")
        if entry["agent"] != mem.agent_id or found is None:
            continue
        try:
            detail = mem.activities.get(found)
        except NotFoundError:
            continue
        yield found, [log.content for log in detail.logs if log.type == "note"]


def same_state(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether every host read the same documents and activities, and the same sessions."""
    views: dict[str, Counter[str]] = {"documents": Counter(), "sessions": Counter()}
    for result in results:
        for part in views:
            views[part][json.dumps(result["fingerprint"][part], sort_keys=True)] += 1
    return {part: len(found) <= 1 for part, found in views.items()}
