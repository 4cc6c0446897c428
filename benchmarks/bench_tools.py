"""Agent-integration hot paths: tool dispatch, prompt assembly, token estimation.

    python benchmarks/bench_tools.py            # defaults: 200 observations, 5 full sections
    python benchmarks/bench_tools.py --repeat 50

Prints medians (ms) and ratios against a baseline measured in the same process:
dispatch("memory_save") vs KnowledgeFile.save_observation (the cost of validation + JSON),
render_memory_context per profile, and the knowledge cut with the heuristic vs the exact
(toktok-rs) estimator.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from markus_memory import open_agent
from markus_memory.prompt import prepare_knowledge, render_memory_context
from markus_memory.tokens import ExactEstimator, HeuristicEstimator, TokenEstimator
from markus_memory.tools import dispatch

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_ms  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, open_agent("agt_bench", home=Path(tmp)) as mem:
        for i in range(5):
            mem.knowledge.update_section(f"section-{i}", f"- step {i}: deploy via staging\n" * 90)
        for i in range(args.observations):
            mem.knowledge.save_observation(f"observation {i} about deploy and staging", "fact")
        mem.notebook.upsert("plan", "step 2 of 5 " * 40)

        # interleaved, so both see the same file size (a save rewrites the observation block)
        direct_times, tool_times = [], []
        for i in range(args.repeat):
            direct_times.append(
                median_ms(lambda i=i: mem.knowledge.save_observation(f"direct {i}", tags=("a",)), 1)
            )
            tool_times.append(
                median_ms(
                    lambda i=i: dispatch(mem, "memory_save", {"content": f"tool {i}", "tags": "a"}),
                    1,
                )
            )
        direct, tool = statistics.median(direct_times), statistics.median(tool_times)
        refused = median_ms(lambda: dispatch(mem, "memory_save", [{"content": "x"}]), args.repeat)
        print(f"save_observation (baseline)      {direct:8.3f} ms")
        print(f"dispatch memory_save             {tool:8.3f} ms  ratio {tool / direct:5.2f}")
        print(f"dispatch refused (array)         {refused:8.3f} ms")
        search = median_ms(lambda: dispatch(mem, "memory_search", {"query": "deploy"}), args.repeat)
        print(f"dispatch memory_search           {search:8.3f} ms")
        for profile in ("execute", "converse", "reflex"):
            ms = median_ms(
                lambda p=profile: render_memory_context(mem, p, estimator=HeuristicEstimator()),
                args.repeat,
            )
            print(f"render_memory_context {profile:<10} {ms:8.3f} ms")
        recall = median_ms(
            lambda: render_memory_context(mem, "converse", query="deploy staging"), args.repeat
        )
        print(f"render + automatic recall        {recall:8.3f} ms")

        raw = "\n\n".join(f"## {s.name}\n{s.body}" for s in mem.knowledge.sections())
        estimators: list[TokenEstimator] = [HeuristicEstimator()]
        try:
            estimators.append(ExactEstimator())
        except ImportError:
            print("(toktok-rs not installed: exact estimator skipped)")
        base = None
        for est in estimators:
            ms = median_ms(lambda e=est: prepare_knowledge(raw, 1500, 6000, e), args.repeat)
            base = base or ms
            print(f"knowledge cut, {est.name:<17} {ms:8.3f} ms  ratio {ms / base:5.2f}")


if __name__ == "__main__":
    main()
