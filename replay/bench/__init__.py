"""Benchmarks: a seeded synthetic agent run, a naive reference, and `replay bench`'s ratios."""

from replay.bench._bench import (
    NAIVE_METHOD,
    TARGETS,
    NaiveRecord,
    bench_table,
    measure_floor,
    naive_replay,
    prefix_session,
    repeated_output_bytes,
    run_bench,
)
from replay.bench._synthetic import synthetic_session, write_synthetic_log

__all__ = [
    "NAIVE_METHOD",
    "TARGETS",
    "NaiveRecord",
    "bench_table",
    "measure_floor",
    "naive_replay",
    "prefix_session",
    "repeated_output_bytes",
    "run_bench",
    "synthetic_session",
    "write_synthetic_log",
]
