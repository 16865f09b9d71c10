"""Secrets never reach the store, logs or delivery log; ``rlcockpit alert-test``."""

from __future__ import annotations

import logging
from pathlib import Path

import yaml

import rlcockpit
from rlcockpit.alerts import get_manager
from rlcockpit.cli import main
from rlcockpit.health.findings import Finding
from rlcockpit.store import open_store

SLACK_TOKEN = "T0SECRETSLACK/B0SECRET/xoxSECRETslackpath"
HOOK_TOKEN = "generic-hook-token-7f3a9"
FEISHU_SECRET = "feishu-sign-secret-91ab"
DINGTALK_TOKEN = "dingtalk-access-token-55c"
DINGTALK_SECRET = "SECdingtalk-sign-secret-0dd"
SMTP_PASSWORD = "smtp-password-e3e3"
SECRETS = [SLACK_TOKEN, HOOK_TOKEN, FEISHU_SECRET, DINGTALK_TOKEN, DINGTALK_SECRET, SMTP_PASSWORD]


def test_secrets_never_stored_or_logged(tmp_path, http_server, smtp_server, unused_port, caplog, capsys):
    url, rec = http_server
    host, port, _sink = smtp_server
    rec.script = ["500"]  # one failure so that error reasons pass through the log and delivery log
    alerts = {
        "channels": [
            {"type": "slack", "url": f"{url}/services/{SLACK_TOKEN}"},
            {"type": "webhook", "url": f"{url}/hook/{HOOK_TOKEN}"},
            {"type": "feishu", "url": f"{url}/open-apis/bot/v2/hook/x", "secret": FEISHU_SECRET},
            {"type": "dingtalk", "url": f"http://127.0.0.1:{unused_port}/robot/send?access_token={DINGTALK_TOKEN}",
             "secret": DINGTALK_SECRET},  # refused: the failure reason must not carry the token
            {"type": "email", "host": host, "port": port, "to": "a@b.c", "user": "bot", "password": SMTP_PASSWORD},
        ],
        "use_env": False, "stall_timeout_s": 0, "backoff_s": 0.05, "max_retries": 1,
    }
    caplog.set_level(logging.DEBUG)
    store_dir = tmp_path / "store"
    run = rlcockpit.init(project="sec", name="secret-run", dir=store_dir, loggers=["rlcockpit", "jsonl"],
                         config={"lr": 1e-6, "alerts": alerts, "tracker_api_key": "trk-key-1234"},
                         system_interval=None, capture_meta=True, health=False)
    run.log({"x": 1.0}, step=1)
    run.log_finding(Finding(detector="d", severity="critical", step=1, title="something broke"))
    run.alert("manual alert")
    mgr = get_manager(run)
    mgr.flush(10)
    run.finish()

    assert any(d["status"] == "sent" for d in mgr.deliveries)
    assert any(d["status"] == "failed" for d in mgr.deliveries)
    secrets = SECRETS + ["trk-key-1234"]
    for path in Path(store_dir).rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for s in secrets:
                assert s.encode() not in data, f"secret {s!r} found in {path}"
    out = capsys.readouterr()
    logs = caplog.text + out.out + out.err
    for s in secrets:
        assert s not in logs, f"secret {s!r} found in log output"
        assert s not in repr(mgr.deliveries)
    stored = open_store(store_dir).get_run(run.id)["config"]
    assert stored["alerts"]["channels"][0]["url"] == "***" and stored["lr"] == 1e-6


def test_alert_test_cli(tmp_path, http_server, capsys, monkeypatch):
    url, rec = http_server
    for var in ("RLCOCKPIT_SLACK_WEBHOOK", "RLCOCKPIT_WEBHOOK_URL", "RLCOCKPIT_SMTP_HOST"):
        monkeypatch.delenv(var, raising=False)
    cfg = tmp_path / "alerts.yaml"
    cfg.write_text(yaml.safe_dump({"alerts": {"channels": [{"type": "slack", "url": f"{url}/services/{SLACK_TOKEN}"},
                                                           {"type": "webhook", "url": f"{url}/h"}]}}))
    assert main(["alert-test", "--config", str(cfg), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count('"status": "sent"') == 2 and SLACK_TOKEN not in out
    assert {r["json"].get("kind", "slack") for r in rec.requests} == {"slack", "test"}

    rec.default = "500"
    assert main(["alert-test", "--config", str(cfg)]) == 1
    out = capsys.readouterr().out
    assert "failed" in out and "HTTP 500" in out


def test_alert_test_cli_without_channels(tmp_path, capsys, monkeypatch):
    for var in list(__import__("os").environ):
        if var.startswith("RLCOCKPIT_") and ("WEBHOOK" in var or "SMTP" in var):
            monkeypatch.delenv(var)
    assert main(["alert-test"]) == 1
    assert "no alert channel configured" in capsys.readouterr().err
