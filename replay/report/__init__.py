"""What `replay` prints and writes: terminal tables and JSON / CSV / Parquet exports."""

from replay.report._export import frame_rows, to_csv, to_json, to_parquet_bytes, write_output
from replay.report._table import console, print_table, summary_table, turns_table

__all__ = [
    "console",
    "frame_rows",
    "print_table",
    "summary_table",
    "to_csv",
    "to_json",
    "to_parquet_bytes",
    "turns_table",
    "write_output",
]
