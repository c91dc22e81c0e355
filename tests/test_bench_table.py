"""`replay bench`'s table: what it shows for a known benchmark document."""

from __future__ import annotations

import io

from rich.console import Console

from replay.bench import bench_table
from replay.bench._bench import _targets


def _row(strategy: str, extrapolated: bool) -> dict:
    return {"strategy": strategy, "requests": 100, "fast_seconds": 0.5,
            "requests_per_second": 200.0, "naive_seconds": 80.0,
            "naive_extrapolated": extrapolated, "naive_ratio": 160.0, "naive_requests": 40,
            "naive_seconds_measured": 20.0, "fast_seconds_at_naive_requests": 0.2,
            "naive_ratio_measured": 100.0, "naive_scaling_exponent": 1.5}


def _document(*, extrapolated: bool, workers: dict | None = None) -> dict:
    doc = {
        "requests": 100, "seed": 0, "size_scale": 1.0, "peak_prompt_tokens": 123_456,
        "log_bytes": 2_500_000, "log_repeated_output_bytes": 250_000,
        "rows": [_row("baseline", extrapolated), _row("sliding-10", False)],
        "all": {"seconds": 2.0, "requests_per_second": 100.0, "naive_seconds": 160.0,
                "naive_ratio": 80.0, "workers": workers},
        "floor": {"seconds": 0.5, "read_seconds": 0.25, "tokenize_seconds": 0.25,
                  "distinct_blocks": 1234, "distinct_tokens": 56_789},
        "fast_floor_ratio": 4.0,
        "sent_floor": {"seconds": 0.8, "read_seconds": 0.25, "tokenize_seconds": 0.55,
                       "distinct_blocks": 2000, "distinct_tokens": 90_000},
        "fast_sent_floor_ratio": 2.5,
        "fast_floor_per_strategy": {"median": 1.5, "min": 1.5, "max": 1.5},
        "doubling": {"requests": 200, "seconds": 4.4, "ratio": 2.1, "cpu_seconds": [2.0, 4.2],
                     "wall_seconds": [2.2, 4.6], "wall_ratio": 2.09, "in_process_ratio": 2.2,
                     "runs": 2, "prompt_tokens": [10, 39], "prompt_tokens_ratio": 3.9},
        "memory": {"peak_bytes": 10_000_000, "log_bytes": 2_500_000, "ratio": 4.0,
                   "peak_bytes_records": 30_000_000, "ratio_records": 12.0},
        "naive_extrapolated": extrapolated,
    }
    doc["targets"] = _targets(doc)
    return doc


def _text(doc: dict) -> str:
    console = Console(record=True, width=200, file=io.StringIO(), highlight=False)
    console.print(bench_table(doc))
    return console.export_text()


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.lstrip("│ ").startswith(start))


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("│")[1:-1]]


def test_the_table_shows_each_ratio_and_whether_it_meets_its_target():
    text = _text(_document(extrapolated=True))
    assert "log 2.5 MB" in text and "peak prompt 123,456 tokens" in text
    # naive/fast 80× misses ≥ 100; fast/floor 4× misses ≤ 3; doubling 2.1× and memory 4× meet
    assert _cells(_line(text, "naive / fast (all)"))[1:4] == ["80×", ">= 100", "no"]
    assert _cells(_line(text, "fast / floor "))[1:4] == ["4.00×", "<= 3", "no"]
    doubling = _line(text, "doubling (2N / N)")
    assert _cells(doubling)[1:4] == ["2.10×", "<= 2.2", "yes"]
    assert "CPU 2.0 → 4.2 s" in doubling and "wall 2.09×" in doubling
    assert "in this process 2.20× (4.4 s at 200 requests)" in doubling
    memory = _line(text, "peak memory / log size")
    assert _cells(memory)[1:4] == ["4.00×", "<= 4", "yes"]
    assert "10 MB vs 2.5 MB (RSS); 12.0× (30 MB) keeping every record" in memory
    assert "(held once): 0.10× the log" in memory  # 250 kB of a 2.5 MB log
    assert "floor 0.50 s = read 0.25 s + tokenize 1,234 distinct blocks (56,789 tokens)" in text


def test_extrapolated_figures_are_starred_and_explained():
    text = _text(_document(extrapolated=True))
    assert "80.0*" in _line(text, "baseline") and "160×*" in _line(text, "baseline")
    assert "*" not in _line(text, "sliding-10")
    assert "* naive run on the first 40 requests, extrapolated to 100" in text
    plain = _text(_document(extrapolated=False))
    assert "*" not in plain and "extrapolated" not in plain


def test_the_workers_row_counts_requests_of_every_strategy():
    text = _text(_document(extrapolated=False, workers={"workers": 2, "seconds": 0.5}))
    # 100 requests × 2 strategies in 0.5 s
    assert _cells(_line(text, "all, 2 workers"))[2] == "400"
