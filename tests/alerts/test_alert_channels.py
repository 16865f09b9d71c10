"""Each channel's payload shape and signature, checked on a real loopback server; retries and timeouts."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
import urllib.parse

import pytest

from rlcockpit.alerts import AlertManager, AlertMessage, load_alerts_config, make_channel
from rlcockpit.alerts.channels import CHANNELS
from rlcockpit.alerts.message import from_finding
from rlcockpit.health.findings import Action, Finding


def _finding() -> Finding:
    return Finding(
        detector="entropy_collapse", severity="critical", step=42, title="policy entropy collapsed",
        summary="actor/entropy fell 90% in 20 steps", metric="actor/entropy",
        evidence={"metrics": {"actor/entropy": [[20, 1.2], [42, 0.1]]}, "window": 20},
        actions=[Action(title="raise entropy bonus", overrides=["actor.entropy_coeff=0.001"],
                        verl_overrides=["actor_rollout_ref.actor.entropy_coeff=0.001"])],
    )


def _msg() -> AlertMessage:
    return from_finding(_finding(), project="p", run_id="abc123", run_name="grpo-1",
                        dashboard_url="http://127.0.0.1:8765")


def _send(channel_cfg: dict, **cfg) -> dict:
    config = load_alerts_config({"channels": [channel_cfg], "use_env": False, "backoff_s": 0.05, **cfg})
    return AlertManager(config).deliver_now(_msg())[0]


def test_registry_has_every_platform():
    assert {"console", "webhook", "slack", "feishu", "dingtalk", "wecom", "email"} <= set(CHANNELS.names())
    assert CHANNELS.canonical("lark") == "feishu"
    with pytest.raises(ValueError, match="closest|Did you mean 'slack'"):
        make_channel({"type": "slak", "url": "http://x"})


def test_generic_webhook_posts_the_whole_alert(http_server):
    url, rec = http_server
    out = _send({"type": "webhook", "url": f"{url}/hook/tok"})
    assert out["status"] == "sent" and out["attempts"] == 1
    body = rec.requests[0]["json"]
    assert rec.requests[0]["path"] == "/hook/tok"
    assert body["title"] == "policy entropy collapsed" and body["level"] == "critical" and body["step"] == 42
    assert body["run_id"] == "abc123" and body["overrides"] == ["actor.entropy_coeff=0.001"]
    assert body["link"] == "http://127.0.0.1:8765/#/run/abc123"
    assert "actor/entropy: 1.2 (step 20) → 0.1 (step 42)" in body["evidence"]


def test_slack_blocks(http_server):
    url, rec = http_server
    assert _send({"type": "slack", "url": f"{url}/services/T0/B0/X"})["status"] == "sent"
    body = rec.requests[0]["json"]
    assert body["text"].startswith("[rlcockpit] CRITICAL: policy entropy collapsed")
    header, section = body["blocks"]
    assert header["type"] == "header" and header["text"]["type"] == "plain_text"
    assert len(header["text"]["text"]) <= 150
    assert section["text"]["type"] == "mrkdwn"
    text = section["text"]["text"]
    assert "actor.entropy_coeff=0.001" in text and "step: 42" in text
    assert "<http://127.0.0.1:8765/#/run/abc123|Open in dashboard>" in text


def test_feishu_signed_card(http_server):
    url, rec = http_server
    rec.reply_body = b'{"code":0,"msg":"success"}'
    secret = "feishu-signing-secret"
    before = int(time.time())
    assert _send({"type": "feishu", "url": f"{url}/open-apis/bot/v2/hook/x", "secret": secret})["status"] == "sent"
    body = rec.requests[0]["json"]
    ts = body["timestamp"]
    assert before - 1 <= int(ts) <= time.time() + 1  # seconds, as Feishu documents
    # Feishu: HMAC-SHA256 with key "timestamp\nsecret" over an empty message, base64
    expected = base64.b64encode(hmac.new(f"{ts}\n{secret}".encode(), b"", hashlib.sha256).digest()).decode()
    assert body["sign"] == expected
    assert body["msg_type"] == "interactive"
    card = body["card"]
    assert card["header"]["template"] == "red" and "policy entropy collapsed" in card["header"]["title"]["content"]
    assert "actor.entropy_coeff=0.001" in card["elements"][0]["text"]["content"]


def test_feishu_error_reply_is_a_failure(http_server):
    url, rec = http_server
    rec.reply_body = b'{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}'
    out = _send({"type": "feishu", "url": f"{url}/hook", "secret": "s"}, max_retries=0)
    assert out["status"] == "failed" and "19021" in out["reason"]


def test_dingtalk_signed_markdown(http_server):
    url, rec = http_server
    rec.reply_body = b'{"errcode":0,"errmsg":"ok"}'
    secret = "SECdingtalk-secret"
    out = _send({"type": "dingtalk", "url": f"{url}/robot/send?access_token=tok123", "secret": secret})
    assert out["status"] == "sent"
    req = rec.requests[0]
    assert req["query"]["access_token"] == ["tok123"]
    ts = req["query"]["timestamp"][0]
    assert abs(int(ts) - time.time() * 1000) < 5000  # milliseconds, as DingTalk documents
    # DingTalk: HMAC-SHA256 keyed with the secret over "timestamp\nsecret", base64, then url-encoded
    digest = hmac.new(secret.encode(), f"{ts}\n{secret}".encode(), hashlib.sha256).digest()
    expected_encoded = urllib.parse.quote_plus(base64.b64encode(digest))
    raw_sign = [p.split("=", 1)[1] for p in req["raw_query"].split("&") if p.startswith("sign=")][0]
    assert raw_sign == expected_encoded
    body = req["json"]
    assert body["msgtype"] == "markdown" and set(body["markdown"]) == {"title", "text"}
    assert "policy entropy collapsed" in body["markdown"]["text"]


def test_dingtalk_errcode_is_a_failure(http_server):
    url, rec = http_server
    rec.reply_body = b'{"errcode":310000,"errmsg":"sign not match"}'
    out = _send({"type": "dingtalk", "url": f"{url}/robot/send?access_token=t", "secret": "s"}, max_retries=0)
    assert out["status"] == "failed" and "310000" in out["reason"]


def test_wecom_markdown(http_server):
    url, rec = http_server
    rec.reply_body = b'{"errcode":0,"errmsg":"ok"}'
    assert _send({"type": "wecom", "url": f"{url}/cgi-bin/webhook/send?key=k"})["status"] == "sent"
    body = rec.requests[0]["json"]
    assert body["msgtype"] == "markdown"
    assert len(body["markdown"]["content"].encode()) <= 4096
    assert "[Open in dashboard](http://127.0.0.1:8765/#/run/abc123)" in body["markdown"]["content"]


def test_email_over_smtp(smtp_server):
    host, port, sink = smtp_server
    out = _send({"type": "email", "host": host, "port": port, "from": "bot@example.com",
                 "to": "a@example.com, b@example.com"})
    assert out["status"] == "sent", out
    (mail,) = sink.wait_for(1)
    assert mail["to"] == ["a@example.com", "b@example.com"]
    assert "Subject: [rlcockpit] CRITICAL: policy entropy collapsed" in mail["data"]
    assert "actor.entropy_coeff=0.001" in mail["data"] and "step: 42" in mail["data"]


def test_email_connection_refused_fails_cleanly(unused_port):
    out = _send({"type": "email", "host": "127.0.0.1", "port": unused_port, "to": "a@b.c"}, max_retries=1)
    assert out["status"] == "failed" and out["attempts"] == 2 and "SMTP" in out["reason"]


def test_retry_recovers_after_two_500s(http_server):
    url, rec = http_server
    rec.script = ["500", "500"]
    out = _send({"type": "webhook", "url": f"{url}/h"}, max_retries=3)
    assert out == {**out, "status": "sent", "attempts": 3}
    assert [r["behaviour"] for r in rec.requests] == ["500", "500", "ok"]
    gaps = [b["t"] - a["t"] for a, b in zip(rec.requests, rec.requests[1:])]
    assert gaps[1] > gaps[0] * 1.3  # exponential backoff (0.05 s then 0.1 s)


def test_persistent_500_gives_up(http_server):
    url, rec = http_server
    rec.default = "500"
    out = _send({"type": "webhook", "url": f"{url}/h"}, max_retries=2)
    assert out["status"] == "failed" and out["attempts"] == 3 and out["reason"] == "HTTP 500 Internal Server Error"


def test_hanging_server_times_out(http_server):
    url, rec = http_server
    rec.default, rec.hang_s = "hang", 2.0
    t0 = time.monotonic()
    out = _send({"type": "webhook", "url": f"{url}/h"}, max_retries=0, timeout_s=0.3)
    assert time.monotonic() - t0 < 1.5
    assert out["status"] == "failed" and "timed out" in out["reason"]


def test_problems_found_without_sending():
    assert make_channel({"type": "slack", "url": "not a url"}).problems()
    assert make_channel({"type": "slack", "url": "***"}).problems()[0].endswith("alerts file")
    assert not make_channel({"type": "slack", "url": "https://hooks.slack.com/services/a/b/c"}).problems()
    assert make_channel({"type": "dingtalk", "url": "https://oapi.dingtalk.com/robot/send"}).problems()
    assert make_channel({"type": "email", "host": "h", "to": "a@b", "user": "u"}).problems() == [
        "email: 'user' is set but 'password' is missing"]


def test_env_channels():
    env = {"RLCOCKPIT_SLACK_WEBHOOK": "https://hooks.slack.com/services/a/b/c",
           "RLCOCKPIT_FEISHU_WEBHOOK": "https://open.feishu.cn/open-apis/bot/v2/hook/x",
           "RLCOCKPIT_FEISHU_SECRET": "fs", "RLCOCKPIT_DINGTALK_WEBHOOK": "https://oapi.dingtalk.com/robot/send?access_token=t",
           "RLCOCKPIT_DINGTALK_SECRET": "ds", "RLCOCKPIT_WECOM_WEBHOOK": "https://qyapi.weixin.qq.com/x?key=k",
           "RLCOCKPIT_WEBHOOK_URL": "http://127.0.0.1:1/h", "RLCOCKPIT_SMTP_HOST": "smtp.example.com",
           "RLCOCKPIT_SMTP_PORT": "587", "RLCOCKPIT_SMTP_STARTTLS": "1", "RLCOCKPIT_SMTP_USER": "u",
           "RLCOCKPIT_SMTP_PASSWORD": "pw", "RLCOCKPIT_SMTP_TO": "a@b.c", "RLCOCKPIT_ALERTS_MIN_SEVERITY": "critical"}
    cfg = load_alerts_config({"cooldown_s": 5}, env=env)
    kinds = {ch.type: ch for ch in cfg.channels}
    assert set(kinds) == {"slack", "feishu", "dingtalk", "wecom", "webhook", "email"}
    assert kinds["feishu"].options["secret"] == "fs" and kinds["dingtalk"].options["secret"] == "ds"
    assert kinds["email"].port == 587 and kinds["email"].problems() == []
    assert cfg.min_severity == "critical" and cfg.cooldown_s == 5.0
    assert load_alerts_config({"use_env": False}, env=env).channels == []


def test_bad_config_names_the_key():
    with pytest.raises(ValueError, match="alerts.channels\\[1\\].*no 'type'"):
        load_alerts_config({"channels": [{"type": "console"}, {"url": "x"}]}, env={})
    with pytest.raises(ValueError, match="unknown alerts config key.*'cooldown'"):
        load_alerts_config({"cooldown": 3}, env={})
    with pytest.raises(ValueError, match="min_severity"):
        load_alerts_config({"min_severity": "loud"}, env={})


def _self_signed(tmp_path):
    import shutil
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


@pytest.mark.parametrize("mode", ["starttls", "ssl"])
def test_email_tls_and_login(tmp_path, unused_port, mode):
    """STARTTLS (587-style) and implicit TLS (465-style) with AUTH LOGIN against a real aiosmtpd server."""
    import ssl

    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    cert, key = _self_signed(tmp_path)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cert), str(key))
    received, logins = [], []

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # noqa: N802
            received.append(envelope.content.decode())
            return "250 OK"

    def auth(server, session, envelope, mechanism, data):
        logins.append((data.login, data.password))
        return AuthResult(success=data.login == b"bot" and data.password == b"pw-123")

    # implicit TLS: aiosmtpd does not flag the session as TLS, so AUTH must not demand STARTTLS there
    kw = ({"tls_context": ctx, "require_starttls": True, "auth_require_tls": True} if mode == "starttls"
          else {"ssl_context": ctx, "auth_require_tls": False})
    controller = Controller(Handler(), hostname="127.0.0.1", port=unused_port, authenticator=auth,
                            auth_required=True, **kw)
    controller.start()
    try:
        out = _send({"type": "email", "host": "127.0.0.1", "port": unused_port, "to": "a@b.c", "user": "bot",
                     "password": "pw-123", mode: True, "ca_file": str(cert)}, max_retries=0)
        assert out["status"] == "sent", out
        assert logins == [(b"bot", b"pw-123")] and "policy entropy collapsed" in received[0]
        bad = _send({"type": "email", "host": "127.0.0.1", "port": unused_port, "to": "a@b.c", "user": "bot",
                     "password": "wrong", mode: True, "ca_file": str(cert)}, max_retries=0)
        assert bad["status"] == "failed" and "wrong" not in bad["reason"]
    finally:
        controller.stop()
