"""Figures, the ``plot`` rule (:func:`beatflow.report.plots.plot`), and the cohort summary, the ``cohort`` rule
(:func:`beatflow.report.cohort.write_cohort`)."""
