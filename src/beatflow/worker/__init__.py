"""The warm worker: one long-lived process per free job slot of a local Snakemake run, which runs the rules'
stages so that imports, the CUDA context and compiled kernels are paid once per run instead of once per job.
Every stage still writes its own artifact, so Snakemake's caching and reruns are unchanged.

``server`` is the worker, ``client`` the rule script's side, ``protocol`` what they share."""
