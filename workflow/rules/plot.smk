rule plot:
    """Latent space, whole-recording trace, RR intervals, anomaly gallery: HTML (bokeh) and PNG. The PNGs go in the
    report; the interactive HTML files stay beside it in results/{record}/plots/: each inlines BokehJS (~2.9 MB), and a
    browser refuses to show an embedded file of over 2 MiB. On the CPU whatever the device, so it holds no GPU slot. The
    pruning bounds and window offset come from beats.parquet's metadata. Its work: `beatflow.report.plots.plot`
    (scripts/plot.py)."""
    input:
        signal="results/{record}/signal.parquet",
        beats="results/{record}/beats.parquet",
        embedding="results/{record}/embedding.npy",
        scores="results/{record}/scores.parquet",
        latent="results/{record}/latent.parquet",
    output:
        latent_html="results/{record}/plots/latent.html",
        latent_png=report(
            "results/{record}/plots/latent.png",
            caption="../report/latent.rst",
            category="{record}",
            subcategory="7 · Latent space of held-out beats",
            labels={"record": "{record}", "figure": "latent", "format": "image"},
        ),
        trace_html="results/{record}/plots/trace.html",
        trace_png=report(
            "results/{record}/plots/trace.png",
            caption="../report/trace.rst",
            category="{record}",
            subcategory="4 · Whole recording",
            labels={"record": "{record}", "figure": "trace", "format": "image"},
        ),
        lengths_html="results/{record}/plots/lengths.html",
        lengths_png=report(
            "results/{record}/plots/lengths.png",
            caption="../report/lengths.rst",
            category="{record}",
            subcategory="6 · Beat lengths",
            labels={"record": "{record}", "figure": "lengths", "format": "image"},
        ),
        gallery_html="results/{record}/plots/gallery.html",
        gallery_png=report(
            "results/{record}/plots/gallery.png",
            caption="../report/gallery.rst",
            category="{record}",
            subcategory="5 · Most anomalous beats",
            labels={"record": "{record}", "figure": "gallery", "format": "image"},
        ),
    log:
        "logs/{record}/plot.log",
    benchmark:
        "logs/{record}/plot.benchmark.tsv"
    conda:
        "../../environment.yml"
    script:
        "../../scripts/plot.py"
