"""What every built-in dataset loader does: build, repair orphans explicitly, validate."""

from __future__ import annotations

import pandas as pd

from relviz.database import Database
from relviz.schema import Schema

__all__ = ["load_repaired"]


def load_repaired(schema: Schema, frames: dict[str, pd.DataFrame], how: str,
                  repairs: list[str]) -> Database:
    """The validated database after ``repair_orphans(how)``; the repair report's lines go into
    ``repairs`` (shown by ``relviz.datasets.describe``)."""
    db, report = Database(schema, frames, validate=False).repair_orphans(how=how)
    repairs[:] = str(report).splitlines()
    return db.validate()
