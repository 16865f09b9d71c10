"""Helpers and fixtures for the dashboard tests: a real store filled through the tracking API, and a real server.

The store is built once per module (``build_store``) with ``rlcockpit.init / run.log / log_samples /
log_event / log_finding``, exactly as a training script would, then served on an ephemeral loopback
port from a thread.
"""

from __future__ import annotations

import contextlib
import json
import math
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

import rlcockpit
from rlcockpit.health import Action, Cause, Finding
from rlcockpit.ui.server import CockpitServer, make_server, serve_in_thread

XSS_RESPONSE = ('<script>window.__pwned=1;document.title="pwned"</script>'
                '<img src=x onerror="window.__pwned=2;document.title=\'pwned\'">'
                '<a href="javascript:window.__pwned=3">click me</a> the answer is 42')
PROMPTS = [f"What is {i} + {i * 3}?" for i in range(4)]
SAMPLE_STEPS = (0, 40, 80, 119)


def _metrics(step: int, lr_scale: float) -> dict[str, float]:
    t = step / 120
    return {
        "critic/score/mean": 0.2 + 0.6 * (1 - math.exp(-3 * t * lr_scale)) + 0.02 * math.sin(step),
        "actor/kl_loss": 0.002 * step * lr_scale + (0.5 if step == 77 else 0.0),
        "actor/entropy": 1.2 * math.exp(-t * lr_scale) + 0.05,
        "actor/pg_loss": 0.1 * math.cos(step / 7),
        "actor/grad_norm": 1.0 + 0.3 * math.sin(step / 5) + (30.0 if step == 90 else 0.0),
        "response_length/mean": 180 + 80 * t,
        "perf/throughput": 1500 + 10 * math.sin(step),
        "timing_s/gen": 2.0 + 0.1 * math.cos(step),
        "val-core/openai/gsm8k/acc/mean@1": 0.3 + 0.4 * t,
    }


def build_store(dir: Path) -> dict[str, str]:
    """Three runs (two finished with different configs, one failed) -> {name: id}."""
    ids = {}
    for name, group, lr, tags, exit_code in (
        ("grpo-baseline", "sweep-lr", 1e-6, ["grpo", "baseline"], 0),
        ("grpo-high-lr", "sweep-lr", 5e-6, ["grpo"], 0),
        ("ppo-failed", None, 1e-6, ["ppo"], 1),
    ):
        config = {"algorithm": {"adv_estimator": "grpo" if "grpo" in name else "gae", "kl_ctrl": {"kl_coef": 0.001}},
                  "actor": {"optim": {"lr": lr}, "ppo_mini_batch_size": 64}, "rollout": {"n": 8}}
        run = rlcockpit.init(project="arith", name=name, group=group, tags=tags, config=config, dir=dir,
                             system_interval=None, health=False, capture_meta=True)
        steps = 120 if exit_code == 0 else 60
        for step in range(steps):
            run.log(_metrics(step, lr / 1e-6), step=step)
            if step in SAMPLE_STEPS:
                rows = [{"prompt": p, "response": f"Let me think. {p} The answer is {i * 4 + step}." +
                         (" the answer is the answer is the answer is" if step >= 80 and i == 1 else ""),
                         "reward": float(i % 2), "data_source": "arith"} for i, p in enumerate(PROMPTS)]
                if name == "grpo-baseline" and step == 119:
                    rows.append({"prompt": "Say hi", "response": XSS_RESPONSE, "reward": 0.0, "data_source": "evil"})
                run.log_samples(rows, step=step)
        if name == "grpo-baseline":
            run.log_event("guardrail", {"action": "skip_update", "rule": "grad_norm > 10"}, step=90)
            run.log_finding(Finding(
                detector="kl_spike", severity="critical", step=77, title="KL spike at step 77",
                summary="actor/kl_loss jumped 200x in one step", metric="actor/kl_loss",
                causes=[Cause("learning rate too high", 0.7, "grad_norm spike at step 90")],
                actions=[Action("Lower the actor learning rate", ["actor.optim.lr=5e-7"],
                                ["actor_rollout_ref.actor.optim.lr=5e-7"], "halves the update size")]))
            run.log_finding(Finding(detector="entropy_collapse", severity="warning", step=100,
                                    title="Entropy falling fast", metric="actor/entropy"))
        run.finish(exit_code)
        ids[name] = run.id
    return ids


@pytest.fixture(scope="module")
def store_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("ui-store")
    return {"dir": d, "ids": build_store(d)}


@contextlib.contextmanager
def running_server(dir: Path, **kw: Any) -> Iterator[CockpitServer]:
    server = make_server(str(dir), port=0, **kw)
    serve_in_thread(server)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def server(store_env: dict[str, Any]) -> Iterator[CockpitServer]:
    with running_server(store_env["dir"]) as srv:
        yield srv


def base_url(server: CockpitServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


def http(server: CockpitServer, path: str, method: str = "GET", headers: dict[str, str] | None = None,
         data: bytes | None = None) -> tuple[int, Message, bytes]:
    """(status, headers, body) of a real HTTP request; HTTP errors are returned, not raised.
    Headers are looked up case-insensitively (HTTP says names are; uvicorn sends them lower-case)."""
    req = urllib.request.Request(base_url(server) + path, method=method, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def get_json(server: CockpitServer, path: str) -> Any:
    status, _headers, body = http(server, path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)
