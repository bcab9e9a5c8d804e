"""Write a run's release folder: what ``relviz synth`` puts in ``DIR/release/`` and the Studio's
*Save release* button writes (docs/privacy.md, "What a run writes").

A release folder holds only outputs of the accounted mechanisms and public facts:
``tables/<table>.parquet`` and ``synthetic.sqlite`` (the synthetic database, PRIMARY/FOREIGN KEY
constraints included), ``ledger.json``, ``plan.json``, ``schema.json`` and optionally
``synthesizer.pkl`` (``RelationalSynthesizer.save(release=True)``: the fitted models without the
noise seed). Nothing here reads the real data.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relviz.database import Database
    from relviz.synthesizer import RelationalSynthesizer

__all__ = ["RELEASE_FILES", "MODEL_FILE", "write_release", "write_release_metadata"]

RELEASE_FILES = ("tables", "synthetic.sqlite", "ledger.json", "plan.json", "schema.json")
"""Everything a release folder holds (``tables`` is a folder), besides :data:`MODEL_FILE`."""
MODEL_FILE = "synthesizer.pkl"
"""The fitted models a release folder may add (no noise seed)."""


def write_release_metadata(directory: str | Path, synth: RelationalSynthesizer, *,
                           model: bool = False) -> list[Path]:
    """Write ``ledger.json``, ``plan.json``, ``schema.json`` and, with ``model``,
    :data:`MODEL_FILE` of the fitted ``synth`` into ``directory`` (created; without ``model``
    an earlier run's :data:`MODEL_FILE` there is removed). Returns the paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    synth.accountant_.to_json(d / "ledger.json")
    synth.plan_.to_json(d / "plan.json")
    synth.schema_.to_json(d / "schema.json")
    out = [d / "ledger.json", d / "plan.json", d / "schema.json"]
    if model:
        out.append(synth.save(d / MODEL_FILE, release=True))
    elif (d / MODEL_FILE).exists():  # an earlier run's models: the folder holds one run's release
        (d / MODEL_FILE).unlink()
    return out


def write_release(directory: str | Path, synth: RelationalSynthesizer, synthetic: Database, *,
                  model: bool = False) -> list[Path]:
    """Write the release folder of a fitted ``synth`` and its sampled ``synthetic`` database.

    Args:
        directory: The folder (created). It must be empty or hold only release files (those
            are replaced, and an earlier release's ``tables/<table>.parquet`` of a table not in
            ``synthetic`` is removed): other files are never overwritten or mixed with a
            release.
        synth: The fitted :class:`~relviz.synthesizer.RelationalSynthesizer`.
        synthetic: A database it sampled (``synth.sample()``; the Studio's ``run.result``).
        model: Add :data:`MODEL_FILE`.

    Returns:
        The paths written (``tables`` as one folder).

    Raises:
        FileExistsError: ``directory`` (or its ``tables`` folder) holds files that are not
            release files (nothing written).
        NotFittedError: ``synth`` is not fitted.
    """
    from relviz.errors import NotFittedError

    if not getattr(synth, "fitted_", False):
        raise NotFittedError("fit the synthesizer before writing its release")
    d = Path(directory)
    stale: list[Path] = []
    if d.exists():
        other = sorted(p.name for p in d.iterdir() if p.name not in RELEASE_FILES + (MODEL_FILE,))
        if (d / "tables").is_dir():  # an earlier release's tables: Parquet files only
            current = {f"{t}.parquet" for t in synthetic.table_names}
            for p in sorted((d / "tables").iterdir()):
                if not (p.is_file() and p.suffix == ".parquet"):
                    other.append(f"tables/{p.name}")
                elif p.name not in current:
                    stale.append(p)
        if other:
            raise FileExistsError(f"{d} holds files that are not part of a release "
                                  f"({', '.join(other[:5])}); choose an empty folder")
    d.mkdir(parents=True, exist_ok=True)
    for p in stale:  # tables of an earlier release that this database does not have
        p.unlink()
    synthetic.to_parquet(d / "tables")
    synthetic.to_sqlite(d / "synthetic.sqlite")
    return [d / "tables", d / "synthetic.sqlite"] + write_release_metadata(d, synth, model=model)
