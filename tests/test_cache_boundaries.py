"""Boundary cases of the automatic-prefix and GPT-5.6 simulators and of the shared miss causes,
hand-computed from docs/cache-rules.md and the research notes (each one pins a comparison or a
limit that the other cache tests leave free).

Split = (read, 1h write, 5m write, uncached).
"""

from __future__ import annotations

from replay.cache import Breakpoint
from replay.cache.testing import CacheLab

TERRA = "gpt-5.6-terra"


def test_a_read_one_step_short_of_the_previous_prompt_is_a_miss():
    # gpt-5: 128-token steps. r1 = 2,000 + 48 = 2,048 = 16 × 128, a prompt that could be read
    # whole. r2 rewrites message 0: shared 2,000 → 128 × ⌊2,000 / 128⌋ = 1,920 read. The edit
    # cost a whole step (2,048 − 1,920 = 128 tokens), more than rounding loses (≤ 127): a miss.
    lab = CacheLab("openai", "gpt-5", client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 48)], at=0)
    r2 = lab.send([system, lab.block("user", 48)], at=10)
    assert r2.split == (1920, 0, 0, 128)
    assert r2.outcome.miss_kind == "prefix-edited"
    assert r2.outcome.miss_cause == "prefix edited at message 0"


def test_a_cached_response_is_read_up_to_the_reasoning_inside_it():
    # gpt-5.3-codex caches the response after the prompt (caches_response) and strips earlier
    # reasoning at a new user turn. Response = text 1,000, reasoning 3,000, text 500: the billed
    # prompt drops the reasoning, so what was cached parts from it at the reasoning; the
    # response's first block still counts. 128 × ⌊(3,500 + 1,000) / 128⌋ = 4,480.
    lab = CacheLab("openai", "gpt-5.3-codex", client="none")
    prompt = [lab.block("system", 2000), lab.block("user", 1500)]
    lab.send(prompt, at=0)
    answer = [
        lab.block("text", 1000),
        lab.block("thinking", 3000, joins=True),
        lab.block("text", 500, joins=True),
    ]
    nxt = lab.send([*prompt, *answer, lab.block("user", 200)], at=10)
    assert nxt.outcome.dropped_tokens == 3000
    assert nxt.outcome.cache_read == 4480


def test_gpt_5_6_third_of_53_explicit_markers_is_not_looked_up():
    # Lookups: the first 2 and the latest 50 explicit breakpoints (+ implicit, 20 earlier ends,
    # developer block). r1 marks u0, u1, u2 (2,010 / 2,020 / 2,030 tokens): it writes the
    # implicit u2 and its latest 3 explicit ones, so all three. r2 marks u0 … u52 (53 markers):
    # u2 is neither among the first 2 nor the latest 50 (u3 … u52), nor among the 20 message
    # ends before the implicit one (u32 … u51): the longest looked-up live entry is u1, 2,020.
    # r2 = 2,000 + 53 × 10 = 2,530; it writes up to its implicit boundary: 510.
    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    us = [lab.block("user", 10) for _ in range(53)]
    lab.send([system, *us[:3]], at=0, breakpoints=[Breakpoint(i) for i in range(1, 4)])
    r2 = lab.send([system, *us], at=10, breakpoints=[Breakpoint(i) for i in range(1, 54)])
    assert r2.split == (2020, 0, 510, 0)


def test_gpt_5_6_twenty_first_earlier_message_end_is_not_looked_up():
    # r1 writes u1 (2,100). r2 appends 21 user messages: the 20 message ends before the
    # implicit one (the last) are the 20 messages before it, so u1 is out of reach (whether
    # the developer block counts among the 20 or not: it is looked up anyway, and holds no
    # entry). Nothing read; 2,100 + 210 = 2,310 written.
    lab = CacheLab("openai", TERRA, client="codex")
    system, u1 = lab.block("system", 2000), lab.block("user", 100)
    lab.send([system, u1], at=0)
    r2 = lab.send([system, u1, *(lab.block("user", 10) for _ in range(21))], at=10)
    assert r2.split == (0, 0, 2310, 0)
    assert r2.outcome.miss_kind == "beyond-lookback"


def test_an_expiry_past_the_cap_at_an_idle_gap_of_exactly_the_ttl_is_named_by_its_age():
    # gpt-4o: requests every 500 s up to 3,500 s keep the prompt warm (created at 0). At
    # 4,100 s it is idle exactly 600 s (still within the TTL) but 4,100 s old > 3,600 s.
    lab = CacheLab("openai", "gpt-4o", client="none")
    prompt = [lab.block("system", 2000), lab.block("user", 100)]
    for at in range(0, 3501, 500):
        lab.send(prompt, at=at)
    r = lab.send(prompt, at=4100)
    assert r.split == (0, 0, 0, 2100)
    assert r.outcome.miss_cause == "TTL expired (age 1h08m20s > max lifetime 1h00m)"


def test_a_prefix_cached_in_another_scope_outranks_the_strategy_s_edit():
    # Codex keys isolate conversations (gpt-5). main caches system + X (2,500). agent-1 first
    # sends system + Y, then rewrites message 0 to X: its own scope shares 2,000 (1,920 read);
    # the 2,500 held under main's key are unavailable to it. The cache being unavailable comes
    # before the strategy's change (docs/cache-rules.md, "Miss causes").
    lab = CacheLab("openai", "gpt-5", client="codex")
    system, x = lab.block("system", 2000), lab.block("user", 500)
    lab.send([system, x, lab.block("text", 100)], at=0)
    lab.send([system, lab.block("user", 100)], at=10, thread="agent-1")
    r = lab.send([system, x, lab.block("user", 100)], at=20, thread="agent-1")
    assert r.split == (1920, 0, 0, 680)
    assert r.outcome.miss_kind == "other-scope"
    assert r.outcome.miss_cause == "different cache scope (key=session:main)"


def test_providers_without_strips_thinking_keep_earlier_reasoning():
    # x-ai.json has no strips_thinking row: reasoning stays in the prompt at a new user turn.
    # r2 shares all of r1 (2,000 + 100 + 300 = 2,400): 128 × ⌊2,400 / 128⌋ = 2,304 read, of
    # 2,460 billed.
    lab = CacheLab("x-ai", "grok-4.6", client="none")
    r1 = [lab.block("system", 2000), lab.block("user", 100), lab.block("thinking", 300)]
    lab.send(r1, at=0)
    r2 = lab.send([*r1, lab.block("text", 10), lab.block("user", 50)], at=10)
    assert r2.outcome.dropped_tokens == 0
    assert r2.split == (2304, 0, 0, 156)


def test_a_read_logged_out_of_time_order_does_not_shorten_the_prompt_s_life():
    # Requests are simulated in file order, which need not be time order (a thread logged after
    # another). Lifetimes run from the start of the request that last read the entry: a read
    # dated 100 s, simulated after one dated 500 s, leaves the prompt's last use at 500 s.
    # gpt-4o: 600 s idle TTL. P = 2,000 + 1,000 + 1,000 = 4,000; each agent shares its first
    # 3,000. At 1,050 s P is idle 550 s (live): main reads all 4,000 → 128 × 31 = 3,968.
    lab = CacheLab("openai", "gpt-4o", client="none")
    system, u1, x = lab.block("system", 2000), lab.block("user", 1000), lab.block("user", 1000)
    lab.send([system, u1, x], at=0)
    lab.send([system, u1, lab.block("user", 100)], at=500, thread="agent-1")
    lab.send([system, u1, lab.block("user", 100)], at=100, thread="agent-2")
    r = lab.send([system, u1, x, lab.block("text", 10), lab.block("user", 10)], at=1050)
    assert r.outcome.cache_read == 3968


def test_gpt_5_6_a_read_logged_out_of_time_order_does_not_shorten_the_entry_s_life():
    # As above, GPT-5.6 (30 min TTL "after the last write or reuse"): the entry at u2 (4,010)
    # reused at 500 s and then by a request dated 100 s is still live at 2,000 s (idle 1,500 s).
    # r: 4,010 read, 20 written.
    lab = CacheLab("openai", TERRA, client="none")
    head = [lab.block("system", 2000), lab.block("user", 1000), lab.block("text", 10),
            lab.block("user", 1000)]
    lab.send(head, at=0)
    for thread, at in (("agent-1", 500), ("agent-2", 100)):
        lab.send([*head, lab.block("text", 10), lab.block("user", 100)], at=at, thread=thread)
    r = lab.send([*head, lab.block("text", 10), lab.block("user", 10)], at=2000)
    assert r.split == (4010, 0, 20, 0)


def test_a_granularity_of_one_reads_the_exact_shared_prefix():
    # `granularity_tokens: 1` is no rounding (0 is refused: test_cache_rules). Shared 2,000 of
    # 2,100: 2,000 read.
    lab = CacheLab("openai", "gpt-5", client="none", overrides={"openai.granularity_tokens": 1})
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    assert lab.send([system, lab.block("user", 100)], at=10).split == (2000, 0, 0, 100)


def test_a_thread_s_prompt_expired_over_a_day_ago_still_names_its_miss():
    # Every request that reads less than it could gets a cause (docs/cache-rules.md). gpt-5:
    # 24h retention, 30 min idle. main's prompt (2,100) is 25 h idle when main sends again,
    # after another thread's request (which drops prompts expired for over a day): nothing is
    # read, and the cause is the expiry, idle 90,001 s = 25h00m01s.
    lab = CacheLab("openai", "gpt-5", client="none")
    head = [lab.block("system", 2000), lab.block("user", 100)]
    lab.send(head, at=0)
    lab.send([lab.block("system", 1500), lab.block("user", 100)], at=90000, thread="agent-1")
    r = lab.send([*head, lab.block("text", 10), lab.block("user", 10)], at=90001)
    assert r.split == (0, 0, 0, 2120)
    assert r.outcome.miss_kind == "ttl-expired"
    assert r.outcome.miss_cause == "TTL expired (idle 25h00m01s > TTL 30m)"


def test_a_prompt_below_the_minimum_repeated_after_the_ttl_is_below_minimum_not_expired():
    # gpt-5: 1,000 < 1,024 tokens was never cached, so no entry outlived its TTL when the same
    # prompt comes back 5,000 s later (> 30 min): the cause is the minimum, as 10 s later.
    lab = CacheLab("openai", "gpt-5", client="none")
    prompt = [lab.block("system", 900), lab.block("user", 100)]
    lab.send(prompt, at=0)
    for at in (10, 5000):
        r = lab.send(prompt, at=at)
        assert r.split == (0, 0, 0, 1000)
        assert r.outcome.miss_kind == "below-minimum", at
        assert r.outcome.miss_cause == "below minimum cacheable length (1,000 < 1,024 tokens)"


def test_a_prefix_below_the_minimum_held_in_another_scope_is_no_miss():
    # Codex keys isolate conversations. agent-1's first prompt (1,500) shares 1,000 < 1,024
    # tokens with main's: even in main's scope it would read nothing, so it is a plain cold
    # start, not an other-scope miss.
    lab = CacheLab("openai", "gpt-5", client="codex")
    system = lab.block("system", 1000)
    lab.send([system, lab.block("user", 10)], at=0)
    sub = lab.send([system, lab.block("user", 500)], at=10, thread="agent-1")
    assert sub.split == (0, 0, 0, 1500)
    assert sub.outcome.miss_kind == "cold-start"


def test_reasoning_stripped_at_an_earlier_turn_is_not_this_request_s_miss():
    # gpt-5 strips earlier reasoning at a new user turn. r2 (a new turn) drops r1's 300
    # reasoning tokens: 500 + 100 + 10 + 50 = 660 billed, below the minimum. r3 goes on in the
    # same turn (tool call + result, no new user message): the same 300 stay dropped, 1,160
    # billed. It reads nothing because r2's prompt was too short to cache, not because of a
    # stripping at this request: no miss (as for any prefix shared only with a short prompt).
    lab = CacheLab("openai", "gpt-5", client="none")
    r1 = [lab.block("system", 500), lab.block("user", 100), lab.block("thinking", 300)]
    lab.send(r1, at=0)
    r2 = [*r1, lab.block("text", 10), lab.block("user", 50)]
    assert lab.send(r2, at=10).outcome.dropped_tokens == 300
    r3 = lab.send([*r2, lab.block("tool_call", 10), lab.block("tool_result", 490)], at=20)
    assert r3.outcome.dropped_tokens == 300
    assert r3.split == (0, 0, 0, 1160)
    assert r3.outcome.miss_kind is None


def test_a_prompt_shortened_to_its_head_names_no_message():
    # r2 keeps only the system prompt: it ends in no message, so the cause names none (a
    # shortened prompt otherwise names its last message). gpt-5: shared 2,000 → 1,920 read.
    lab = CacheLab("openai", "gpt-5", client="none")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    r2 = lab.send([system], at=10)
    assert r2.split == (1920, 0, 0, 80)
    assert r2.outcome.miss_kind == "prefix-edited"
    assert r2.outcome.miss_cause == "prompt shortened"


def test_a_prompt_of_another_scope_not_yet_ready_is_named_by_its_scope():
    # Codex keys isolate conversations (gpt-5). agent-1 starts 0.5 s after main, before main's
    # prompt is readable (1 s): but under main's key it would never be readable by agent-1, so
    # the scope is the cause. Shared 2,000: nothing read.
    lab = CacheLab("openai", "gpt-5", client="codex")
    system = lab.block("system", 2000)
    lab.send([system, lab.block("user", 100)], at=0)
    sub = lab.send([system, lab.block("user", 100)], at=0.5, thread="agent-1")
    assert sub.split == (0, 0, 0, 2100)
    assert sub.outcome.miss_kind == "other-scope"


def test_gpt_5_6_an_explicit_marker_on_the_implicit_boundary_takes_no_second_write():
    # Up to 4 boundaries written: the implicit one + the latest explicit ones. r1 marks u1 … u5;
    # u5 is also the implicit boundary, one boundary: written are u5 (2,060) and the 3 latest
    # other markers u2, u3, u4 (2,030 / 2,040 / 2,050). r2 = system, u0, u1, u2, then a new
    # user message: u2 is an earlier message end, looked up and live. Read 2,030, write 10.
    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    us = [lab.block("user", 10) for _ in range(6)]
    lab.send([system, *us], at=0, breakpoints=[Breakpoint(i) for i in range(2, 7)])
    r2 = lab.send([system, *us[:3], lab.block("user", 10)], at=10, breakpoints=[])
    assert r2.split == (2030, 0, 10, 0)
