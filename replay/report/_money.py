"""Money as `replay` shows it, in the terminal tables and in the report's markers: one
formatter (the page's script, `report.js` `fmtUsd`, writes the same text)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def usd(v: Decimal | None, places: int = 4) -> str:
    """`$1,234.5678`, `-$0.0012` (the sign before the dollar); below the last place, two
    significant digits: `$0.000012` (money is not written in scientific notation). Halves are
    rounded up, as the HTML report's `fmtUsd` does: $0.01845 is $0.0185 in both. Two digits
    that round up to a power of ten are written as that value is: $0.00000999 is $0.000010,
    and $0.0000999, up to the last place, is $0.0001 (not $0.0000100 and $0.000100)."""
    if v is None:
        return ""
    sign, v = ("-" if v < 0 else ""), abs(v)
    last = Decimal(1).scaleb(-places)
    if v < last and v != 0:
        rounded = v.quantize(Decimal(1).scaleb(v.adjusted() - 1), ROUND_HALF_UP)
        if rounded < last:
            places = 1 - rounded.adjusted()
    return f"{sign}${v.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP):,.{places}f}"
