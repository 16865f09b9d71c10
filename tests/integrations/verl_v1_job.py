"""A stand-in verl 0.9 V1 / agent-loop job, run with .venv-verl's python by test_integrations_verl_v1.py.

What it logs comes from verl's own code wherever that runs on CPU:

* the file log is written by verl's ``Tracking(default_backend=["file"])`` (path from ``VERL_FILE_LOGGER_PATH``);
* ``agent_loop/*`` by ``AgentLoopManager._performance_metrics`` on per-trajectory timings,
  ``num_turns/*`` / ``tool_call_counts/*`` and the data metrics by ``compute_data_metrics`` on a batch carrying
  the agent loop's ``__num_turns__`` / ``tool_call_counts``, ``timing_s/*`` by ``compute_timing_metrics``,
  ``actor/ppo_kl`` and ``actor/pg_clipfrac`` by ``compute_policy_loss_vanilla``;
* the multi-turn rollout dump by ``RayPPOTrainer._write_generations`` from responses decoded as
  ``_log_rollout_data`` decodes them (``batch_decode(..., skip_special_tokens=True)``) with a tokenizer whose chat
  template renders tool calls the Hermes way (verl's default ``multi_turn.format``); the tool calls are checked
  with verl's ``HermesToolParser`` before they are written.

``training/off_policy/*``: verl's V1 trainer module imports ``transfer_queue``, which the verl venv lacks, so
those nine keys are computed here with ``_compute_metrics``'s formulas (quoted in the code) from per-trajectory
``min/max_global_steps``.

``--scenario stale``: an async V1 run whose trajectories fall further and further behind (staleness 0 -> 7, limit
8). ``--scenario mismatch``: a synchronous, on-policy run (one epoch, one mini-batch) whose old log-probs were
computed with another micro-batch size, so ``actor/ppo_kl`` is not 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import numpy as np
import torch

TOOLS_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{% if m['role'] == 'tool' %}user\n<tool_response>\n{{ m['content'] }}\n"
    "</tool_response>{% else %}{{ m['role'] }}\n{{ m['content'] }}{% for c in m.get('tool_calls', []) %}\n"
    "<tool_call>\n{{ c['function'] | tojson }}\n</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(["calc tool_call tool_response assistant user 0123456789"],
                             trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|pad|>",
                                  additional_special_tokens=specials[:3])
    tok.chat_template = TOOLS_TEMPLATE
    return tok


def conversation(i: int, step: int) -> tuple[list[dict], list[dict], int]:
    """(prompt messages, the agent loop's messages after them, the tool-call count)."""
    a, b = i + step, 2 * i + 1
    prompt = [{"role": "user", "content": f"What is {a} * {b}? Use the calculator."}]
    call = {"type": "function", "function": {"name": "calc", "arguments": {"expr": f"{a}*{b}"}}}
    after = [{"role": "assistant", "content": "Let me compute it.", "tool_calls": [call]},
             {"role": "tool", "content": str(a * b) if i % 3 else "error: division by zero"},
             {"role": "assistant", "content": f"The answer is #### {a * b}"}]
    return prompt, after, 1


def dump_multiturn(out_dir: str, step: int, tok) -> list[int]:
    """Rollout dump of 4 tool-using trajectories, through verl's decode and writer; returns tool-call counts."""
    from verl.experimental.agent_loop.tool_parser import HermesToolParser
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    inputs, outputs, counts, scores = [], [], [], []
    parser = HermesToolParser(tok)
    for i in range(4):
        prompt, after, n_calls = conversation(i, step)
        def ids(messages, **kw):
            return tok.encode(tok.apply_chat_template(messages, tokenize=False, **kw), add_special_tokens=False)

        prompt_ids = ids(prompt, add_generation_prompt=True)
        response_ids = ids(prompt + after)[len(prompt_ids):]
        first_turn = ids(prompt + after[:1])[len(prompt_ids):]
        _, calls = asyncio.run(parser.extract_tool_calls(first_turn))
        assert [c.name for c in calls] == ["calc"], calls  # verl reads the call back from these tokens
        inputs.append(tok.batch_decode([prompt_ids], skip_special_tokens=True)[0])
        outputs.append(tok.batch_decode([response_ids], skip_special_tokens=True)[0])
        counts.append(n_calls)
        scores.append(1.0 if i % 3 else 0.0)
    RayPPOTrainer._write_generations(inputs, outputs, [str(i) for i in range(4)], scores,
                                     {"acc": [s > 0 for s in scores], "__num_turns__": [4] * 4}, out_dir, step)
    return counts


def step_metrics(step: int, args, counts: list[int]) -> dict:
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopManager
    from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla
    from verl.trainer.ppo.metric_utils import compute_data_metrics, compute_timing_metrics
    from verl.workers.config import ActorConfig

    g = torch.Generator().manual_seed(step)
    bs, P, T = 4, 6, 8
    resp = torch.ones(bs, T, dtype=torch.long)
    fields = {"prompts": torch.ones(bs, P, dtype=torch.long), "responses": resp, "response_mask": resp,
              "attention_mask": torch.ones(bs, P + T, dtype=torch.long),
              "token_level_scores": torch.rand(bs, T, generator=g), "token_level_rewards": torch.rand(bs, T, generator=g),
              "advantages": torch.randn(bs, T, generator=g), "returns": torch.randn(bs, T, generator=g)}
    batch = DataProto.from_dict(fields, non_tensors={"__num_turns__": np.array([4] * bs),
                                                     "tool_call_counts": np.array(counts)})
    batch.meta_info["global_token_num"] = [P + T] * bs
    m = dict(compute_data_metrics(batch=batch, use_critic=False))
    per_traj = [[{"generate_sequences": 1.0 + 0.1 * i, "tool_calls": 0.2 + (2.0 if i == 3 else 0.0),
                  "compute_score": 0.05, "num_preempted": 0} for i in range(bs)]]
    m.update(AgentLoopManager._performance_metrics(None, per_traj, batch))
    timing = {"gen": 0.05 if args.scenario == "stale" else 2.0, "old_log_prob": 0.3, "adv": 0.01,
              "update_actor": 1.0, "step": 3.5 if args.scenario == "stale" else 3.4}
    if args.scenario == "stale":
        timing["wait_for_enough_samples"] = 2.0
    m.update(compute_timing_metrics(batch=batch, timing_raw=timing))
    # actor/ppo_kl of the update's first (on-policy) pass: the old log-probs came from a different micro-batching
    log_prob = -torch.rand(bs, T, generator=g)
    drift = 2e-3 if args.scenario == "mismatch" else 0.0
    cfg = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1)
    pg = compute_policy_loss_vanilla(old_log_prob=log_prob + drift * torch.randn(bs, T, generator=g),
                                     log_prob=log_prob, advantages=fields["advantages"], response_mask=resp.float(),
                                     loss_agg_mode="token-mean", config=cfg)
    m["actor/ppo_kl"], m["actor/pg_clipfrac"] = float(pg[1]["actor/ppo_kl"]), float(pg[1]["actor/pg_clipfrac"])
    # verl trainer_base._compute_metrics: spans = max - min + 1; staleness = (global_steps - 1) - max_global_steps;
    # worst = (global_steps - 1) - min_global_steps (the V1 module needs transfer_queue, absent from the venv)
    lag = min(7, step // 3) if args.scenario == "stale" else 0
    max_gs = np.array([step - 1 - lag] * bs)
    min_gs = max_gs - (1 if args.scenario == "stale" and step > 6 else 0)
    for name, v in (("trajectory_spans", max_gs - min_gs + 1), ("trajectory_staleness", (step - 1) - max_gs),
                    ("trajectory_staleness_worst", (step - 1) - min_gs)):
        m.update({f"training/off_policy/{name}/mean": v.mean(), f"training/off_policy/{name}/max": v.max(),
                  f"training/off_policy/{name}/min": v.min()})
    m["training/global_step"], m["training/epoch"] = step, 0
    return {k: float(v) for k, v in m.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=("stale", "mismatch"), required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rollout-dir")
    ap.add_argument("--project", default="verl-v1")
    args = ap.parse_args()
    from verl.utils.tracking import Tracking

    mode = "separate_async" if args.scenario == "stale" else "sync"
    config = {"actor_rollout_ref": {"actor": {"ppo_epochs": 1, "ppo_mini_batch_size": 4,
                                              "ppo_micro_batch_size_per_gpu": 4, "optim": {"lr": 1e-6}},
                                    "rollout": {"n": 1, "log_prob_micro_batch_size_per_gpu": 16}},
              "data": {"train_batch_size": 4}, "algorithm": {"adv_estimator": "grpo"},
              "trainer": {"use_v1": True, "v1": {"trainer_mode": mode,
                                                 "sampler": {"max_off_policy_threshold": 8}}}}
    tracker = Tracking(project_name=args.project, experiment_name=args.scenario, default_backend=["file"],
                       config=config)
    tok = tokenizer()
    for step in range(1, args.steps + 1):
        counts = dump_multiturn(args.rollout_dir, step, tok) if args.rollout_dir else [1] * 4
        tracker.log(data=step_metrics(step, args, counts), step=step)
    print(json.dumps({"config": config}), flush=True)
    tracker.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
