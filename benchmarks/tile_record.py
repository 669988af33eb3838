"""A long record for the week benchmark: a CSV record (``time_s`` and leads, as ``beatflow-synth`` writes it)
repeated end to end as one parquet record, with its truth shifted along and a records sheet.

    python -m benchmarks.tile_record data/holter20h.csv data/holter20h_truth.csv --times 8 --out data/week

writes ``data/week.parquet``, ``data/week_truth.csv`` and ``data/week.tsv`` (the 20 h record 8 times: 160 h).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq


def tile(csv: Path, truth: Path, times: int, out: Path) -> Path:
    """Write the tiled record, truth and sheet next to ``out`` (a path without suffix); return the sheet."""
    table = pv.read_csv(csv)
    fs = 1.0 / float(np.median(np.diff(table.column("time_s").to_numpy()[:1000])))
    leads = [name for name in table.column_names if name != "time_s"]
    columns = {name: np.tile(table.column(name).to_numpy().astype(np.float32), times) for name in leads}
    pq.write_table(pa.table(columns), out.with_suffix(".parquet"))
    truth_out, sheet = out.with_name(out.name + "_truth.csv"), out.with_suffix(".tsv")
    labels = pv.read_csv(truth)
    sample = labels.column("sample").to_numpy()
    shifted = np.concatenate([sample + k * table.num_rows for k in range(times)])
    pv.write_csv(
        pa.table({"sample": shifted, "label": np.tile(labels.column("label").to_numpy(zero_copy_only=False), times)}),
        truth_out,
    )
    row = (out.name, str(out.with_suffix(".parquet")), f"{fs:g}", ",".join(leads), str(truth_out))
    sheet.write_text("record\tpath\tfs\tleads\ttruth\n" + "\t".join(row) + "\n")
    return sheet


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", type=Path)
    p.add_argument("truth", type=Path)
    p.add_argument("--times", type=int, default=8)
    p.add_argument("--out", type=Path, required=True, help="path without suffix: .parquet, _truth.csv, .tsv")
    a = p.parse_args(argv)
    print(tile(a.csv, a.truth, a.times, a.out))


if __name__ == "__main__":
    main()
