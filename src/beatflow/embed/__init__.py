"""Beats into fixed-length rows, the ``embed`` rule (:func:`beatflow.embed.rows.embed`), with its Numba kernels
(:mod:`.kernels`, :mod:`.kernels_cuda`)."""
