"""Reading and writing: source recordings → ``signal.parquet`` (:mod:`.ingest`), parquet tables (:mod:`.tables`),
``.npy`` arrays through kvikio or numpy (:mod:`.arrays`), atomic writes (:mod:`.atomic`) and the signal checks
at ingest (:mod:`.signal_checks`)."""
