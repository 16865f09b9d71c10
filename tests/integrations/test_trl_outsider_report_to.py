"""A TRL / transformers user's ``report_to`` (docs/qa/outsider-inputs.md): ``TrainingArguments(report_to=
["rlcockpit"])`` after ``import rlcockpit.integrations.trl``, the way ``report_to="wandb"`` is written. Before:
transformers refused the name (``ValueError: rlcockpit is not supported, only azure_ml, ... are supported``)."""

from __future__ import annotations

import torch
from integrations_support import tiny_qwen2_dir


def test_report_to_rlcockpit_logs_a_plain_trainer_run(tmp_path, monkeypatch):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    import rlcockpit
    import rlcockpit.integrations.trl  # noqa: F401 - registers report_to="rlcockpit"

    monkeypatch.setenv("RLCOCKPIT_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("RLCOCKPIT_PROJECT", "sft")
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen2_dir(tmp_path / "tiny"))
    ids = torch.randint(0, 100, (8, 12))
    ds = Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=4,
                             logging_steps=1, report_to=["rlcockpit"], use_cpu=True, save_strategy="no",
                             run_name="sft-tiny")
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    trainer.train()
    run = rlcockpit.Api(tmp_path / "store").runs("sft")[0]
    assert run.name == "sft-tiny" and run.status == "finished" and run.meta["framework"] == "trl"
    steps, values, _ = rlcockpit.Api(tmp_path / "store").run(run.id).series("loss")
    assert list(steps) == [1, 2, 3] and all(v > 0 for v in values)
    assert run.config["max_steps"] == 3
