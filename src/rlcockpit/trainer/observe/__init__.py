"""What the trainer measures about itself, under verl's metric keys: per-step metrics (``metrics``), validation
metrics (``val_metrics``), DAPO's filter metric (``filter_metric``), FLOPs and MFU (``flops``), profiling
(``profiling``), progress lines (``progress``) and the validation probe set (``probes``)."""
