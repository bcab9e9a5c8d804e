"""A tiny clinic database for the widget tests and notebooks (deterministic, no I/O).

patients (private, the protected entity) ← visits (private) ← prescriptions (private);
visits → doctors (public). The schema starts with one FK (visits.patient_id → patients, without
its cap) and leaves visits.doctor_id and prescriptions.visit_id undeclared, so the editor has
proposals to offer, problems to show (a missing cap, an orphan visit, undeclared columns) and
FKs to add by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relviz import Attribute, Database, ForeignKey, PrivacyUnit, Schema, Table

__all__ = ["clinic_frames", "clinic_schema", "clinic_db", "clinic_full_db"]


def clinic_frames(seed: int = 7) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    patients = pd.DataFrame({"patient_id": np.arange(1, 41),
                             "age": rng.integers(20, 80, 40),
                             "sex": rng.choice(["F", "M"], 40)})
    doctors = pd.DataFrame({"doctor_id": [f"D{i:02d}" for i in range(1, 7)],
                            "specialty": ["gp", "gp", "cardio", "derm", "ortho", "gp"]})
    n_v = 120
    visit_patient = rng.integers(1, 41, n_v)
    visit_patient[-1] = 999  # one orphan visit
    visits = pd.DataFrame({"visit_id": np.arange(1, n_v + 1), "patient_id": visit_patient,
                           "doctor_id": rng.choice(doctors["doctor_id"], n_v),
                           "cost": np.round(rng.uniform(20, 400, n_v), 2),
                           "diagnosis": rng.choice(["flu", "sprain", "rash", "check-up"], n_v)})
    n_p = 150
    prescriptions = pd.DataFrame({"rx_id": np.arange(1, n_p + 1),
                                  "visit_id": rng.integers(1, n_v + 1, n_p),
                                  "drug": rng.choice(["A", "B", "C"], n_p)})
    return {"patients": patients, "doctors": doctors, "visits": visits, "prescriptions": prescriptions}


def clinic_schema() -> Schema:
    return Schema(
        (Table("patients", ("patient_id",), (Attribute.numeric("age", 0, 100, bins=10, integer=True),
                                              Attribute.categorical("sex", ["F", "M"]))),
         Table("doctors", ("doctor_id",), (Attribute.categorical(
             "specialty", ["gp", "cardio", "derm", "ortho"]),), public=True),
         Table("visits", ("visit_id",), (Attribute.numeric("cost", 0, 500, bins=10),
                                         Attribute.categorical("diagnosis",
                                                               ["flu", "sprain", "rash", "check-up"]))),
         Table("prescriptions", ("rx_id",), (Attribute.categorical("drug", ["A", "B", "C"]),))),
        (ForeignKey("visits", ("patient_id",), "patients", ("patient_id",)),),
        PrivacyUnit(entity="patients", rationale="one patient and everything about them"),
        name="clinic")


def clinic_db() -> Database:
    return Database(clinic_schema(), clinic_frames(), validate=False)


def clinic_full_db() -> Database:
    """Every FK declared, every cap set, the orphan visit dropped: a valid database to budget."""
    s = clinic_schema()
    visits = s.table("visits")
    fks = (*s.foreign_keys,
           ForeignKey("visits", ("doctor_id",), "doctors", ("doctor_id",)),
           ForeignKey("prescriptions", ("visit_id",), "visits", ("visit_id",)))
    unit = PrivacyUnit(entity="patients", caps={"visits.patient_id->patients": 5,
                                                "prescriptions.visit_id->visits": 3},
                       rationale="one patient and everything about them")
    full = Schema(tuple(visits if t.name == "visits" else t for t in s.tables), fks, unit, name="clinic")
    db, _ = Database(full, clinic_frames(), validate=False).repair_orphans("drop")
    return db.validate()
