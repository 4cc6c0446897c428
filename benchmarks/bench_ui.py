"""Page render times of ``markus-memory ui`` for a full agent: 500 observations, 50 sessions of
40 messages and 10,000 activities (3 log lines each), after an offline dream. Every page is
fetched over real HTTP (uvicorn on 127.0.0.1, one keep-alive client) and the median wall time
printed; the baseline is the UI's stylesheet fetched the same way (the server's floor), in the
same process. The target is <= 100 ms median per page.

Run: python benchmarks/bench_ui.py [repeats]
"""

from __future__ import annotations

import random
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import httpx
import uvicorn

from markus_memory.config import Settings
from markus_memory.dream import dream
from markus_memory.http_guard import bind_socket
from markus_memory.layers.knowledge import Observation
from markus_memory.memory import open_agent
from markus_memory.ui import create_app

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_ms  # noqa: E402

T0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
VOCAB = [f"w{i}" for i in range(3000)] + ["deploy", "latency", "checkout", "migration", "ana"]
TYPES = ("fact", "preference", "decision", "lesson", "note")
TARGET_MS = 100.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(VOCAB, k=rng.randint(low, high)))


def fill(home: Path, clock: Clock) -> dict[str, str]:
    """The full agent; returns ids of one session, one activity and one dream run."""
    rng = random.Random(11)
    settings = Settings(home=home, clock=clock)
    with open_agent("bench", settings=settings) as mem:
        for i in range(6):
            mem.knowledge.update_section(f"Section {i}", words(rng, 150, 300))
        for key in ("task", "plan", "questions", "people"):
            mem.notebook.upsert(key, words(rng, 30, 80))
        for key in ("deploy", "on-call", "incident"):
            mem.state.update(key, words(rng, 10, 30))
        with mem.knowledge.transaction() as doc:
            for i in range(520):
                moment = T0 + timedelta(minutes=i)
                repeat = i % 10 == 1  # one in ten repeats the one before, for the dream to merge
                text = doc.observations[-1].content + " again" if repeat else words(rng, 12, 40)
                tags = tuple(rng.sample(["db", "deploy", "ana", "search", "ops"], 2))
                doc.observations.append(
                    Observation(f"obs_{i:05d}", rng.choice(TYPES), text, moment, tags)
                )
        session_id = ""
        for _ in range(50):
            clock.now += timedelta(minutes=30)
            session_id = mem.sessions.create("chat").id
            for j in range(40):
                role = "user" if j % 2 == 0 else "assistant"
                mem.sessions.append(session_id, {"role": role, "content": words(rng, 8, 40)})
        activity_id = ""
        for i in range(10_000):
            clock.now += timedelta(seconds=20)
            activity_id = mem.activities.start(
                rng.choice(("task", "chat", "heartbeat")), words(rng, 3, 8)
            )
            mem.activities.log(activity_id, "tool_call", words(rng, 5, 20))
            mem.activities.end(activity_id, success=i % 17 != 0)
        clock.now += timedelta(hours=1)
        report = dream(mem)
        assert report.status == "applied", report
        mem.recall_conversation("warm the transcript index")
    return {"session": session_id, "activity": activity_id, "run": report.run_id or ""}


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        ids = fill(home, clock)
        print(f"filled the agent in {time.perf_counter() - started:.1f} s")
        app = create_app(Settings(home=home, clock=clock))
        sock = bind_socket("127.0.0.1", 0)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        agent = "/agents/bench"
        pages = [
            "/",
            f"{agent}/notebook",
            f"{agent}/knowledge",
            f"{agent}/knowledge?type=fact",
            f"{agent}/knowledge?tag=deploy",
            f"{agent}/knowledge?q=deploy+latency",
            f"{agent}/state",
            f"{agent}/conversations",
            f"{agent}/conversations?q=checkout+migration",
            f"{agent}/conversations/{quote(ids['session'])}",
            f"{agent}/activities",
            f"{agent}/activities?q=latency",
            f"{agent}/activities/{quote(ids['activity'])}",
            f"{agent}/dreams",
            f"{agent}/dreams/{quote(ids['run'])}",
            "/search?q=deploy+latency",
        ]
        with httpx.Client(base_url=base) as client:

            def fetch(path: str) -> None:
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)

            for path in pages:  # warm every page once (caches, transcript catch-up)
                fetch(path)
            baseline = median_ms(lambda: fetch("/static/style.css"), repeats)
            print(f"baseline: the stylesheet over the same server {baseline:.2f} ms")
            print(f"{'page':<58} {'median ms':>10} {'× baseline':>11}")
            worst = 0.0
            for path in pages:
                ms = median_ms(lambda p=path: fetch(p), repeats)
                worst = max(worst, ms)
                print(f"{path:<58} {ms:>10.2f} {ms / baseline:>11.1f}")
        server.should_exit = True
        thread.join(10)
        verdict = "within" if worst <= TARGET_MS else "OVER"
        print(f"slowest page {worst:.2f} ms: {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
