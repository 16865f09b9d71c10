"""The local web dashboard: ``rlcockpit ui`` — a read-only FastAPI app on uvicorn, live by server-sent events,
charts on the vendored uPlot.

Entry points: :func:`rlcockpit.ui.app.create_app` (the ASGI app over a store), and
:func:`rlcockpit.ui.server.make_server` / :func:`rlcockpit.ui.server.serve_in_thread` (a bound server).
Nothing is imported here so that ``rlcockpit --help`` (which imports ``rlcockpit.ui.cli``) stays fast.
"""
