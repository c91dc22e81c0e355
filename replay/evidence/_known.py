"""Where else an agent has a name from: what the evidence check does not take as proof that a
strategy's view hid the name's source (`pricing/known_names.json`, which says why per entry).

A quote or mention is evidence of a loss only when the hidden text is its plausible source:
when nothing else the agent had could have given it the name. Besides the view itself and what
every request sends (system prompt, logged tool definitions, working directory), that is:

- the vocabulary of a harness's built-in tool definitions, which every request sends but its
  logs do not hold (`in_progress`, the status of Claude Code's TodoWrite and Codex's
  update_plan: 88 hidden quotes on the sample logs);
- names that are the same in every project, which a model knows from training: a few listed
  ones (`GitHub`, `console.log`, a bare `package.json`), and any bare site name (`github.com`):
  no shape tells `GitHub` from a project's own `AgentSession`, so those are listed, not
  guessed.
"""

from __future__ import annotations

import re
from functools import cache

from replay._data import load_json

_FILE = "known_names.json"
# A site's name alone, as a URL without a path leaves it (`https://github.com` → `//github.com`):
# a registered name under a generic top-level domain. A deeper host (`us.auth.example.io`) or a
# URL with a path names something a text of this project told.
_BARE_SITE = re.compile(r"(?://)?[A-Za-z0-9-]+\.(?:com|org|net|io|dev)/?")


@cache
def client_vocabulary(agent: str) -> str:
    """The names of `agent`'s built-in tool definitions that its logs do not hold, one a line
    (empty for a harness not listed)."""
    rows = load_json(_FILE)["clients"]
    return "\n".join(n for row in rows if row["agent"] == agent for n in row["names"])


@cache
def _general_names() -> frozenset[str]:
    return frozenset(n for group in load_json(_FILE)["names"] for n in group["names"])


def general_knowledge(piece: str) -> bool:
    """True when `piece` is a name a model has in any project: a listed one, or a bare site."""
    return piece in _general_names() or _BARE_SITE.fullmatch(piece) is not None
