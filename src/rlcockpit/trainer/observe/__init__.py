"""The observe room: what the trainer measures about itself, under verl's metric keys: per-step metrics
(``metrics``), validation metrics (``val_metrics``), DAPO's filter metric (``filter_metric``), FLOPs and MFU
(``flops``), the profiler (``profiling``), the progress line (``progress``) and the validation probe set
(``probes``)."""
