"""Whole directories of logs: discovery, a worker pool or Ray, shared provider caches across
sessions, an incremental cache, and a Parquet dataset of the results. See docs/batch.md.

- `run_batch(targets, BatchOptions(...), output=DIR)` replays every log it recognises and
  returns a `BatchReport`;
- `scan(DIR)` / `scan(DIR, "requests")` reads the dataset back as a polars LazyFrame.
"""

from replay.batch._dataset import TABLES, scan
from replay.batch._discover import discover, parse_when
from replay.batch._options import BatchOptions
from replay.batch._run import STATUSES, BatchReport, FileStatus, plan_groups, run_batch
from replay.batch._work import REQUEST_META, SESSION_META, SESSION_PRICING

__all__ = [
    "REQUEST_META",
    "SESSION_META",
    "SESSION_PRICING",
    "STATUSES",
    "TABLES",
    "BatchOptions",
    "BatchReport",
    "FileStatus",
    "discover",
    "parse_when",
    "plan_groups",
    "run_batch",
    "scan",
]
