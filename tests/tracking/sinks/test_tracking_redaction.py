"""Defect 6: secrets are masked by key name and by value shape in the config, the command line and
everything handed to third-party loggers (their files are searched byte for byte)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.redact import MASK, redact, redact_argv

# Every secret below is made up for this test (shaped like the real thing so the value-shape rules fire; each
# carries a unique needle that is searched for in everything written): none is a real credential.
SLACK = "https://hooks.slack.com/services/T0AAA/B0BBB/slacksecret123456"
SECRETS = {
    "secret_key": "s3cr3t-value-aaaa",
    "api_keys": ["first-key-bbbb", "second-key-cccc"],
    "auth_header": "Bearer eyJhbGciOiJIUzI1NiJ9.payload-dddd",
    "password_file_contents": "hunter2-eeee",
    "openai": {"model": "gpt", "sk": "sk-proj-abcdefghijklmnop0123456789"},
    "feishu": "https://open.feishu.cn/open-apis/bot/v2/hook/feishu-token-ffff",
    "dingtalk": "https://oapi.dingtalk.com/robot/send?access_token=dingtoken-gggg",
    "wecom": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=wecomkey-hhhh",
    "hf": {"hub_token_env": "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"},
}
ARGV = ["train.py", "--token=tok-iiii-1234", "--api_key", "sk-jjjjjjjjjjjjjjjjjjjjjjjj", "--notify", SLACK,
        "--password", "pw-kkkk", "lr=1e-5"]
NEEDLES = ["s3cr3t-value-aaaa", "first-key-bbbb", "second-key-cccc", "payload-dddd", "hunter2-eeee",
           "abcdefghijklmnop0123456789", "feishu-token-ffff", "dingtoken-gggg", "wecomkey-hhhh",
           "abcdefghijklmnopqrstuvwxyzABCDEFGH", "tok-iiii-1234", "jjjjjjjjjjjjjjjjjjjjjjjj", "slacksecret123456",
           "pw-kkkk"]


def test_redact_masks_by_name_and_by_shape_and_keeps_the_rest() -> None:
    out = redact({**SECRETS, "max_new_tokens": 512, "tokenizer": "gpt2", "pad_token": "<pad>",
                  "author": "me", "lr": 1e-5, "num_tokens": 7})
    text = repr(out)
    for needle in NEEDLES[:10]:
        assert needle not in text
    assert out["max_new_tokens"] == 512 and out["tokenizer"] == "gpt2" and out["pad_token"] == "<pad>"
    assert out["author"] == "me" and out["lr"] == 1e-5 and out["num_tokens"] == 7
    assert out["api_keys"] == [MASK, MASK] and out["openai"]["model"] == "gpt"
    assert out["auth_header"] == MASK


def test_redact_argv_masks_flag_values_and_shapes() -> None:
    out = redact_argv(ARGV)
    assert out[0] == "train.py" and out[-1] == "lr=1e-5"
    assert out[1] == f"--token={MASK}" and out[2] == "--api_key" and out[3] == MASK
    assert out[5] != SLACK and "slacksecret" not in out[5] and out[7] == MASK


@pytest.mark.slow
def test_no_secret_reaches_any_file_or_show(start, store_dir: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", list(ARGV))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = start(loggers=["rlcockpit", "tensorboard", "wandb", "mlflow", "swanlab", "jsonl"],
                config={**SECRETS, "lr": 1e-5}, capture_meta=True)
    assert sorted(s.name for s in run.sinks) == ["jsonl", "mlflow", "rlcockpit", "swanlab", "tensorboard", "wandb"]
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.log_event("note", {"webhook_url": SLACK, "text": "see " + SECRETS["feishu"]})
    run.summary["auth_token"] = "tok-iiii-1234"
    run.finish()
    time.sleep(1.0)  # wandb's service writes its file after finish() returns
    assert main(["show", run.id, "--dir", str(store_dir), "--json"]) == 0
    assert main(["show", run.id, "--dir", str(store_dir)]) == 0
    shown = capsys.readouterr().out
    found = []
    for path in list(store_dir.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            found += [(str(path.relative_to(store_dir)), n) for n in NEEDLES if n.encode() in data]
    found += [("show", n) for n in NEEDLES if n in shown]
    assert not found, found
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.config["lr"] == 1e-5 and stored.meta["command"][-1] == "lr=1e-5"
