"""Where else an agent has a name from: what the evidence check does not take as proof that a
strategy's view hid the name's source (`pricing/known_names.json`, which says why per entry).

A quote or mention is evidence of a loss only when the hidden text is its plausible source:
when nothing else the agent had could have given it the name. Besides the view itself and what
every request sends (system prompt, logged tool definitions, working directory), that is:

- the vocabulary of a harness's built-in tool definitions, which every request sends but its
  logs do not hold (`in_progress`, the status of Claude Code's TodoWrite and Codex's
  update_plan: 88 hidden quotes on the sample logs).
"""

from __future__ import annotations

from functools import cache

from replay._data import load_json

_FILE = "known_names.json"


@cache
def client_vocabulary(agent: str) -> str:
    """The names of `agent`'s built-in tool definitions that its logs do not hold, one a line
    (empty for a harness not listed)."""
    rows = load_json(_FILE)["clients"]
    return "\n".join(n for row in rows if row["agent"] == agent for n in row["names"])

