"""Per-beat anomaly scores, the ``score`` rule (:func:`beatflow.score.scores.score`): shape in the VAE's latent
space (:mod:`.morphology`) and timing (:func:`beatflow.score.scores.rhythm_ratio`)."""
