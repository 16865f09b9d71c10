"""The dashboard's routers, one module per page family: runs (``runs``), metric points (``series``), samples
(``samples``), the health engine and metric guide (``health``), live streams (``live``), sweeps (``sweeps``) and
logged images (``media``). ``ui/app.py`` mounts them behind the request guard."""
