"""``python -m markus_memory.cli``: what the Claude Code hooks run (an absolute interpreter
path works outside the virtual environment, where ``markus-memory`` may not be on PATH)."""

from . import main

main()
