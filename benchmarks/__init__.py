"""beatflow's benchmarks: scripts that measure the workflow's speed and quality and write what they measured
to ``benchmarks/results/`` (indexed in ``benchmarks/results/README.md``) or to ``docs/``.

Each script is a module of this package, run from the repository root as ``python -m benchmarks.<name> ...``
(``--help`` for its options); none edits the import path, so beatflow must be installed (``pip install -e .``).
What the scripts share is in :mod:`benchmarks.common`: the repository's paths, the workflow's config
(``config/config.yaml``, never a copied value), the machine and library versions a result was measured on,
JSON writing, the artifact paths of one record's stages, a scratch copy of the project for running
Snakemake, and the number formats of the Markdown tables. ``tests/test_benchmarks.py`` runs every script on a
tiny input.
"""
