"""Properties of every simulator, on random request streams (hypothesis).

For every provider, client and stream of requests (appends, edits, parallel threads, idle gaps
from 0 s to 2 h, model switches):

1. the buckets are non-negative and sum to the prompt the provider bills (the rendered prompt
   minus the thinking it strips);
2. the cached tokens never exceed the longest common prefix with an earlier prompt of the same
   model (or that prompt followed by the answer it produced), and are zero when no request of
   that model ran within the provider's longest lifetime;
3. no token is billed twice: the input price is exactly Σ bucket × its rate (genai-prices'
   rates, with its fallbacks), so every prompt token is billed at exactly one rate; an explicit
   cache created for the request (Gemini) is billed beside it once, at the input rate.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from genai_prices import data_snapshot
from genai_prices import types as gp_types
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cache.testing import CacheLab
from replay.prices import Buckets, Pricer, parse_price_override
from replay.render._request import TEXT, THINKING, TOOL_CALL

CONFIGS = [
    # provider, model, client, second model, longest lifetime (s) of any entry
    ("anthropic", "claude-sonnet-4-6", "default", "claude-opus-4-5", 3600),
    ("anthropic", "claude-haiku-4-5", "claude-code", "claude-sonnet-4-5", 3600),
    ("anthropic", "claude-sonnet-4-5", "automatic", "claude-sonnet-4-6", 3600),
    ("aws", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-code",
     "global.anthropic.claude-opus-4-5-v1:0", 3600),
    ("google", "claude-sonnet-4-5", "pi", "claude-opus-4-5", 3600),
    ("openai", "gpt-5", "codex", "gpt-5-mini", 86400),
    ("openai", "gpt-4o", "none", "gpt-4o-mini", 3600),
    ("openai", "gpt-5.6-terra", "codex", "gpt-5.6-luna", 1800),
    ("google", "gemini-2.5-flash", "none", "gemini-2.5-pro", 300),
    ("google", "gemini-2.5-flash", "gemini-explicit", "gemini-2.5-pro", 3600),
    ("deepseek", "deepseek-v4-flash", "none", "deepseek-v4-pro", 7200),
    ("x-ai", "grok-4.6", "codex", "grok-4.7", 300),
    ("moonshotai", "kimi-k3", "claude-code", "kimi-k3.1-pro", 3600),
    ("moonshotai", "kimi-k2.6", "none", "kimi-k2.5", 300),
    ("qwen", "qwen-plus", "pi", "qwen-max", 300),
    ("qwen", "qwen-plus", "none", "qwen-max", 300),
    ("openrouter", "anthropic/claude-sonnet-4.5", "default", "anthropic/claude-opus-4.5", 3600),
]
KINDS = ["user", "text", "thinking", "tool_call", "tool_result", "tool_result"]
GAPS = [0, 0.5, 2, 60, 299, 301, 1799, 1801, 3599, 3601, 7300]
QWEN = "input:0.40,output:1.20,cache_read:0.08,cache_write:0.50"

step = st.tuples(
    st.sampled_from(["main", "main", "main", "agent-1"]),
    st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1500), st.booleans()), max_size=6),
    st.one_of(st.none(), st.integers(0, 40)),
    st.sampled_from(GAPS),
    st.integers(0, 9),
)


def _rate(value, fallback):
    if value is None:
        return fallback
    if isinstance(value, gp_types.TieredPrices):
        return value.base  # prompts here stay far below every tier start
    return value


def expected_input_usd(lab: CacheLab, sent) -> Decimal:
    """Σ bucket × rate with genai-prices' rates and fallbacks (or the Qwen override)."""
    o, req = sent.outcome, sent.request
    override = lab.pricer.override_for(req.model)
    if override is not None:
        inp, read, w5, w1 = (override.input, override.cache_read, override.cache_write,
                             override.cache_write_1h)
    else:
        snapshot = data_snapshot.get_snapshot()
        _, info = snapshot.find_provider_model(req.model, None, req.provider, None)
        p = info.get_prices(req.ts)
        inp, read, w5, w1 = (p.input_mtok, p.cache_read_mtok, p.cache_write_mtok,
                             p.cache_write_1h_mtok)
    inp = _rate(inp, None)
    read = _rate(read, inp)
    w5 = _rate(w5, inp)
    w1 = _rate(w1, w5)
    total = o.uncached * inp + o.cache_read * read + o.cache_write_5m * w5 + o.cache_write_1h * w1
    return total / 1_000_000


def _lcp(a: list[int], b: list[int], tokens: dict[int, int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += tokens[x]
    return n


def _with_answer(p: list[int], cur: list[int], lab: CacheLab) -> int:
    """Tokens of `p` plus the assistant answer that follows it in `cur` (if `p` is a prefix)."""
    tokens = {i: lab.table.blocks[i].tokens for i in cur}
    if cur[: len(p)] != p:
        return 0
    n = sum(tokens[i] for i in p)
    j = len(p)
    kinds = (TEXT, THINKING, TOOL_CALL)
    while j < len(cur) and lab.table.blocks[cur[j]].kind in kinds:
        n += tokens[cur[j]]
        j += 1
    return n


def _strips_thinking(lab: CacheLab, provider: str, model: str, ts) -> bool:
    route = lab.router.route(provider, model)
    book = lab.router.book(route, route.variant)
    return bool(book.get("strips_thinking", route.rules_model, ts, False))


def _billed(ids: list[int], lab: CacheLab, strips: bool) -> list[int]:
    """`ids` without the thinking blocks before the last user turn, where the model strips
    them (written apart from the simulator's `prompt_view`)."""
    if not strips:
        return ids
    # A user block known only by its size (fitted context; every block of a CacheLab) is not a
    # user turn.
    turns = [
        n
        for n, i in enumerate(ids)
        if lab.table.blocks[i].kind in ("user", "summary") and not lab.table.blocks[i].sized_only
    ]
    last = turns[-1] if turns else -1
    return [i for n, i in enumerate(ids) if n >= last or lab.table.blocks[i].kind != "thinking"]


@settings(max_examples=60)
@given(
    config=st.sampled_from(CONFIGS),
    head=st.tuples(st.integers(0, 3000), st.integers(1, 6000)),
    steps=st.lists(step, min_size=1, max_size=8),
)
def test_buckets_sum_cached_bounded_no_double_billing(config, head, steps):
    provider, model, client, other_model, lifetime = config
    lab = CacheLab(provider, model, client=client, agent_version="2.1.0")
    if provider == "qwen":
        rates = [parse_price_override(f"{m}={QWEN}") for m in (model, other_model)]
        lab.pricer = Pricer(dict(rates))
    base = [lab.block("tool", head[0]), lab.block("system", head[1])]
    threads: dict[str, list[int]] = {}
    sent_before: list[tuple[str, float, list[int]]] = []  # (model, t, block ids)
    t = 0.0
    for thread, added, edit, gap, switch in steps:
        t += gap
        ids = threads.setdefault(thread, [*base, lab.block("user", 100)])
        for kind, size, joins in added:
            ids.append(lab.block(kind, size, joins=joins and ids[-1:] != []))
        if edit is not None and len(ids) > 2:
            pos = 2 + edit % (len(ids) - 2)
            ids[pos] = lab.block(lab.table.blocks[ids[pos]].kind, lab.table.blocks[ids[pos]].tokens)
        use = other_model if switch == 0 else model
        sent = lab.send(list(ids), at=t, thread=thread, model=use)
        o, req = sent.outcome, sent.request

        # 1. buckets: non-negative, sum to the billed prompt
        for value in (o.uncached, o.cache_read, o.cache_write_5m, o.cache_write_1h,
                      o.dropped_tokens):
            assert value >= 0
        assert o.prompt + o.dropped_tokens == req.total

        # 2. cached ≤ common prefix with an earlier prompt (or prompt + answer) of this model,
        # both as billed (models that strip earlier thinking at a new user turn)
        strips = _strips_thinking(lab, provider, use, req.ts)
        billed = _billed(ids, lab, strips)
        tokens = {i: lab.table.blocks[i].tokens for i in ids}
        for p in (p for m, _, p in sent_before if m == use):
            tokens.update({i: lab.table.blocks[i].tokens for i in p})
        bound = max(
            (max(_lcp(_billed(p, lab, strips), billed, tokens),
                 _with_answer(_billed(p, lab, strips), billed, lab))
             for m, _, p in sent_before if m == use),
            default=0,
        )
        # An explicit cache created for this request by a call of its own (Gemini
        # cachedContents) is read by it: a prefix of this prompt, once.
        assert o.created_tokens == 0 or (
            o.mechanism == "explicit-context" and o.created_tokens == o.cache_read
        )
        assert o.cache_read <= max(bound, o.created_tokens)
        recent = [pt for m, pt, _ in sent_before if m == use and t - pt <= lifetime]
        if not recent:
            assert o.cache_read == o.created_tokens

        # 3. every token at exactly one rate
        factor = o.price_factor
        assert sent.price.input_usd == expected_input_usd(lab, sent)
        created = lab.pricer.price(
            Buckets(uncached=o.created_tokens), model=use, provider=provider, ts=req.ts
        ).input_usd
        assert sent.cost == (sent.price.total_usd + created) * factor + o.storage_usd
        sent_before.append((use, t, list(ids)))


def test_lab_time_helper():
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    r = lab.request([lab.block("system", 10)], at=90)
    assert r.ts == lab.t0 + timedelta(seconds=90)
