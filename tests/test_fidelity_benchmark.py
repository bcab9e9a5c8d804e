"""``benchmarks/fidelity.py``'s command line, on the smallest grid (galton, one run)."""
from __future__ import annotations

import csv
from pathlib import Path


def test_save_synthetic_writes_each_runs_database(tmp_path: Path) -> None:
    """``--save-synthetic``: the run's synthetic database is written under
    ``OUT/synthetic/<dataset>_<mechanism>_<method>_eps<ε>_seed<seed>/`` and reads back with the
    row counts the run's ``synthetic_rows`` measures; without the flag nothing is written."""
    import benchmarks.fidelity as F
    from relviz.database import Database

    args = ["--datasets", "galton", "--methods", "degree", "--mechanisms", "independent",
            "--eps", "1", "--seeds", "1", "--first-seed", "2"]
    F.main([*args, "--out", str(tmp_path / "plain")])
    assert not (tmp_path / "plain" / "synthetic").exists()
    F.main([*args, "--out", str(tmp_path / "saved"), "--save-synthetic"])
    run = tmp_path / "saved" / "synthetic" / "galton_independent_degree_eps1_seed2"
    assert run.name == F.synthetic_dir({"dataset": "galton", "mechanism": "independent",
                                        "method": "degree", "epsilon": 1.0, "seed": 2})
    syn = Database.from_parquet_dir(run)
    with open(tmp_path / "saved" / "fidelity.csv", newline="", encoding="utf-8") as f:
        rows = {r["item"]: float(r["value"]) for r in csv.DictReader(f)
                if r["measure"] == "synthetic_rows"}
    assert rows and {t: float(len(syn[t])) for t in rows} == rows
