"""A corpus of secret shapes logged through a run with every sink on; every file each sink wrote, the
console and ``rlcockpit show`` are searched byte for byte for each secret's unique tail (issue 25, 3).

Every secret here is made up (shaped like the real thing so the shape rules fire): none is a credential.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest
from adversarial_files_support import adv_doc_fixture, adv_tally_fixture  # noqa: F401 - fixtures

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.redact import redact, redact_text
from rlcockpit.tracking import run as run_module

# (what, the secret, its needle: a tail that must appear nowhere)
SHAPES = [
    ("openai", "sk-A1b2C3d4E5f6G7h8I9j0Kq01", "E5f6G7h8I9j0Kq01"),
    ("openai project", "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tq02", "Ww6Vv5Uu4Tq02"),
    ("anthropic", "sk-ant-api03-Qw3Er4Ty5Ui6Op7As8q03", "Ui6Op7As8q03"),
    ("rlcockpit token", "rlc_0123456789ab_Rr1Ss2Tt3Uu4Vv5Ww6Xx7q04", "Uu4Vv5Ww6Xx7q04"),
    ("bearer header", "Authorization: Bearer Bb1Cc2Dd3Ee4Ff5q05", "Dd3Ee4Ff5q05"),
    ("aws access key id", "AKIAIOSFODNN7EXAQ06Z", "IOSFODNN7EXAQ06Z"),
    ("github classic", "ghp_Gh1Ij2Kl3Mn4Op5Qr6St7Uv8Wx9Yz0Abq07", "Uv8Wx9Yz0Abq07"),
    ("github fine-grained", "github_pat_11AAAAAAA0aBcDeFgHiJkLq08", "0aBcDeFgHiJkLq08"),
    ("huggingface", "hf_Hh1Ii2Jj3Kk4Ll5Mm6Nn7Oo8q09", "Kk4Ll5Mm6Nn7Oo8q09"),
    ("slack bot", "xoxb-1234567890-Sl1Ac2Kq10abcdef", "Sl1Ac2Kq10abcdef"),
    ("google api key", "AIzaSyA1B2C3D4E5F6G7H8I9J0K1L2M3N4q11xy", "E5F6G7H8I9J0K1L2M3N4q11"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.JwTsIgNaTuReq12x", "JwTsIgNaTuReq12x"),
    ("url credentials", "postgresql://admin:PgPass-q13-word@db.internal:5432/x", "PgPass-q13-word"),
]
# secret-named config keys whose values have no recognisable shape
NAMED = {"OPENAI_KEY": "plainvalue-q14", "wandb_key": "0123456789abcdef0123456789abcdef01q15aaa",
         "ANTHROPIC_API_KEY": "anthro-q16-value", "db_password": "hunter2-q17", "HF_TOKEN": "hub-q18-token",
         "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYq19KEY", "client_secret": "cs-q20-value"}
# a value's needle is the whole value, or its last 12 characters when longer. The 3-character needles used before
# ("q16" of "anthro-q16-value") can occur by chance in wandb's binary run file: on one loaded fresh-clone run "q16"
# was found there while no other secret-named value (stored the same way) was, which a leak would have shown
NEEDLES = [n for _, _, n in SHAPES] + [v if len(v) <= 16 else v[-12:] for v in NAMED.values()]
KEPT = {"actor.lr": 1e-6, "data.prompt_key": "prompt", "data.reward_fn_key": "data_source", "max_new_tokens": 64,
        "pad_token": "<pad>", "best_key": "val/acc"}


def test_corpus_is_masked_by_the_one_redaction_home() -> None:
    for what, secret, needle in SHAPES:
        assert needle not in redact_text(f"text {secret} text"), what
    out = redact({**NAMED, **KEPT})
    assert all(out[k] == "***" for k in NAMED), out
    assert {k: out[k] for k in KEPT} == KEPT  # tokenizer terms and verl's column-name keys are no secrets


@pytest.mark.slow
def test_no_secret_shape_reaches_any_sink_the_console_or_show(tmp_path: Path, monkeypatch, capfd, adv_tally,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    store = tmp_path / "store"
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setattr(sys, "argv", ["train.py", "--api_key", SHAPES[0][1], "--note", SHAPES[4][1]])
    secrets = [s for _, s, _ in SHAPES]
    config = {**NAMED, **KEPT, **{f"neutral_{i}": s for i, s in enumerate(secrets)}, "nested": {"list": secrets}}
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run = rlcockpit.init(project="p", dir=store, config=config, notes="deploy with " + " ".join(secrets),
                             tags=secrets[:4], group="g " + secrets[3], system_interval=None, health=False,
                             capture_meta=False,  # the git diff of a dirty checkout of this file holds the needles
                             loggers=["rlcockpit", "console", "jsonl", "tensorboard", "wandb", "mlflow", "swanlab"])
        assert sorted(s.name for s in run.sinks) == ["console", "jsonl", "mlflow", "rlcockpit", "swanlab",
                                                     "tensorboard", "wandb"]
        for step in range(3):
            run.log({"loss": 1.0 / (step + 1), "note/text": secrets[step]}, step=step)
        run.log_samples([{"prompt": f"my key is {s}", "response": f"ok {s}", "reward": 1.0, "meta": {"k": s}}
                         for s in secrets], step=2)
        run.summary["token_seen"] = secrets[3]
        run.summary["neutral"] = secrets[0]
        run.log_event("note", {"text": " ".join(secrets)})
        run.alert("leak?", text=secrets[4])
        run.notes = "later " + secrets[5]
        run.tags = [secrets[6]]
        run.config.update({"late": secrets[7], "LATE_OPENAI_KEY": "late-q21-plain"})
        run.log({"bad\udc00key": 1.0, "fine": secrets[8]}, step=3)
        run.log({f"key {secrets[9]}": "text"}, step=4)  # its warning quotes the key: the log filter masks it
        run.finish()
        run_module._live_runs.clear()
    time.sleep(1.0)  # wandb's service writes its file after finish() returns
    assert main(["show", run.id, "--dir", str(store)]) == 0
    assert main(["show", run.id, "--dir", str(store), "--json"]) == 0
    out, err = capfd.readouterr()
    sinks: dict[str, list[Path]] = {}
    for path in store.rglob("*"):  # the store's own files (rlcockpit.db, -wal, -shm) are the "rlcockpit" sink
        top = path.relative_to(store).parts[0]
        if path.is_file():
            sinks.setdefault("rlcockpit" if top.startswith("rlcockpit.db") else top, []).append(path)
    assert {"jsonl", "tensorboard", "wandb", "mlflow", "swanlab"} <= set(sinks), sorted(sinks)
    texts = {name: b"".join(p.read_bytes() for p in paths) for name, paths in sinks.items()}
    texts["console+show"] = (out + err + caplog.text).encode("utf-8", "replace")
    needles = NEEDLES + ["late-q21-plain"]
    found = [(sink, n) for sink, data in texts.items() for n in needles if n.encode() in data]
    assert not found, found
    assert "log() key 'key xoxb-***' rejected" in caplog.text
    for sink in ("rlcockpit", "jsonl", "tensorboard", "wandb", "mlflow", "swanlab", "console+show"):
        assert b"***" in texts[sink], sink  # each sink did receive the (masked) secrets: the search is not vacuous
    adv_tally.add("stored", len(needles) * len(texts))
    # read back with each tracker's own reader: the masked forms are there (the run was logged, not dropped)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{store / 'mlflow' / 'mlflow.db'}")
    (mrun,) = client.search_runs([client.get_experiment_by_name("p").experiment_id])
    assert mrun.data.params["OPENAI_KEY"] == "***" and mrun.data.params["neutral_3"] == "rlc_***"
    assert mrun.data.params["data.prompt_key"] == "prompt"
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (tb_dir,) = (store / "tensorboard").iterdir()
    events = EventAccumulator(str(tb_dir), size_guidance={"tensors": 0})
    events.Reload()
    (config_text,) = [e.tensor_proto.string_val[0].decode() for e in events.Tensors("config/text_summary")]
    assert '"neutral_3": "rlc_***"' in config_text and '"OPENAI_KEY": "***"' in config_text
    assert '"data.prompt_key": "prompt"' in config_text
    stored = rlcockpit.Api(store).run(run.id)
    assert stored.config["neutral_0"] == "sk-***" and stored.config["actor.lr"] == 1e-6
    assert stored.notes == "later ***" and stored.tags == ["ghp_***"]
    rows = stored.samples(2)
    assert len(rows) == len(secrets) and rows[0]["prompt"] == "my key is sk-***" and rows[0]["reward"] == 1.0
