"""The local web dashboard: ``rlcockpit ui`` (stdlib HTTP server, read-only JSON API, vanilla JS front-end).

Entry points: :func:`rlcockpit.ui.server.make_server` / :func:`rlcockpit.ui.server.serve_in_thread`.
Nothing is imported here so that ``rlcockpit --help`` (which imports ``rlcockpit.ui.cli``) stays fast.
"""
