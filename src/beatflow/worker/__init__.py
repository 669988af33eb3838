"""Warm workers: long-lived processes of a local Snakemake run, one or more per group of rules, that run the
rules' stages so that imports, the CUDA context and the kernels' first calls are paid once per run instead of
once per job. Every stage still writes its own artifact, so Snakemake's caching and reruns are unchanged.

``session`` decides whether a run uses them (the Snakefile), ``groups`` what each group loads and warms up,
``server`` is the worker, ``client`` the rule script's side, ``protocol`` what they share. Nothing here is
imported where workers are off (``BEATFLOW_WORKER=off``, cluster jobs, ``--sdm``)."""
