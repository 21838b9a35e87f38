"""The one reader protocol of every parsed result (netbench, OSU, IMB, NPB, b_eff):
`value(table, column, **where)`, a finite number from the one row of `table` whose columns
equal `where`, or from the result's summary when `table` is None.

A check declares each figure in one form whatever the suite (`metrics.reads`); a parser says
what its tables and summary are (`readout_tables`, `readout_summary`) and which error a failed
lookup raises (`lookup_error`, the parser's own, so callers catch what they already catch).
Every failure names the result, the table, the row and the column.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar


class Readout:
    """Mixed into a parsed result: table, row and value lookups over its tables and summary."""

    #: What a failed lookup raises.
    lookup_error: ClassVar[type[Exception]] = ValueError

    def readout_tables(self) -> dict[str, list[dict[str, Any]]]:
        """{table name: rows}."""
        return {}

    def readout_summary(self) -> dict[str, Any]:
        """{figure: value} of the whole run."""
        return {}

    def readout_source(self) -> str:
        return str(getattr(self, "source", "") or type(self).__name__)

    def unsound_reason(self) -> str:
        """Why a figure the program printed as null was not measured (netbench's flags)."""
        return "no reason given"

    def table(self, name: str) -> list[dict[str, Any]]:
        tables = self.readout_tables()
        if name not in tables:
            raise self.lookup_error(
                f"{self.readout_source()}: no table {name!r} in this result "
                f"(tables: {', '.join(sorted(tables)) or 'none'})")
        return tables[name]

    def row(self, table: str, **where: Any) -> dict[str, Any]:
        """The single row of `table` whose columns equal `where` (e.g. size_bytes=8)."""
        rows = [r for r in self.table(table) if all(r.get(k) == v for k, v in where.items())]
        if len(rows) != 1:
            cond = ", ".join(f"{k}={v}" for k, v in where.items()) or "no condition"
            what = "no row" if not rows else f"{len(rows)} rows"
            raise self.lookup_error(f"{self.readout_source()}: {what} with {cond} in table "
                                    f"{table!r}")
        return rows[0]

    def value(self, table: str | None, column: str, **where: Any) -> float:
        """A finite number from the summary (table=None) or from one row of a table."""
        source = self.readout_source()
        if table is None:
            summary = self.readout_summary()
            if column not in summary:
                raise self.lookup_error(f"{source}: no summary value {column!r}")
            raw, where_text = summary[column], f"summary {column}"
        else:
            row = self.row(table, **where)
            if column not in row:
                raise self.lookup_error(f"{source}: table {table!r} has no column {column!r} "
                                        f"(columns: {', '.join(row)})")
            raw = row[column]
            cond = ", ".join(f"{k}={v}" for k, v in where.items())
            where_text = f"{table}[{cond}].{column}"
        if raw is None:
            raise self.lookup_error(f"{source}: {where_text} was not measured soundly "
                                    f"({self.unsound_reason()})")
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            raise self.lookup_error(f"{source}: {where_text} is not a finite number: {raw!r}")
        return float(raw)
