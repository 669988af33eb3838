rule plot:
    """Latent space, datashaded trace, beat lengths, anomaly gallery: HTML (bokeh) and PNG, in the report.
    On the CPU whatever the device (faster than the GPU path was), so it holds no GPU slot."""
    input:
        signal="results/{record}/signal.parquet",
        beats="results/{record}/beats.parquet",
        embedding="results/{record}/embedding.npy",
        scores="results/{record}/scores.parquet",
        latent="results/{record}/latent.parquet",
    output:
        latent_html=report(
            "results/{record}/plots/latent.html",
            caption="../report/latent.rst",
            category="{record}",
            subcategory="Latent space of held-out beats",
            labels={"record": "{record}", "figure": "latent", "format": "interactive"},
        ),
        latent_png=report(
            "results/{record}/plots/latent.png",
            caption="../report/latent.rst",
            category="{record}",
            subcategory="Latent space of held-out beats",
            labels={"record": "{record}", "figure": "latent", "format": "image"},
        ),
        trace_html=report(
            "results/{record}/plots/trace.html",
            caption="../report/trace.rst",
            category="{record}",
            subcategory="Whole recording",
            labels={"record": "{record}", "figure": "trace", "format": "interactive"},
        ),
        trace_png=report(
            "results/{record}/plots/trace.png",
            caption="../report/trace.rst",
            category="{record}",
            subcategory="Whole recording",
            labels={"record": "{record}", "figure": "trace", "format": "image"},
        ),
        lengths_html=report(
            "results/{record}/plots/lengths.html",
            caption="../report/lengths.rst",
            category="{record}",
            subcategory="Beat lengths",
            labels={"record": "{record}", "figure": "lengths", "format": "interactive"},
        ),
        lengths_png=report(
            "results/{record}/plots/lengths.png",
            caption="../report/lengths.rst",
            category="{record}",
            subcategory="Beat lengths",
            labels={"record": "{record}", "figure": "lengths", "format": "image"},
        ),
        gallery_html=report(
            "results/{record}/plots/gallery.html",
            caption="../report/gallery.rst",
            category="{record}",
            subcategory="Most anomalous beats",
            labels={"record": "{record}", "figure": "gallery", "format": "interactive"},
        ),
        gallery_png=report(
            "results/{record}/plots/gallery.png",
            caption="../report/gallery.rst",
            category="{record}",
            subcategory="Most anomalous beats",
            labels={"record": "{record}", "figure": "gallery", "format": "image"},
        ),
    params:
        segment=config["segment"],
    log:
        "logs/{record}/plot.log",
    benchmark:
        "logs/{record}/plot.benchmark.tsv"
    conda:
        "../../environment.yml"
    script:
        "../../scripts/plot.py"
