"""Real run files in the detection corpus (bench/detection_corpus/real/): provenance, bytes, and import step counts."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "detection_corpus" / "gen"))

import corpus_schema as schema  # noqa: E402
import real_runs  # noqa: E402

import detection_quality as dq  # noqa: E402


@pytest.fixture(scope="module")
def entries() -> list[dict]:
    return real_runs.manifest()


@pytest.fixture(scope="module")
def real(entries) -> list[dict]:
    return real_runs.load_real(entries)


def _rolling(m: dict, key: str, w: int = 10) -> dict[int, float]:
    """The mean of the last ``w`` logged values of ``key`` at each step from the ``w``-th on: the onset rules of the
    CPU passes read a ramp or a learned symptom from it."""
    steps = sorted(s for s in m if key in m[s])
    return {s: sum(m[x][key] for x in steps[i - w + 1:i + 1]) / w for i, s in enumerate(steps) if i >= w - 1}


def _out_for_good(m: dict, key: str, ref: tuple[int, int], w: int = 10) -> int:
    """The first step from which ``key``'s ``w``-step rolling mean stays outside its range over the steps ``ref``
    (both ends included) to the end of the run: the onset rule for a ramp or a learned symptom."""
    roll = _rolling(m, key, w)
    lo, hi = min(v for s, v in roll.items() if ref[0] <= s <= ref[1]), max(v for s, v in roll.items() if ref[0] <= s <= ref[1])
    after = [s for s in roll if s > ref[1]]
    inside = [s for s in after if lo <= roll[s] <= hi]
    return min(s for s in after if not inside or s > max(inside))


def test_every_manifest_file_exists_with_its_sha256_and_origin(entries):
    assert len(entries) >= 6 and len({e["id"] for e in entries}) == len(entries)
    assert {e["source"] for e in entries} <= set(schema.REAL_SOURCES)
    assert any(e["origin"]["repository"] != "rlcockpit (this repository)" for e in entries)  # a public source
    stored = {str(p.relative_to(real_runs.REAL_DIR)) for p in real_runs.REAL_DIR.rglob("*.gz")}
    assert stored == {e["file"] for e in entries}, "every stored file is in the manifest and vice versa"
    for e in entries:
        data = gzip.decompress((real_runs.REAL_DIR / e["file"]).read_bytes())
        assert hashlib.sha256(data).hexdigest() == e["sha256"] and len(data) == e["bytes"], e["id"]
        assert e["origin"]["repository"] and e["origin"]["path"]
        assert len(e["origin"]["commit"]) == 40 and int(e["origin"]["commit"], 16) >= 0, e["id"]
        assert (e["class"] == "healthy") == (e["onset"] is None) and e["tuned_on"] is False


def test_a_changed_byte_is_refused_naming_the_run(entries, tmp_path, monkeypatch):
    e = copy.deepcopy(entries[0])
    data = bytearray(gzip.decompress((real_runs.REAL_DIR / e["file"]).read_bytes()))
    data[len(data) // 2] ^= 1
    (tmp_path / "x.gz").write_bytes(gzip.compress(bytes(data)))
    monkeypatch.setattr(real_runs, "REAL_DIR", tmp_path)
    e["file"] = "x.gz"
    with pytest.raises(schema.TraceError, match=e["id"]):
        real_runs.raw_bytes(e)


# the W&B output.log runs whose validation lines were cut at 4096 characters: one value lost per cut line
CUT_LINES = {"verl_wandb_output_public-healthy-opd-qwen1.5b-11": 1, "verl_wandb_output_public-collapse-opd-qwen3b-59": 6,
             "verl_wandb_output_public-healthy-opd-qwen3b-kl0.001-51": 6}


def test_every_real_run_imports_with_the_step_count_of_a_clean_parse(entries, real):
    by_id = {t["id"]: t for t in real}
    for e in entries:
        t = by_id[e["id"]]
        assert t["meta"]["imported_steps"] == t["meta"]["clean_steps"], e["id"]
        assert t["meta"]["import_problems"] == [], e["id"]
        # a value left out of a kept step: only the pair a 4096-character capture cut in, named per line
        assert len(t["meta"]["values_lost"]) == CUT_LINES.get(e["id"], 0), e["id"]
        assert all("characters long (cut by a capture tool?)" in p for p in t["meta"]["values_lost"])
        assert t["split"] == "heldout" and t["class"] == e["class"] and t["onset"] == e["onset"]
        if t["onset"] is not None:
            assert t["metrics"][0][0] < t["onset"] <= t["metrics"][-1][0]
    verl = next(t for t in real if t["source"] == "verl_console_public")
    assert [s for s, _m in verl["metrics"]] == list(range(1, 27))
    assert verl["metrics"][9][1]["val-core/openai/gsm8k/reward/mean@1"] == 0.0  # the validation step kept its pairs
    assert verl["metrics"][0][1]["critic/score/mean"] == pytest.approx(0.016)


def test_public_runs_by_other_people_include_failures(entries):
    """The corpus is not only our own runs: public runs from several repositories, failing ones among them."""
    public = [e for e in entries if e["origin"]["repository"] != "rlcockpit (this repository)"]
    assert len(public) >= 11 and len({e["origin"]["repository"] for e in public}) >= 6
    assert sum(e["class"] != "healthy" for e in public) >= 4
    assert {e["kind"] for e in public} >= {"verl", "trl", "jsonl"}
    assert any(e["kind"] == "verl" and e["class"] != "healthy" for e in public), "a public verl run that fails"


def test_the_public_verl_collapse_keeps_every_step_and_its_cut_validation_lines(real):
    """jianghoucheng's gjvwlq13 output.log: 60 steps (0 = validation only), six lines cut by W&B at 4,096
    characters (the validation steps) import with their complete pairs, and the collapse is in the numbers."""
    t = next(t for t in real if t["id"] == "verl_wandb_output_public-collapse-opd-qwen3b-59")
    by_step = dict(t["metrics"])
    assert sorted(by_step) == list(range(60)) and t["onset"] == 31
    assert by_step[10]["actor/grad_norm"] == pytest.approx(0.7673196792602539)  # a cut line's pairs are kept
    assert by_step[40]["val-aux/aime_2024/score/best@8/mean"] == pytest.approx(-0.77321)
    assert "val-aux/aime_2024/score/best@8/std" not in by_step[40]  # the value W&B cut is not guessed
    assert by_step[0]["val-aux/aime_2024/reward/mean@30"] == pytest.approx(-0.7833333284987343)
    assert by_step[2]["response_length/mean"] > 1000 and by_step[42]["response_length/mean"] < 10
    assert by_step[50]["actor/grad_norm"] > 8 > 1 > by_step[29]["actor/grad_norm"]


def test_the_public_healthy_verl_agent_run_keeps_every_step(real):
    """The same setup with a weaker KL (f6sves9c): 52 steps (0 = validation only), its six cut validation lines
    keep their pairs, and the run stays healthy in the numbers (length ~1k tokens, validation rising)."""
    t = next(t for t in real if t["id"] == "verl_wandb_output_public-healthy-opd-qwen3b-kl0.001-51")
    by_step = dict(t["metrics"])
    assert sorted(by_step) == list(range(52)) and t["onset"] is None
    assert by_step[30]["val-aux/aime_2024/score/maj@8/std"] == pytest.approx(0.11917781275717876)
    assert by_step[10]["val-aux/aime_2024/reward/mean@16"] > by_step[0]["val-aux/aime_2024/reward/mean@16"]
    assert min(m["response_length/mean"] for s, m in by_step.items() if s % 10) > 890


def test_a_metrics_jsonl_with_restarted_attempts_keeps_the_last_attempt(real):
    """rohunagrawal's Llama-3.2-1B Tinker files hold restarted attempts appended (steps going back to 0): read
    line by line, the last attempt's value of each step wins, and the last attempt logs every step from 0."""
    t = next(t for t in real if t["id"] == "tinker_jsonl_public2-reward_hacking-leetcode-llama1b-easy")
    by_step = dict(t["metrics"])
    assert sorted(by_step) == list(range(45)) and t["onset"] == 9
    assert by_step[0]["time/total"] == pytest.approx(880.5593440532684)  # the third attempt's step 0, not the first's
    assert by_step[5]["reward/compilable_g"] == pytest.approx(0.2236328125)  # not the second attempt's 0.2021...
    assert max(by_step[s]["reward/compilable_g"] for s in range(9)) < 0.23 < by_step[9]["reward/compilable_g"]
    assert max(m["reward/correctness_f"] for m in by_step.values()) < 0.01  # the proxy climbs, correctness does not
    medium = next(t for t in real if t["id"] == "tinker_jsonl_public2-reward_hacking-leetcode-llama1b-medium")
    assert [s for s, _m in medium["metrics"]] == list(range(33))  # the file ends at step 32 of 45
    healthy = [t for t in real if t["source"] == "grpo_jsonl_public2"]
    assert len(healthy) == 4 and all([s for s, _m in t["metrics"]] == list(range(1, 21)) for t in healthy)

def test_a_metrics_jsonl_is_read_line_by_line_naming_a_bad_line():
    """A hand-written loop's metrics.jsonl, read by ``rlcockpit import``'s jsonl importer: numeric values under the
    run's own keys, rows of one step merged; a broken line is named (file and line) and the others are kept; the
    clean count finds steps without JSON."""
    data = (b'{"step": 0, "eval_reward": 0.5}\n{"step": 1, "train_reward": 0.6, "kl": 0.0, "note": "x", "ok": true}\n'
            b'{"step": 1, "eval_reward": 0.7}\n{"step": 2, "kl": 0.1\n["not", "a", "record"]\n{"step": 3, "kl": 0.2}\n')
    entry = {"id": "j", "kind": "jsonl", "origin": {"path": "results/run/metrics.jsonl"}}
    metrics, config, problems = real_runs.import_entry(entry, data)
    assert metrics == [(0, {"eval_reward": 0.5}), (1, {"train_reward": 0.6, "kl": 0.0, "eval_reward": 0.7}),
                       (3, {"kl": 0.2})] and config == {}
    assert [p.rsplit("/", 1)[-1] for p in problems] == [
        "metrics.jsonl:4: record skipped: not valid JSON (Expecting ',' delimiter at column 22)",
        "metrics.jsonl:5: record skipped: not a JSON object with a 'step'"]
    assert real_runs.clean_step_count(entry, data) == 4  # sees the cut line's step: the import check flags it


def test_clean_count_is_independent_of_the_importer():
    """The clean parse sees steps the importer would have to find: console lines and trainer_state entries."""
    verl = {"kind": "verl", "id": "x"}
    text = b"noise step:9 without pairs\n(TaskRunner pid=1) step:3 - a:1.0 - b:2\nstep:4 - a:1\n(x) step:4 - b:3\n"
    assert real_runs.clean_step_count(verl, text) == 2
    state = {"log_history": [{"step": 1, "loss": 0.1}, {"step": 1, "eval_loss": 0.2}, {"step": 2, "note": "x"},
                             {"loss": 3.0}]}
    assert real_runs.clean_step_count({"kind": "trl", "id": "y"}, json.dumps(state).encode()) == 1
    console = (b"  5%|x | 5/100 [..]   \r{'loss': '0.1', 'epoch': '0.05'}\n{'eval_loss': '0.2', 'epoch': '0.05'}\n"
               b"{'loss': 0.2, 'grad_na\n{'train_runtime': 3.1, 'train_loss': 0.1, 'epoch': 0.1}\n"
               b"[transformers] The tokenizer has new PAD/BOS/EOS tokens. Updated tokens: {'bos_token_id': None}.\n")
    # two training logs (the cut one included: the importer has to keep its complete pairs), eval and summary not,
    # nor a dict inside a warning (no number in it: why015's transformers 5 log prints one before training)
    assert real_runs.clean_step_count({"kind": "trl-console", "id": "z"}, console) == 2


def test_clean_count_sees_verl_file_logger_records_as_the_importer_does():
    """verl's file logger ({"step": N, "data": {...}} per line, compact or spaced) is the other verl shape
    `rlcockpit import` reads: the clean count finds its steps without a JSON parser, one per distinct step."""
    verl = {"kind": "verl", "id": "f", "origin": {"path": "metrics/verl_file_logger.jsonl"}}
    data = (b'{"step":1,"data":{"actor/entropy":0.3,"critic/score/mean":-0.3}}\n'
            b'{"step": 2, "data": {"actor/entropy": 0.4}}\n{"step":2,"data":{"val-core/x/acc/mean@1":0.4}}\n'
            b'{"data":{"a":1},"step":3}\n')
    assert real_runs.clean_step_count(verl, data) == 2  # a record not led by "step" is not one the count credits
    metrics, _config, problems = real_runs.import_entry(verl, data[:data.rindex(b'{"data"')])
    assert [s for s, _m in metrics] == [1, 2] and problems == []
    assert metrics[1][1]["val-core/x/acc/mean@1"] == pytest.approx(0.4)


def test_the_public_verl_file_logger_run_keeps_every_step_and_its_validation(real):
    """terrense's Qwen3-8B DrGRPO run (verl file logger, 20 steps, validation at 10 and 20) imports whole."""
    t = next(t for t in real if t["id"] == "verl_file_public-healthy-qwen3-8b-drgrpo-dapo-math-20")
    by_step = dict(t["metrics"])
    assert sorted(by_step) == list(range(1, 21)) and t["onset"] is None
    assert [s for s, m in by_step.items() if "val-core/math_dapo/acc/mean@1" in m] == [10, 20]
    assert by_step[20]["val-core/math_dapo/acc/mean@1"] == pytest.approx(0.4493333333333333)
    assert by_step[1]["actor/ppo_kl"] == pytest.approx(-0.0000151819940583664)


def test_tensorboard_clean_count_matches_the_importer(tmp_path):
    """TensorBoard's own loader and rlcockpit's TensorBoard reader agree on the steps of a real event file."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path)) as w:
        for step in (1, 2, 5):
            w.add_scalar("critic/score/mean", 0.1 * step, step)
        w.add_text("samples", "not a scalar", 7)
    (event,) = tmp_path.glob("events.out.tfevents*")
    entry = {"id": "tb", "kind": "tensorboard", "origin": {"path": event.name}}
    data = event.read_bytes()
    assert real_runs.clean_step_count(entry, data) == 3
    metrics, _config, problems = real_runs.import_entry(entry, data)
    assert [s for s, _m in metrics] == [1, 2, 5] and problems == []


def test_healthy_alerts_are_counted_per_detector(real):
    t = next(t for t in real if t["class"] == "healthy")
    out = dq.score(t, [(3, "throughput_drop", "warning"), (4, "throughput_drop", "warning"), (5, "kl_spike", "critical"),
                       (6, "kl_spike", "info")], dq.OURS)
    assert out["by_detector"] == {"kl_spike:critical": 1, "throughput_drop:warning": 2}
    table = dq.per_source({t["source"]: [(t, out, None)]}, with_rlwatch=False)
    row = table[t["source"]]["rlcockpit"]
    assert row["healthy_alerts_by_detector"] == {"throughput_drop:warning": 2, "kl_spike:critical": 1}
    assert row["targets"]["healthy_criticals"] is False and "rlwatch" not in table[t["source"]]


def test_per_source_figures_mark_tuned_sources(real):
    items = {src: [] for src in schema.SOURCES + schema.REAL_SOURCES}
    for t in real:
        items[t["source"]].append((t, dq.score(t, [], dq.OURS), dq.score(t, [], dq.RLWATCH)))
    table = dq.per_source(items, with_rlwatch=True)
    assert set(table) == {t["source"] for t in real}
    for src, row in table.items():
        # a real source is held out unless detector work was developed on it (then it says so)
        assert row["tuned_on"] is (src in dq.DEVELOPED_ON) and row["traces"] == len(items[src])
        assert row["rlcockpit"]["healthy_criticals"] == 0  # no findings given: nothing counted
    cpu = table["trl_cpu_settings"]["rlcockpit"]
    failing = sum(1 for t, _r, _w in items["trl_cpu_settings"] if t["class"] != "healthy")
    assert cpu["recall"] == 0.0 and cpu["failure_traces"] == failing >= 2 and cpu["targets"]["recall_per_class"] is False
    verl = table["verl_console_public"]["rlcockpit"]  # healthy runs only: no recall or delay target applies
    assert verl["targets"]["recall_per_class"] is None and verl["targets"]["median_delay"] is None
    assert verl["targets"]["healthy_criticals"] is True and verl["targets"]["all_pass"] is True
    assert "| verl_console_public | no |" in "\n".join(dq.per_source_markdown({"per_source": table}))
    assert "| grpo_loop_jsonl_public | yes (developed on) |" in "\n".join(dq.per_source_markdown({"per_source": table}))


def test_the_eighth_pass_small_group_trl_states_import_whole(real):
    """Two public TRL GRPO trainer states with 1-prompt groups (alexchilton: 1 x 2, 80 steps with an eval every 20;
    ps-research: 1 x 4, 50 steps): every step imports, eval rows merge into their step, and the readings the labels
    rest on are in the numbers (a kl of ~1 from step 1; zero-std groups at the maximum reward, not a collapse)."""
    wordle = dict(next(t for t in real if t["id"] == "trl_state_public8-healthy-wordle-grpo-stage2-1x2-80")["metrics"])
    assert sorted(wordle) == list(range(1, 81))
    assert [s for s, m in wordle.items() if "eval_reward" in m] == [20, 40, 60, 80]
    assert wordle[54]["completions/clipped_ratio"] == 0.5 and wordle[53]["completions/clipped_ratio"] == 0.0
    assert wordle[1]["kl"] > 1.0 and wordle[55]["reward_std"] == 0.0 and wordle[48]["grad_norm"] > 5
    hints = dict(next(t for t in real if t["id"] == "trl_state_public8-healthy-hint-faithfulness-grpo-1x4-50")["metrics"])
    assert sorted(hints) == list(range(1, 51))
    funcs = ("check_answer", "check_leakage", "match_format_approximately", "match_format_exactly")
    assert all(m["reward"] == pytest.approx(sum(m[f"rewards/{f}/mean"] for f in funcs)) for m in hints.values())
    saturated = [s for s in range(41, 51) if hints[s]["frac_reward_zero_std"] == 1.0]
    assert len(saturated) == 7 and all(hints[s]["reward"] == 10.5 and hints[s]["grad_norm"] < 0.06 for s in saturated)


def test_the_public_trl_console_log_imports_at_the_progress_bars_steps(real, entries):
    """The ninth pass's TRL console log (nhockid235/xling-grpo-sub3b, a vLLM-backed GRPO run's captured stdout+stderr):
    ten printed dicts at the training bar's counts 5, 10, ..., 50, no problems, the printed values as they read, and
    the clean count (the dict lines, found without rlcockpit's reader) agrees."""
    entry = next(e for e in entries if e["source"] == "trl_console_public9")
    trace = next(t for t in real if t["id"] == entry["id"])
    steps = dict(trace["metrics"])
    assert sorted(steps) == list(range(5, 51, 5)) and trace["meta"]["import_problems"] == []
    assert real_runs.clean_step_count(entry, real_runs.raw_bytes(entry)) == 10
    assert steps[5]["grad_norm"] == 0.0048155346885323524 and steps[50]["epoch"] == 0.11
    assert steps[10]["learning_rate"] == 1e-06 and all(m["loss"] == 0.0 for m in steps.values())


def test_the_twelfth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twelfth pass's CPU runs (rlcockpit_trainer_cpu8: TensorBoard event files of our trainer; trl_cpu_settings8:
    TRL trainer states): 11 + 10 runs, each imported whole, and the readings the README's labels rest on are in the
    numbers (the engine/trainer probability gap opening at 200, the format-only grader paying 1.0 from 150 with the
    accuracy flat, the leak's memory climb, the slow reward server's time, the loss-scale bug's four spikes)."""
    sel = [e for e in entries if e["source"] in ("rlcockpit_trainer_cpu8", "trl_cpu_settings8")]
    assert sorted(Counter(e["source"] for e in sel).items()) == [("rlcockpit_trainer_cpu8", 11), ("trl_cpu_settings8", 10)]
    assert {e["class"] for e in sel} == {"healthy", "reward_hacking", "rollout_mismatch", "entropy_collapse",
                                         "oom_creep", "throughput_drop", "grad_spike", "collapse"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["llamas4-2prompt-4sample-gpg-gpgloss-700-val35"]) == list(range(0, 701))  # 0: validation before training
    assert sorted(runs["qwen2s4-1prompt-8gen-drgrpo-batchscale-480-log4-eval40"]) == list(range(4, 481, 4))

    temp = runs["gpt2s4-2prompt-4sample-enginetemp2at200-calclogprobs-400-val20"]
    gap = {s: m["training/rollout_probs_diff_mean"] for s, m in temp.items() if "training/rollout_probs_diff_mean" in m}
    assert max(v for s, v in gap.items() if s < 200) < 1e-6 < 0.05 < min(v for s, v in gap.items() if s >= 200)

    for name, paid, acc in (("llamas4-2prompt-6sample-formatonly150-constlr1e-4-400-val10", "critic/score/mean",
                             "reward_extra/acc/mean"),
                            ("gpt2s4-2prompt-6gen-formatonly150-constlr1e-4-400", "rewards/train_reward/mean",
                             "rewards/accuracy/mean")):
        m = runs[name]
        assert all(m[s][paid] == pytest.approx(m[s][acc], abs=1e-6) for s in range(1, 150)), name
        assert min(m[s][paid] for s in range(150, 401)) >= 0.8 > 0.65 > max(m[s][acc] for s in range(150, 401)), name

    leak = runs["qwen2s4-2prompt-4sample-accelleak150-400-val25"]
    assert leak[400]["perf/cpu_memory_used_gb"] > max(leak[s]["perf/cpu_memory_used_gb"] for s in range(1, 150)) + 2

    slow = runs["llamas4-2prompt-4sample-slowreward30ms200-400-val25"]
    assert max(slow[s]["timing_s/reward"] for s in range(1, 200)) < 0.01 < 0.2 < min(
        slow[s]["timing_s/reward"] for s in range(200, 401))
    ramp = runs["qwen2s4-2prompt-4gen-slowrewardramp200-300-400"]
    before = sorted(ramp[s]["step_time"] for s in range(1, 200))
    after = sorted(ramp[s]["step_time"] for s in range(301, 401))
    assert after[len(after) // 2] > 4 * before[len(before) // 2]

    for name, key in (("gpt2s4-2prompt-4sample-lossscale50x-at220-260-300-340-400-val20", "actor/grad_norm"),
                      ("llamas4-2prompt-4gen-lossscale50x-at220-260-300-340-400", "grad_norm")):
        norms = {s: m[key] for s, m in runs[name].items() if key in m}
        spikes = (220, 260, 300, 340)
        assert min(norms[s] for s in spikes) > 4 * max(v for s, v in norms.items() if s not in spikes), name


def test_the_fourteenth_pass_public_trl_state_imports_whole_with_the_readings_its_label_rests_on(real, entries):
    """The fourteenth pass's public TRL GRPO trainer_state (aaravarora01/agent-memory-redteam, 4 groups of 4, 100 of 200
    steps): every step imports, the clean count agrees, and the numbers the healthy label rests on are in the file — a
    reward earned at 16 of 100 steps (one success in 16, twice two), all-zero-std groups wherever it is 0, a grad norm
    of ~1e-3 between the successes, an entropy below 0.1 and a KL below 6e-4 throughout."""
    entry = next(e for e in entries if e["source"] == "trl_state_public14")
    trace = next(t for t in real if t["id"] == entry["id"])
    steps = dict(trace["metrics"])
    assert sorted(steps) == list(range(1, 101)) and trace["meta"]["import_problems"] == []
    assert real_runs.clean_step_count(entry, real_runs.raw_bytes(entry)) == 100
    earned = [s for s, m in steps.items() if m["reward"] > 0]
    assert earned == [1, 2, 9, 10, 11, 15, 22, 37, 39, 46, 66, 70, 73, 75, 80, 97]
    assert [s for s in earned if steps[s]["reward"] == 0.125] == [2, 22]
    assert all(m["frac_reward_zero_std"] == (0.75 if s in earned else 1.0) for s, m in steps.items())
    assert max(m["grad_norm"] for s, m in steps.items() if s not in earned) < 0.003
    assert min(m["grad_norm"] for s, m in steps.items() if s in earned) > 0.02
    assert all(0.069 < m["entropy"] < 0.095 and m["kl"] < 6e-4 for m in steps.values())
    assert steps[1]["kl"] == 0.0 and steps[100]["learning_rate"] == 2.5250000000000004e-06


def test_the_sixteenth_pass_public_tinker_runs_import_whole_with_the_readings_their_labels_rest_on(real, entries):
    """The sixteenth pass's public Tinker code-RL runs (s-haider10/finetunned_coding_agent, Qwen3-4B LoRA, 8 groups a
    step): every step imports with the eval lines merged, the clean count agrees, and the numbers the healthy labels
    rest on are in the files — a reward and held-out pass rate without a trend, the file's own invariants at every
    step, and a single summed-loss outlier in each run (6e11 at 92, -5.7e9 at 22) with nothing following it."""
    sel = {e["origin"]["path"]: e for e in entries if e["source"] == "tinker_jsonl_public15"}
    assert sorted(sel) == ["results/2026_02_13-06_30_15/metrics.jsonl", "results/2026_02_13-16_11_26/metrics.jsonl"]
    assert {e["class"] for e in sel.values()} == {"healthy"}
    runs = {}
    for path, entry in sel.items():
        trace = next(t for t in real if t["id"] == entry["id"])
        assert trace["meta"]["import_problems"] == []
        assert real_runs.clean_step_count(entry, real_runs.raw_bytes(entry)) == trace["meta"]["imported_steps"]
        runs[path.split("/")[1]] = dict(trace["metrics"])
    first, second = runs["2026_02_13-06_30_15"], runs["2026_02_13-16_11_26"]
    assert sorted(first) == list(range(0, 101)) and sorted(second) == list(range(0, 50))
    for steps in (first, second):
        for m in steps.values():
            assert m["n_datums"] == 16 * (8 - m["groups_skipped"]) and m["groups_total"] == 8
            assert m["mean_reward"] == pytest.approx(m["mean_correct"] - 0.1 * (1 - m["format_rate"]), abs=1e-9)

    def mean(steps: dict, key: str, lo: int, hi: int) -> float:
        return sum(steps[s][key] for s in range(lo, hi + 1)) / (hi - lo + 1)

    assert [round(mean(first, "mean_reward", lo, lo + 24), 3) for lo in (0, 25, 50, 75)] == [0.334, 0.408, 0.388, 0.381]
    assert [first[s]["eval/pass_at_1"] for s in range(10, 101, 10)] == [0.35, 0.25, 0.3, 0.3, 0.3, 0.35, 0.3, 0.35,
                                                                        0.25, 0.3]
    assert first[92]["loss:sum"] == 608286416828.5825
    assert max(abs(m["loss:sum"]) for s, m in first.items() if s != 92) < 3e4
    assert min(first[s]["mean_reward"] for s in (93, 95, 96, 97, 99, 100)) >= 0.34  # 94 and 98 are hard batches
    assert [round(mean(second, "mean_reward", lo, lo + 24), 3) for lo in (0, 25)] == [0.354, 0.429]
    assert [round(second[s]["eval/pass_at_1"], 3) for s in (10, 20, 30, 40)] == [0.284, 0.334, 0.316, 0.334]
    assert second[22]["loss:sum"] == -5719095019.188015 and second[22]["groups_skipped"] == 0
    assert max(abs(m["loss:sum"]) for s, m in second.items() if s != 22) < 3e4
    assert second[44]["time/step_s"] == 930.4 and max(m["time/step_s"] for s, m in second.items() if s != 44) < 400


def test_the_fourteenth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The fourteenth pass's CPU runs of our trainer (rlcockpit_trainer_cpu9, TensorBoard event files): each imported
    whole, and the readings the README's labels rest on are in the numbers (the x100 paid score and grad norm from
    200, the shuffled labels' paid score falling away from the accuracy, the temperature ramp's entropy, the stale
    log-prob checkpoint's gap opening at 151, the dedup scan's step time, the KL anchor's blow-up, the length cap
    reached by the LoRA run and by the run without warm-up)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu9"]
    assert len(sel) == 14
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 3), ("grad_spike", 1), ("healthy", 6), ("length_explosion", 2), ("rollout_mismatch", 1),
        ("throughput_drop", 1)]
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["qwen2s5-1prompt-2sample-900-val45"]) == list(range(0, 901))  # 0: validation before training

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    x100 = runs["qwen2s5-2prompt-4sample-drgrpo-reward100xfrom200-constlr1e-4-400-val20"]
    assert max(x100[s]["critic/score/mean"] for s in range(1, 200)) <= 0.5 < 20 < med(x100, "critic/score/mean", 200, 400)
    assert max(x100[s]["reward_extra/acc/mean"] for s in range(1, 401)) < 0.7
    assert max(x100[s]["actor/grad_norm"] for s in range(1, 200)) < 9 < 20 < med(x100, "actor/grad_norm", 200, 400)

    shuf = runs["llamas5-4prompt-4sample-shuffledlabels200-constlr1e-4-400-val20"]
    assert all(shuf[s]["critic/score/mean"] == pytest.approx(shuf[s]["reward_extra/acc/mean"], abs=1e-6)
               for s in range(1, 200))
    assert min(shuf[s]["critic/score/mean"] for s in range(1, 202)) > 0.25 > shuf[202]["critic/score/mean"]
    assert med(shuf, "critic/score/mean", 202, 400) < 0.26 < 0.3 < med(shuf, "reward_extra/acc/mean", 202, 400)
    assert shuf[0]["val-core/arith/acc/mean@1"] > 0.5 > 0.4 > shuf[400]["val-core/arith/acc/mean@1"]

    temp = runs["gpt2s5-2prompt-4sample-tempramp1to1.6-200-350-450-val25"]
    assert max(temp[s]["actor/entropy"] for s in range(1, 200)) < 2.0 < 2.5 < med(temp, "actor/entropy", 351, 450)

    stale = runs["gpt2s5-2prompt-4sample-stalelogprobckpt150-calclogprobs-constlr2e-4-400-val20"]
    gap = {s: m["training/rollout_probs_diff_mean"] for s, m in stale.items() if "training/rollout_probs_diff_mean" in m}
    assert max(v for s, v in gap.items() if s <= 150) < 1e-6 < 1e-3 <= min(v for s, v in gap.items() if s > 150)
    assert med(stale, "training/rollout_probs_diff_mean", 351, 400) > 3 * med(stale, "training/rollout_probs_diff_mean",
                                                                            151, 175)

    dedup = runs["qwen2s5-2prompt-4sample-dedupscan150-400-val25"]
    assert med(dedup, "timing_s/step", 301, 400) > 1.6 * med(dedup, "timing_s/step", 1, 150)

    kl = runs["llamas5-2prompt-4sample-klloss005-anchoroff-lr10x-at200-450-val25"]
    assert max(kl[s]["actor/kl_loss"] for s in range(1, 200)) < 0.4 < 4 < med(kl, "actor/kl_loss", 226, 450)
    assert med(kl, "actor/entropy", 401, 450) < 0.2 and kl[450]["actor/lr"] == pytest.approx(1e-3)

    lora = runs["llamas5-lora8-2prompt-4sample-constlr1e-3-400-val20"]
    nowarm = runs["gpt2s5-2prompt-4sample-nowarmup-lr3e-3-from1-300-val15"]
    assert max(lora[s]["response_length/mean"] for s in range(1, 176)) <= 3.25 < 8 == med(lora, "response_length/mean",
                                                                                          251, 400)
    assert max(nowarm[s]["response_length/clip_ratio"] for s in range(1, 11)) <= 0.375
    assert all(nowarm[s]["response_length/clip_ratio"] >= 0.5 for s in range(42, 301))
    assert nowarm[0]["val-core/arith/acc/mean@1"] > 0.4 > 0.25 > max(nowarm[s]["val-core/arith/acc/mean@1"]
                                                                    for s in range(15, 301, 15))


def test_the_fourteenth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The fourteenth pass's TRL CPU runs (trl_cpu_settings9: TRL trainer states, model seed 5): 12 runs, each
    imported whole, and the readings the README's labels rest on are in the numbers (the reward x100 and the grad norm
    x100 from 200, the broken grader paying 1.0 from 180 with the accuracy flat, the shuffled labels pulling the paid
    reward down from the accuracy, the clip range off from 200, the beta ramp driving the length to the cap, the
    halved length budget truncating every completion from 200, the drifting reference's KL climbing from 150)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings9"]
    assert len(sel) == 12 and sum(e["class"] == "healthy" for e in sel) == 5
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["llamas5-2prompt-2gen-topentropy02-epshigh028-1000-log5"]) == list(range(5, 1001, 5))
    assert sorted(runs["gpt2s5-4prompt-2gen-drgrpo-masktrunc-maxlen6-500-log2-eval50"]) == list(range(2, 501, 2))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    x100 = runs["llamas5-2prompt-4gen-scalenone-rewardx100from200-400"]
    assert max(x100[s]["reward"] for s in range(1, 200)) < 1 < 20 < min(x100[s]["reward"] for s in range(200, 401))
    assert med(x100, "grad_norm", 200, 401) > 50 * med(x100, "grad_norm", 1, 200)

    graded = runs["qwen2s5-2prompt-4gen-grader07-format03-graderconst1from180-400-eval20"]
    assert all(graded[s]["rewards/grader/mean"] == pytest.approx(graded[s]["rewards/accuracy/mean"])
               for s in range(1, 180))
    assert all(graded[s]["rewards/grader/mean"] == 1.0 for s in range(180, 401))
    assert max(graded[s]["rewards/accuracy/mean"] for s in range(180, 401)) < 0.6 < 0.9 < min(
        graded[s]["reward"] for s in range(180, 401))

    shuffled = runs["gpt2s5-4prompt-3gen-shuffledlabelsramp150-300-constlr1e-4-400"]
    assert all(shuffled[s]["reward"] == pytest.approx(shuffled[s]["rewards/accuracy/mean"]) for s in range(1, 154))
    assert med(shuffled, "reward", 301, 401) < med(shuffled, "reward", 1, 150) - 0.1
    assert abs(med(shuffled, "rewards/accuracy/mean", 301, 401) - med(shuffled, "rewards/accuracy/mean", 1, 150)) < 0.05

    eps = runs["llamas5-2prompt-4gen-iter3-eps10from200-constlr2e-4-400"]
    assert [s for s in range(200, 401) if eps[s]["clip_ratio/region_mean"] > 0] == [315]
    assert med(eps, "kl", 251, 401) > 2 * med(eps, "kl", 1, 200)

    beta = runs["qwen2s5-2prompt-4gen-betaramp004-to-neg02-200-350-constlr1e-4-400"]
    assert max(beta[s]["completions/mean_length"] for s in range(1, 200)) < 7 < med(beta, "completions/mean_length", 251, 401)
    assert med(beta, "entropy", 376, 401) < 0.6 < 1.3 < min(beta[s]["entropy"] for s in range(1, 200))

    cut = runs["gpt2s5-2prompt-4gen-maxlen4to2from200-400-eval25"]
    assert max(cut[s]["completions/clipped_ratio"] for s in range(1, 200)) <= 0.125
    assert min(cut[s]["completions/clipped_ratio"] for s in range(200, 401)) >= 0.75
    assert max(cut[s]["completions/mean_length"] for s in range(200, 401)) <= 2.0

    drift = runs["llamas5-2prompt-4gen-beta01-refdrift01from150-400-eval25"]
    assert max(drift[s]["kl"] for s in range(1, 150)) < 0.2 < 1.0 < med(drift, "kl", 301, 401)
    assert abs(med(drift, "reward", 301, 401) - med(drift, "reward", 1, 150)) < 0.1


def test_the_fifteenth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The fifteenth pass's CPU runs of our trainer (rlcockpit_trainer_cpu10, TensorBoard event files, model seed 6):
    each imported whole, and the readings the README's labels rest on are in the numbers (the validation-only leak's
    memory, the Llama run at lr 5e-4 at the length cap before its Adam drops, the KL loss at 0 on each reference
    re-sync and the length drifting after, the KL decay's blow-up and falling validation, the leading-'1' bias
    lifting the paid score off a flat accuracy, the hard-prompt drift leaving the reward flat, the Adam drops every
    10 steps, the grading on 2 characters, the quadratic trace flush's step time)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu10"]
    assert len(sel) == 15
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 1), ("healthy", 9), ("length_explosion", 2), ("oom_creep", 1), ("reward_hacking", 1),
        ("throughput_drop", 1)]
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["qwen2s6-3prompt-3sample-resp16-constlr5e-5-1000-val50"]) == list(range(0, 1001))

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    leak = runs["gpt2s6-2prompt-4sample-valleak16mb-from150-450-val7"]
    mem = "perf/cpu_memory_used_gb"
    assert max(leak[s][mem] for s in range(1, 150)) < 2.15 < 2.8 < med(leak, mem, 426, 450)
    meds = [med(leak, mem, lo, lo + 24) for lo in range(151, 451, 25)]  # up window after window once it leaks
    assert meds == sorted(meds) and meds[0] < 1.61
    rss = {s: m["system/proc_rss_gb"] for s, m in leak.items() if "system/proc_rss_gb" in m}
    assert max(v for s, v in rss.items() if s < 150) < 0.5 and rss[max(rss)] > 1.0

    adam = runs["llamas6-2prompt-4sample-adamdrop-every25-from200-constlr5e-4-450-val25"]
    assert max(adam[s]["response_length/mean"] for s in range(1, 52)) <= 3.75 < adam[52]["response_length/mean"]
    assert all(adam[s]["response_length/clip_ratio"] == 0 for s in range(1, 52))
    assert med(adam, "response_length/mean", 76, 450) == 8

    resync = runs["qwen2s6-2prompt-4sample-klloss01-refresync-every50-from150-constlr5e-4-450-val25"]
    assert [s for s in range(6, 451) if resync[s]["actor/kl_loss"] == 0] == list(range(150, 451, 50))
    assert med(resync, "actor/kl_loss", 101, 149) > 2 > 0.1 > med(resync, "actor/kl_loss", 151, 175)
    assert med(resync, "response_length/mean", 1, 149) <= 2.25 < 3.5 <= med(resync, "response_length/mean", 401, 450)

    kld = runs["gpt2s6-2prompt-4sample-kldecay-clipoff-lrrise20x-200-400-450-val25"]
    assert max(kld[s]["actor/kl_loss"] for s in range(1, 200)) < 0.6 < 4 < med(kld, "actor/kl_loss", 376, 450)
    assert min(kld[s]["val-core/arith/acc/mean@1"] for s in range(0, 201, 25)) > 0.45 > 0.25 > kld[450][
        "val-core/arith/acc/mean@1"]
    assert med(kld, "actor/entropy", 426, 450) < 0.7 and kld[450]["actor/lr"] == pytest.approx(2e-3)

    bias = runs["llamas6-2prompt-4sample-leading1bias-150-350-450-val25"]
    assert all(bias[s]["critic/score/mean"] == pytest.approx(bias[s]["reward_extra/acc/mean"], abs=1e-6)
               for s in range(1, 151))
    assert med(bias, "critic/score/mean", 351, 375) > 1 > 0.45 > med(bias, "reward_extra/acc/mean", 351, 375)
    assert bias[0]["val-core/arith/acc/mean@1"] > 0.46 > 0.41 > bias[450]["val-core/arith/acc/mean@1"]

    drift = runs["gpt2s6-2prompt-4sample-harddrift-150-350-450-val25"]
    assert abs(med(drift, "critic/score/mean", 351, 450) - med(drift, "critic/score/mean", 1, 150)) < 0.05
    assert min(drift[s]["val-core/arith/acc/mean@1"] for s in range(0, 451, 25)) > 0.44

    drops = runs["gpt2s6-2prompt-4sample-adamdrop-every10-from200-constlr2e-4-450-val25"]
    assert abs(med(drops, "actor/entropy", 201, 450) - med(drops, "actor/entropy", 1, 200)) < 0.1
    assert med(drops, "response_length/mean", 201, 450) == 3

    trunc = runs["gpt2s6-2prompt-4sample-gradetrunc2chars-from200-450-val25"]
    assert all(trunc[s]["critic/score/mean"] == pytest.approx(trunc[s]["reward_extra/acc/mean"], abs=1e-6)
               for s in range(1, 200))
    assert any(trunc[s]["critic/score/mean"] < trunc[s]["reward_extra/acc/mean"] - 1e-6 for s in range(200, 451))
    assert abs(med(trunc, "critic/score/mean", 201, 450) - med(trunc, "critic/score/mean", 1, 199)) < 0.05
    assert min(trunc[s]["val-core/arith/acc/mean@1"] for s in range(0, 451, 25)) > 0.45

    flush = runs["llamas6-2prompt-4sample-traceflush-quadratic-from150-450-val25"]
    assert max(flush[s]["timing_s/step"] for s in range(1, 150)) < 0.18 < 0.35 < med(flush, "timing_s/step", 251, 450)
    assert med(flush, "timing_s/step", 151, 175) < 0.1 and med(flush, "timing_s/gen", 251, 450) < 0.05


def test_the_sixteenth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The sixteenth pass's CPU runs of our trainer (rlcockpit_trainer_cpu11, TensorBoard event files, model seed 7):
    each imported whole, and the readings the README's labels rest on are in the numbers (the grader timeouts pulling
    the paid score off a flat accuracy, the inverted entropy schedule lifting grad norm and entropy, Qwen2 at lr 4e-4
    at the length cap before its scheduler restarts, the cut prompts breaking the training outputs with validation
    flat, the per-token leak's process memory, the GPT-2 scheduler restarts and its length at the cap, the flipped
    length penalty paying for length, the periodic reward outages, the shrinking clip tying groups; and the two planned
    faults that left no mark)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu11"]
    assert len(sel) == 18
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 5), ("healthy", 9), ("length_explosion", 2), ("oom_creep", 1), ("reward_hacking", 1)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"63d05da", "2c729d3", "257fcb7"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["qwen2s7-2prompt-6sample-reinforceloss-klfull002-600-val30"]) == list(range(0, 601))

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, acc = "critic/score/mean", "reward_extra/acc/mean"
    timeout = runs["gpt2s7-2prompt-6sample-gradertimeout0-70pct-150-350-450-val25"]
    assert all(timeout[s][score] == pytest.approx(timeout[s][acc], abs=1e-6) for s in range(1, 150))
    assert med(timeout, score, 351, 450) < 0.15 < 0.35 < med(timeout, acc, 351, 450)
    assert min(timeout[s]["val-core/arith/acc/mean@1"] for s in range(0, 451, 25)) > 0.45

    ent = runs["llamas7-2prompt-6sample-entcoeframp0-1-200-350-450-val25"]
    assert med(ent, "actor/grad_norm", 1, 200) < 4.5 < 9 < med(ent, "actor/grad_norm", 401, 450)
    assert med(ent, "actor/entropy", 1, 200) < 1.75 < 1.9 < med(ent, "actor/entropy", 401, 450)
    assert "actor/entropy_loss" not in ent[150] and "actor/entropy_loss" in ent[250]

    qrestart = runs["qwen2s7-2prompt-6sample-lr4e-4-warmup25-cos-schedrestart200-300-400-500-val25"]
    ln, clip = "response_length/mean", "response_length/clip_ratio"
    assert max(qrestart[s][ln] for s in range(1, 20)) <= 3.34 < qrestart[20][ln]
    assert med(qrestart, ln, 51, 75) == 8 and min(qrestart[s][ln] for s in range(107, 129)) < 2.5
    assert med(qrestart, clip, 151, 500) == 1
    assert [s for s in range(2, 501) if qrestart[s]["actor/lr"] < qrestart[s - 1]["actor/lr"] / 5] == [200, 300, 400]

    cut = runs["gpt2s7-2prompt-6sample-promptlasttokendropped-from220-450-val25"]
    assert max(cut[s][ln] for s in range(1, 220)) <= 3.42 < cut[220][ln] and cut[223][ln] == 1
    assert med(cut, score, 1, 219) > 0.35 > 0.25 > med(cut, score, 226, 375)
    assert min(cut[s]["val-core/arith/acc/mean@1"] for s in range(225, 451, 25)) > 0.44

    leak = runs["llamas7-2prompt-6sample-pertokenleak64kb-from150-resp32-450-val25"]
    rss = {s: m["system/proc_rss_gb"] for s, m in leak.items() if "system/proc_rss_gb" in m}
    assert max(v for s, v in rss.items() if s < 150) < 0.56 and rss[max(rss)] > 1.15
    assert sorted(rss.values()) == [rss[s] for s in sorted(rss)]
    assert med(leak, ln, 151, 450) == 3

    grestart = runs["gpt2s7-2prompt-6sample-lr3e-4-warmup25-cos-schedrestart200-300-400-500-val25"]
    assert [s for s in range(2, 501) if grestart[s]["actor/lr"] < grestart[s - 1]["actor/lr"] / 5] == [200, 300, 400]
    assert max(grestart[s][ln] for s in range(1, 200)) <= 3.5 and med(grestart, ln, 326, 500) == 8

    flip = runs["gpt2s7-2prompt-6sample-lenpenaltysignflip02-at200-constlr1e-4-resp24-450-val25"]
    assert med(flip, score, 426, 450) > 9 > 0.45 > med(flip, acc, 426, 450) and med(flip, ln, 426, 450) == 24
    assert max(flip[s][ln] for s in range(1, 200)) <= 3.5

    outage = runs["llamas7-2prompt-6sample-rewardoutage10every50-from150-450-val25"]
    down = [s for s in range(150, 451) if (s - 150) % 50 < 10]
    assert [s for s in range(1, 451) if outage[s][score] == 0] == down
    assert all(outage[s]["actor/grad_norm"] == 0 and outage[s][acc] > 0 for s in down)

    clipped = runs["gpt2s7-2prompt-6sample-rewardclip1to03-150-300-450-val25"]
    assert max(clipped[s][score] for s in range(300, 451)) <= 0.3 + 1e-6 < 0.38 < med(clipped, acc, 301, 450)
    assert sum(clipped[s]["actor/grad_norm"] == 0 for s in range(301, 451)) > 50
    assert sum(clipped[s]["actor/grad_norm"] == 0 for s in range(1, 150)) < 5

    # planned faults that left no mark (stored healthy)
    qclip = runs["qwen2s7-2prompt-6sample-rewardclip1to03-150-300-450-val25"]
    assert abs(med(qclip, score, 301, 450) - med(qclip, score, 1, 150)) < 0.1
    weak = runs["gpt2s7-2prompt-6sample-lenpenaltysignflip005-at200-resp24-450-val25"]
    assert med(weak, ln, 201, 450) == 3 and min(weak[s]["val-core/arith/acc/mean@1"] for s in range(0, 451, 25)) > 0.46


def test_the_fifteenth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The fifteenth pass's TRL CPU runs (trl_cpu_settings10: TRL trainer states, model seed 6), each imported whole,
    and the readings the README's labels rest on are in the numbers (the growing bonus for '0' doubling the paid
    reward with the accuracy flat, harder prompts halving the training reward with the evaluation flat, the decaying
    beta clipping completions from 225, clipping off with the lr ramp driving the kl and length up, zeroed Adam
    second moments collapsing entropy at 251, the re-synced reference pinning the kl at 0 while the length goes to the
    cap, the suppressed stop token sending every completion to 24 tokens from 250)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings10"]
    assert sum(e["class"] == "healthy" for e in sel) == 6
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s6-3prompt-3gen-sapo-scalebatch-maxlen24-1000-log10"]) == list(range(10, 1001, 10))
    assert sorted(runs["gpt2s6-3prompt-3gen-gspo-temp07-700-log3-eval15"])[:3] == [3, 6, 9]

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    zero = runs["gpt2s6-3prompt-3gen-zerobonusgrows004from150-500"]
    assert all(zero[s]["reward"] == pytest.approx(zero[s]["rewards/accuracy/mean"]) for s in range(1, 150))
    assert med(zero, "reward", 451, 501) > 0.75 > 0.45 > med(zero, "rewards/accuracy/mean", 451, 501)
    assert abs(med(zero, "rewards/accuracy/mean", 401, 501) - med(zero, "rewards/accuracy/mean", 1, 150)) < 0.05

    harder = runs["llamas6-3prompt-3gen-harderpromptsramp150-350-450-eval15"]
    assert med(harder, "reward", 1, 150) > 0.35 > 0.25 > med(harder, "reward", 351, 451)
    assert med(harder, "completions/mean_length", 351, 451) < 2.5 < med(harder, "completions/mean_length", 1, 150)
    assert min(harder[s]["eval_reward"] for s in range(165, 451, 15)) > 0.3

    decay = runs["qwen2s6-6prompt-2gen-betadecay004to0-200-400-constlr2e-4-550"]
    assert max(decay[s]["completions/clipped_ratio"] for s in range(1, 225)) == 0 < decay[225]["completions/clipped_ratio"]
    assert max(decay[s]["completions/mean_length"] for s in range(1, 200)) < 2.7 < 3.3 < med(decay, "completions/mean_length", 351, 551)

    noclip = runs["gpt2s6-1prompt-12gen-noclip-lrramp1-40x-200-400-500"]
    assert max(noclip[s]["kl"] for s in range(1, 200)) < 1.2 < 4 < med(noclip, "kl", 351, 501)
    assert all(noclip[s]["completions/clipped_ratio"] >= 0.9 for s in range(401, 501))
    assert med(noclip, "reward", 451, 501) < 0.25 < 0.35 < med(noclip, "reward", 1, 200)

    adam = runs["llamas6-3prompt-3gen-adamvzeroedat250-constlr1e-4-450"]
    assert min(adam[s]["entropy"] for s in range(1, 251)) > 1.3 > 0.2 > max(adam[s]["entropy"] for s in range(251, 451))
    assert max(adam[s]["kl"] for s in range(1, 251)) < 0.5 < 6 < min(adam[s]["kl"] for s in range(251, 451))
    assert all(adam[s]["completions/clipped_ratio"] == 1 for s in range(251, 451))

    resync = runs["qwen2s6-3prompt-3gen-beta02-refresyncevery1from200-constlr2e-4-500-eval15"]
    assert med(resync, "kl", 1, 200) > 0.1 and all(resync[s]["kl"] == 0 for s in range(200, 501))
    assert max(resync[s]["completions/mean_length"] for s in range(1, 212)) < 3 < 7.5 < med(resync, "completions/mean_length", 251, 501)
    assert all(resync[s]["eval_completions/mean_length"] > 7.5 for s in range(225, 500, 15))

    eos = runs["llamas6-3prompt-3gen-eossuppressedfrom250-maxlen24-450"]
    assert max(eos[s]["completions/mean_length"] for s in range(1, 250)) < 3.5
    assert all(eos[s]["completions/mean_length"] == 24 and eos[s]["completions/clipped_ratio"] == 1
               for s in range(250, 451))
    assert len(sel) == 13 and "gpt2s6-6prompt-2gen-rewardontruncated2from200-500" not in runs


def test_the_sixteenth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The sixteenth pass's TRL CPU runs (trl_cpu_settings11: TRL trainer states, model seed 7), each imported whole,
    and the readings the README's labels rest on are in the numbers (caught grader time-outs eating the paid reward
    with the accuracy flat, a swapped weight schedule driving the paid reward to 1.0 with the accuracy flat, growing
    reward noise, generation top_k at 1 making every group tie, the length budget at 2 clipping every completion
    from 288, doubling lr restarts driving the kl up, a growing few-shot prefix sending completions to the cap; the
    two planned faults that left no mark stored healthy)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings11"]
    assert len(sel) == 15 and sum(e["class"] == "healthy" for e in sel) == 8
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s7-2prompt-5gen-normthensum-acc07-format03-600-log5-eval20"]) == list(range(5, 601, 5))
    assert sorted(runs["qwen2s7-1prompt-7gen-beta2095-wd01-constwarmup40-noshuffle-500-log4"]) == list(range(4, 501, 4))
    assert sorted(runs["gpt2s7-3prompt-4gen-graderraisesramp0-08-150-400-500"]) == list(range(1, 501))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    flaky = runs["gpt2s7-3prompt-4gen-graderraisesramp0-08-150-400-500"]
    assert all(flaky[s]["rewards/grader/mean"] == pytest.approx(flaky[s]["rewards/accuracy/mean"]) for s in range(1, 161))
    assert med(flaky, "reward", 1, 150) > 0.38 > 0.35 > 0.1 > med(flaky, "reward", 451, 501)
    assert abs(med(flaky, "rewards/accuracy/mean", 401, 501) - med(flaky, "rewards/accuracy/mean", 1, 150)) < 0.05

    weights = runs["llamas7-2prompt-5gen-weightschedule-acc07to0-format03to1-150-400-500-eval20"]
    assert med(weights, "reward", 1, 150) < 0.6 < 0.99 < med(weights, "reward", 401, 501)
    assert abs(med(weights, "rewards/accuracy/mean", 401, 501) - med(weights, "rewards/accuracy/mean", 1, 150)) < 0.05
    assert med(weights, "frac_reward_zero_std", 401, 501) == 1 and med(weights, "grad_norm", 401, 501) < 0.2
    assert weights[500]["eval_reward"] > 0.95 > 0.6 > max(weights[s]["eval_reward"] for s in range(20, 150, 20))

    noisy = runs["qwen2s7-3prompt-3gen-rewardnoiseramp0-1-150-400-450"]
    assert max(noisy[s]["reward_std"] for s in range(1, 150)) < 0.4 < 0.9 < med(noisy, "reward_std", 401, 451)
    assert min(noisy[s]["reward"] for s in range(401, 451)) < 0 and all(noisy[s]["frac_reward_zero_std"] == 0 for s in range(151, 451))
    assert abs(med(noisy, "rewards/accuracy/mean", 351, 451) - med(noisy, "rewards/accuracy/mean", 1, 150)) < 0.06

    topk = runs["llamas7-3prompt-4gen-gentopkramp20-1-150-350-450"]
    assert max(topk[s]["frac_reward_zero_std"] for s in range(1, 150)) < 1
    assert all(topk[s]["frac_reward_zero_std"] == 1 for s in range(345, 451)) and med(topk, "grad_norm", 351, 451) < 0.2
    assert med(topk, "entropy", 351, 451) > med(topk, "entropy", 1, 150)

    budget = runs["gpt2s7-3prompt-4gen-maxnewtokensramp8-2-150-300-450"]
    assert max(budget[s]["completions/clipped_ratio"] for s in range(1, 288)) < 0.1
    assert all(budget[s]["completions/clipped_ratio"] > 0.9 and budget[s]["completions/mean_length"] <= 2 for s in range(288, 451))

    restarts = runs["llamas7-3prompt-4gen-lrrestartspeakx2-from100-cycle75-constlr1e-4-450"]
    assert restarts[401]["learning_rate"] > 10 * restarts[99]["learning_rate"]  # TRL logs the lr one step late
    assert max(restarts[s]["kl"] for s in range(1, 100)) < 0.13 < 0.8 < med(restarts, "kl", 401, 451)
    assert med(restarts, "entropy", 426, 451) < 1.3 < 1.6 < med(restarts, "entropy", 1, 100)

    prefix = runs["gpt2s7-2prompt-5gen-fewshotprefixgrows0-10-150-350-450-eval20"]
    assert max(prefix[s]["completions/mean_length"] for s in range(1, 163)) <= 3.5 < 5 < prefix[163]["completions/mean_length"]
    assert med(prefix, "completions/mean_length", 401, 451) > 7 and med(prefix, "reward", 351, 451) < 0.3 < med(prefix, "reward", 1, 150)
    assert min(prefix[s]["eval_reward"] for s in range(160, 451, 20)) > 0.35

    for quiet in ("gpt2s7-4prompt-3gen-reppenramp1-3-150-350-450", "qwen2s7-2prompt-5gen-spacedpromptsramp150-350-450-eval20"):
        q = runs[quiet]  # planned faults that left no mark: stored healthy, every step kept
        assert sorted(q) == list(range(1, 451)) and med(q, "reward", 351, 451) >= med(q, "reward", 1, 150) - 0.02


def test_the_seventeenth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The seventeenth pass's CPU runs of our trainer (rlcockpit_trainer_cpu12, TensorBoard event files, model seed 8):
    each imported whole, and the readings the README's labels rest on are in the numbers (Qwen2 at lr 2e-4 and Llama
    at lr 6e-4 running to the length cap by themselves, the reward scale drifting up into the grad norm and down out
    of it, the exact-match grader zeroing the paid score, the strict grader's rollout, the sorted dataset tying
    groups and dipping the entropy, the inverted KL controller's runaway coefficient taking over the reward; and the
    planned faults that left no mark)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu12"]
    assert len(sel) == 20
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 5), ("entropy_collapse", 1), ("grad_spike", 1), ("healthy", 11), ("length_explosion", 2)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"10d0f94", "1a4580e", "216f401"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s8-5prompt-3sample-constlr2e-4-resp12-300-val15"]) == list(range(0, 301))
    assert sorted(runs["llamas8-5prompt-3sample-drgrpo-rewardscale1to10-150-300-350-val15"]) == list(range(0, 351))

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, acc, ln, gn = "critic/score/mean", "reward_extra/acc/mean", "response_length/mean", "actor/grad_norm"
    val = "val-core/arith/acc/mean@1"
    qlen = runs["qwen2s8-5prompt-3sample-gradclip05-constlr2e-4-300-val15"]
    assert max(qlen[s][ln] for s in range(1, 40)) <= 2.21 < 2.3 < qlen[40][ln]
    assert med(qlen, ln, 151, 300) == 8 and med(qlen, "response_length/clip_ratio", 151, 300) == 1
    llen = runs["llamas8-5prompt-3sample-constlr6e-4-gradclip05-resp12-300-val15"]
    assert max(llen[s][ln] for s in range(28, 230)) < 3.9 < 9 < llen[234][ln] and llen[243][ln] == 12
    assert all(llen[s]["response_length/clip_ratio"] == 0 for s in range(27, 230))

    up = runs["llamas8-5prompt-3sample-drgrpo-rewardscale1to10-150-300-350-val15"]
    assert all(up[s][score] == pytest.approx(up[s][acc], abs=1e-6) for s in range(1, 151))
    assert med(up, score, 301, 350) > 4 > 0.5 > med(up, acc, 301, 350)
    assert max(up[s][gn] for s in range(1, 150)) < 2.2 < 5 < med(up, gn, 301, 350)
    down = runs["llamas8-2prompt-8sample-drgrpo-rewardscale1to002-150-300-350-val15"]
    assert med(down, score, 301, 350) < 0.02 < 0.4 < med(down, acc, 301, 350)
    assert med(down, gn, 1, 150) > 0.5 > 0.02 > med(down, gn, 301, 350)

    exact = runs["gpt2s8-2prompt-8sample-exactmatchonly-from180-350-val15"]
    assert min(exact[s][score] for s in range(1, 180)) > 0.15 and exact[180][score] == 0
    zero = [s for s in range(180, 351) if exact[s][score] == 0]
    assert len(zero) == 115 and all(exact[s][gn] == 0 for s in zero) and med(exact, acc, 180, 350) > 0.38
    rollout = runs["gpt2s8-2prompt-8sample-strictgraderrollout0-100pct-150-300-350-val15"]
    assert all(rollout[s][score] == pytest.approx(rollout[s][acc], abs=1e-6) for s in range(1, 151))
    assert med(rollout, score, 301, 350) == 0 and med(rollout, acc, 301, 350) > 0.38
    assert sum(rollout[s][gn] == 0 for s in range(1, 276)) == 0 < 30 < sum(rollout[s][gn] == 0 for s in range(276, 351))

    gsort = runs["gpt2s8-5prompt-3sample-sorteddataset-from150-350-val15"]
    ent = "actor/entropy"
    assert min(gsort[s][ent] for s in range(1, 150)) > 1.45 > 1.1 > med(gsort, ent, 176, 200)
    assert med(gsort, ent, 326, 350) < 1.57 and min(gsort[s][val] for s in range(0, 351, 15)) > 0.47
    qsort = runs["qwen2s8-5prompt-3sample-sorteddataset-from150-350-val15"]
    assert sum(qsort[s][gn] == 0 for s in range(1, 150)) <= 8 < 40 <= sum(qsort[s][gn] == 0 for s in range(151, 251))
    assert med(qsort, gn, 1, 100) > 4 > 1.5 > med(qsort, gn, 151, 350)
    assert sum(abs(qsort[s][score] - 1 / 3) < 1e-6 for s in range(151, 301)) > 70

    klrun = runs["llamas8-5prompt-3sample-klinreward-adaptive-target02-range-inverted-from150-constlr2e-4-350-val15"]
    coef = "actor/reward_kl_penalty_coeff"
    assert klrun[149][coef] == pytest.approx(0.01) and klrun[300][coef] == pytest.approx(1000)
    assert min(klrun[s]["critic/rewards/mean"] for s in range(1, 150)) > 0.26 and med(klrun, "critic/rewards/mean", 326, 350) < -50
    assert abs(med(klrun, score, 301, 350) - med(klrun, score, 1, 149)) < 0.05

    # planned faults that left no mark (stored healthy)
    soft = runs["llamas8-5prompt-3sample-klinreward-adaptive-inverted-from150-350-val15"]
    assert soft[350][coef] > 50 * soft[150][coef] and soft[350][coef] < 0.2
    assert all(abs(soft[s]["critic/rewards/mean"] - soft[s][score]) < 0.03 for s in range(1, 351))
    h30 = runs["llamas8-5prompt-3sample-klinreward-adaptive-h30-inverted-from150-constlr2e-4-350-val15"]
    assert max(h30[s][coef] for s in range(150, 351)) < 3 and h30[350][coef] < h30[200][coef]
    fmt = runs["gpt2s8-2prompt-8sample-stricterformat-from180-resp12-350-val15"]
    assert max(fmt[s][acc] - fmt[s][score] for s in range(180, 351)) <= 0.0625 + 1e-6
    for name in ("gpt2s8-5prompt-3sample-dupprompts0-80pct-150-300-350-val15",
                 "gpt2s8-2prompt-8sample-rolloutdropout-from150-350-val15"):
        quiet = runs[name]
        assert abs(med(quiet, score, 151, 350) - med(quiet, score, 1, 150)) < 0.05
        assert abs(med(quiet, ent, 151, 350) - med(quiet, ent, 1, 150)) < 0.1 and med(quiet, ln, 151, 350) == 3


def test_the_seventeenth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The seventeenth pass's TRL CPU runs (trl_cpu_settings12: TRL trainer states, model seed 8), each imported whole,
    and the readings the README's labels rest on are in the numbers (a reward clipped to a shrinking range with the
    accuracy flat, a repetition bonus the policy learns to collect, a noisy reference model and a resume with the
    optimizer state lost and the lr x10 sending the kl up from 152, left-truncated prompts lengthening the
    completions from 179; the eval leak that left no mark stored healthy)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings12"]
    assert len(sel) == 10 and sum(e["class"] == "healthy" for e in sel) == 5
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s8-4prompt-3gen-sapo-scalebatch-lr3e-5-350-log7-eval25"]) == sorted(
        set(range(7, 351, 7)) | set(range(25, 351, 25)))  # logging every 7, evaluation every 25
    assert sorted(runs["llamas8-4prompt-3gen-luspo-seqis-scalegroup-300-log7"]) == list(range(7, 295, 7))
    assert sorted(runs["gpt2s8-1prompt-10gen-cispo-noscale-epshigh028-masktrunc-lr1e-4-300-log3-eval25"]) == sorted(
        set(range(3, 301, 3)) | set(range(25, 301, 25)))
    assert sorted(runs["llamas8-1prompt-10gen-vespo-lr3e-4-300-log1"]) == list(range(1, 301))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    clip = runs["gpt2s8-4prompt-3gen-rewardclipshrinks1-01-120-270-350"]
    assert sorted(clip) == list(range(1, 351))
    assert all(clip[s]["reward"] == pytest.approx(clip[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 126))
    assert all(clip[s]["reward"] <= 0.1 + 1e-6 for s in range(271, 351)) and med(clip, "reward", 1, 120) > 0.35
    assert abs(med(clip, "rewards/accuracy/mean", 271, 351) - med(clip, "rewards/accuracy/mean", 1, 120)) < 0.05
    assert med(clip, "frac_reward_zero_std", 251, 351) >= 0.75 > 0.25 >= med(clip, "frac_reward_zero_std", 1, 120)

    rep = runs["llamas8-1prompt-10gen-repetitionbonus-from120-lr1e-4-350"]
    assert all(rep[s]["reward"] == pytest.approx(rep[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 120))
    assert sum(rep[s]["reward"] > rep[s]["rewards/accuracy/mean"] + 1e-4 for s in range(120, 351)) > 200
    assert med(rep, "reward", 251, 351) > 0.54 > 0.44 > med(rep, "reward", 1, 120)
    assert abs(med(rep, "rewards/accuracy/mean", 251, 351) - med(rep, "rewards/accuracy/mean", 1, 120)) < 0.05
    # relabelled 2026-12-07 by a second reading (227 -> 120): the paid reward parts from the accuracy at the switch and
    # its 20-step mean is out for good from there; the 10-step mean's one dip back into its range at 226 made the 227
    assert [(e["class"], e["onset"]) for e in sel if "repetitionbonus" in e["id"]] == [("reward_hacking", 120)]
    assert rep[120]["reward"] - rep[120]["rewards/accuracy/mean"] > 0.09
    gap = {s: {"gap": rep[s]["reward"] - rep[s]["rewards/accuracy/mean"]} for s in rep}
    assert min(v for s, v in _rolling(gap, "gap").items() if s >= 129) > 0.05
    assert _out_for_good(rep, "reward", (20, 119), w=20) == 120 and _out_for_good(rep, "reward", (10, 119)) == 227

    for name in ("gpt2s8-4prompt-3gen-refmodelnoise005-at150-300-eval25",
                 "llamas8-4prompt-3gen-resumeoptstatelost-lrx10-at150-constlr-300"):
        m = runs[name]  # the kl leaves its range at step 152 and its 25-step medians stay many times higher
        assert max(m[s]["kl"] for s in range(1, 150)) < m[152]["kl"] and med(m, "kl", 152, 301) > 5 * med(m, "kl", 1, 150)
    noise = runs["gpt2s8-4prompt-3gen-refmodelnoise005-at150-300-eval25"]
    assert min(noise[s]["kl"] for s in range(152, 301)) > 0.2 and noise[300]["eval_kl"] > 1 > 0.05 > noise[125]["eval_kl"]
    resume = runs["llamas8-4prompt-3gen-resumeoptstatelost-lrx10-at150-constlr-300"]
    assert resume[151]["learning_rate"] == pytest.approx(10 * resume[150]["learning_rate"])  # logged one step late
    assert med(resume, "entropy", 251, 301) < 1.4 < 1.5 < med(resume, "entropy", 1, 150)

    trunc = runs["gpt2s8-4prompt-3gen-prompttruncleft0-4-120-270-350-eval25"]
    assert max(trunc[s]["completions/mean_length"] for s in range(146, 179)) < 3.2 < 3.9 < trunc[179]["completions/mean_length"]
    assert med(trunc, "completions/mean_length", 301, 351) >= 5 and med(trunc, "reward", 301, 351) < 0.26 < 0.38 < med(trunc, "reward", 1, 120)
    assert all(2.9 < trunc[s]["eval_completions/mean_length"] < 3.1 for s in range(175, 351, 25))

    leak = runs["gpt2s8-4prompt-3gen-evalleakramp0-1-120-220-constlr2e-4-350-eval25"]  # planned fault, no mark: healthy
    assert sorted(leak) == list(range(1, 351)) and max(leak[s]["eval_reward"] for s in range(175, 351, 25)) < 0.42


def test_the_eighteenth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The eighteenth pass's TRL CPU runs (trl_cpu_settings13: TRL trainer states, model seed 9), each imported whole,
    and the readings the README's labels rest on are in the numbers (a grader returning None for a growing share
    starving the gradient, a grader that drops the zero padding, a warm-up to lr 3e-3, a reward normaliser drifting
    x30 under scale_rewards none, reward time-outs slowing every step, a leading-zero bonus the policy collects, a
    reference pushed away at every sync, a template change lengthening the completions, lr 2e-3 from the first step;
    the sorted dataset and the max_grad_norm typo stored healthy)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings13"]
    assert len(sel) == 15 and Counter(e["class"] for e in sel) == {
        "healthy": 6, "collapse": 5, "grad_spike": 1, "throughput_drop": 1, "reward_hacking": 1, "length_explosion": 1}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["llamas9-2prompt-4gen-grpo-numiter3-eps01-02-beta002-300-log2-eval20"]) == list(range(2, 301, 2))
    assert sorted(runs["gpt2s9-1prompt-8gen-dapo-entropybonus0005-topentq05-lr1e-4-300-log4"]) == list(range(4, 301, 4))
    assert sorted(runs["gpt2s9-2prompt-3gen-sapo-tneg2-tpos05-beta01-syncref03-25-300-log6-eval30"]) == list(
        range(6, 301, 6))  # evaluation every 30 falls on logged steps
    assert sorted(runs["llamas9-3prompt-3gen-bnpo-2rewards08-02-cosminlr-warm30-temp09-lr1e-4-300"]) == list(range(1, 301))
    assert sorted(runs["gpt2s9-2prompt-4gen-maxgradnorm1e-3-from150-300-log3"]) == list(range(3, 301, 3))
    for name, n in (("gpt2s9-2prompt-4gen-rewardnone0-09-120-270-350", 350),
                    ("gpt2s9-2prompt-4gen-lr2e-3-constant-nowarmup-300", 300)):
        assert sorted(runs[name]) == list(range(1, n + 1))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    none = runs["gpt2s9-2prompt-4gen-rewardnone0-09-120-270-350"]  # null rewards from 200, the gradient starves
    assert all("reward" in none[s] for s in range(1, 200)) and sum("reward" not in none[s] for s in range(200, 351)) >= 40
    assert med(none, "grad_norm", 301, 351) < 0.1 < 2 < med(none, "grad_norm", 1, 120)

    unpad = runs["llamas9-4prompt-3gen-gradertruthunpadded-from150-lr1e-4-350"]
    assert all(unpad[s]["reward"] == pytest.approx(unpad[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 150))
    assert min(unpad[s]["reward"] for s in range(1, 150)) > unpad[153]["reward"]
    assert med(unpad, "reward", 200, 351) < 0.25 < 0.38 < med(unpad, "reward", 1, 150)
    assert abs(med(unpad, "rewards/accuracy/mean", 200, 351) - med(unpad, "rewards/accuracy/mean", 1, 150)) < 0.05

    warm = runs["gpt2s9-2prompt-4gen-warmup300of350-peak3e-3-350"]
    assert warm[300]["learning_rate"] == pytest.approx(3e-3, rel=0.01) and med(warm, "kl", 201, 351) > 3 > 0.1 > med(warm, "kl", 1, 51)
    assert med(warm, "completions/mean_length", 226, 351) >= 7.5 > 3.1 > med(warm, "completions/mean_length", 1, 176)

    drift = runs["llamas9-1prompt-8gen-drgrpo-noscale-rewardnormdrift1-30-150-300-350"]
    assert max(drift[s]["reward"] for s in range(1, 151)) < drift[152]["reward"] and med(drift, "reward", 301, 351) > 10
    assert med(drift, "grad_norm", 301, 351) > 5 > 0.5 > med(drift, "grad_norm", 1, 151)
    assert abs(med(drift, "rewards/accuracy/mean", 301, 351) - med(drift, "rewards/accuracy/mean", 1, 151)) < 0.05

    slow = runs["llamas9-2prompt-4gen-rewardtimeouts025s-30pct-from200-350"]
    assert min(slow[s]["step_time"] for s in range(200, 351)) > 0.33 > 0.2 > med(slow, "step_time", 1, 200)
    assert med(slow, "reward", 201, 351) < 0.3 < 0.37 < med(slow, "reward", 1, 176)

    zero = runs["gpt2s9-1prompt-8gen-leadingzerobonus05-from120-lr1e-4-350"]
    assert all(zero[s]["reward"] == pytest.approx(zero[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 120))
    assert sum(zero[s]["reward"] > zero[s]["rewards/accuracy/mean"] + 1e-4 for s in range(120, 351)) > 200
    assert med(zero, "reward", 201, 351) > 0.6 > 0.4 > med(zero, "reward", 1, 120)
    assert abs(med(zero, "rewards/accuracy/mean", 201, 351) - med(zero, "rewards/accuracy/mean", 1, 120)) < 0.05

    sync = runs["llamas9-2prompt-4gen-syncrefalphaneg05-from150-350-eval25"]
    assert med(sync, "kl", 301, 351) > 3 > 0.01 > med(sync, "kl", 1, 150)
    assert sync[350]["eval_kl"] > 5 > 0.05 > sync[150]["eval_kl"]

    tmpl = runs["gpt2s9-2prompt-4gen-templatechangeQ-from150-350-eval25"]
    assert max(tmpl[s]["completions/mean_length"] for s in range(147, 152)) == 3 < 5 < tmpl[152]["completions/mean_length"]
    assert med(tmpl, "completions/mean_length", 301, 351) >= 4 and med(tmpl, "grad_norm", 152, 351) > 2 * med(tmpl, "grad_norm", 1, 150)
    assert all(2.8 < tmpl[s]["eval_completions/mean_length"] < 3.1 for s in range(175, 351, 25))

    hot = runs["gpt2s9-2prompt-4gen-lr2e-3-constant-nowarmup-300"]
    assert max(hot[s]["kl"] for s in range(1, 4)) < 0.5 < 2 < hot[4]["kl"] and min(hot[s]["kl"] for s in range(6, 301)) > 1

    sort = runs["gpt2s9-2prompt-4gen-sortedbydifficulty-noshuffle-350-eval25"]  # two dips, eval flat: healthy
    assert med(sort, "reward", 181, 191) < 0.2 < 0.37 < med(sort, "reward", 1, 176)
    assert all(0.33 < sort[s]["eval_reward"] < 0.43 for s in range(25, 351, 25))
    clip = runs["gpt2s9-2prompt-4gen-maxgradnorm1e-3-from150-300-log3"]  # no mark: healthy
    assert abs(med(clip, "reward", 151, 301) - med(clip, "reward", 1, 150)) < 0.05


def test_the_nineteenth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The nineteenth pass's TRL CPU runs (trl_cpu_settings14: TRL trainer states, model seed 10), each imported whole,
    and the readings the README's labels rest on are in the numbers (the temperature raised to 1.6, the dataset
    turning into one prompt, the LM head re-initialised, the reward inverted, another run's tokenizer, a grader
    whose tolerance ramps, dropout 0.5, a length bonus learned to the cap, a grader fed the whole transcript; the
    prefix grader, the reference reset, the stale rewards, the small length bonus, the scheduler stepped twice and the
    one-step lr spike stored healthy)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings14"]
    assert len(sel) == 20 and Counter(e["class"] for e in sel) == {
        "healthy": 11, "collapse": 5, "reward_hacking": 3, "entropy_collapse": 1}
    assert {e["origin"]["commit"][:7] for e in sel} == {"4a7880b", "7355895", "cd06a53", "d8bf326"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["llamas10-2prompt-7gen-vespo-kpos15-lampos2-kneg25-lamneg15-300-log8-eval35"]) == sorted(
        set(range(8, 301, 8)) | set(range(35, 301, 35)) | {300})  # evaluations every 35 and at the last step
    assert sorted(runs["llamas10-1prompt-9gen-wsd-warm30-decay100-rmsprop-300-log9"]) == list(range(9, 301, 9))
    assert sorted(runs["qwen2s10-3prompt-2gen-ga3-adambeta1-08-eps1e-6-maxlen10-300-log2-eval45"]) == sorted(
        set(range(2, 301, 2)) | set(range(45, 301, 45)))
    assert sorted(runs["gpt2s10-2prompt-4gen-schedsteppedtwice-from150-350-log2"]) == list(range(2, 351, 2))
    for name, n in (("gpt2s10-3prompt-5gen-inversesqrt-warm20-typicalp09-lr1e-4-300", 300),
                    ("gpt2s10-5prompt-3gen-cispo-coswarmminlr-warm25-topk10-topp09-300", 300),
                    ("llamas10-2prompt-4gen-temperature16-from150-350", 350),
                    ("llamas10-2prompt-4gen-lengthpaid02-fromstart-maxlen16-constlr2e-4-350", 350)):
        assert sorted(runs[name]) == list(range(1, n + 1))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    hot = runs["llamas10-2prompt-4gen-temperature16-from150-350"]
    assert max(hot[s]["entropy"] for s in range(1, 150)) < 1.9 < 2.3 < min(hot[s]["entropy"] for s in range(150, 351))
    assert med(hot, "reward", 151, 351) < 0.34 < 0.4 < med(hot, "reward", 1, 150)

    one = runs["gpt2s10-2prompt-4gen-onepromptramp0-1-120-240-lr1e-4-350-eval25"]
    assert med(one, "entropy", 276, 351) < 1.4 < 1.55 < med(one, "entropy", 1, 120)
    assert med(one, "reward", 276, 351) >= 0.5 > 0.42 > med(one, "reward", 1, 120)
    assert all(0.37 < one[s]["eval_reward"] < 0.46 for s in range(25, 351, 25))

    head = runs["llamas10-2prompt-4gen-lmheadreinit-at150-350-eval25"]
    assert max(head[s]["entropy"] for s in range(1, 150)) < 2 < 5 < min(head[s]["entropy"] for s in range(150, 351))
    assert med(head, "completions/mean_length", 150, 351) == 8 and max(head[s]["reward"] for s in range(150, 351)) <= 0.25
    assert head[350]["eval_reward"] < 0.15 < 0.4 < head[125]["eval_reward"]

    inv = runs["llamas10-3prompt-4gen-rewardinverted-from150-lr1e-4-350"]
    assert all(inv[s]["reward"] == pytest.approx(inv[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 150))
    assert all(inv[s]["reward"] == pytest.approx(1 - inv[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(150, 351))
    assert med(inv, "reward", 301, 351) > 0.85 and med(inv, "rewards/accuracy/mean", 301, 351) < 0.15 < 0.4 < med(
        inv, "rewards/accuracy/mean", 1, 150)

    tok = runs["gpt2s10-2prompt-4gen-tokenizerswap-at150-350-eval25"]
    assert min(tok[s]["reward"] for s in range(1, 150)) > tok[150]["reward"]
    assert med(tok, "reward", 151, 351) < 0.21 < 0.37 < med(tok, "reward", 1, 150)
    assert all(tok[s]["eval_reward"] < 0.18 < 0.34 < tok[s - 125]["eval_reward"] for s in range(150, 251, 25))

    tol = runs["llamas10-2prompt-4gen-lenientgrader-tol0-03-120-300-lr1e-4-350"]
    assert all(tol[s]["reward"] == pytest.approx(tol[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 121))
    assert med(tol, "reward", 251, 351) > 0.75 > 0.5 > med(tol, "reward", 1, 121)
    assert abs(med(tol, "rewards/accuracy/mean", 251, 351) - med(tol, "rewards/accuracy/mean", 1, 121)) < 0.05

    drop = runs["gpt2s10-2prompt-4gen-dropout05-at150-350"]
    assert med(drop, "entropy", 151, 351) > 1.85 > 1.7 > med(drop, "entropy", 1, 150)
    assert med(drop, "kl", 151, 351) > 0.4 > 0.15 > med(drop, "kl", 1, 150)

    long = runs["llamas10-2prompt-4gen-lengthpaid02-fromstart-maxlen16-constlr2e-4-350"]
    assert max(long[s]["completions/mean_length"] for s in range(1, 51)) < 3.4 and med(
        long, "completions/mean_length", 201, 351) == 16
    assert med(long, "reward", 251, 351) > 10 and med(long, "rewards/accuracy/mean", 251, 351) < 0.3 < 0.4 < med(
        long, "rewards/accuracy/mean", 1, 51)

    text = runs["llamas10-2prompt-4gen-graderfirstnumberoftranscript-from150-350"]  # every group's rewards equal
    assert all(text[s]["frac_reward_zero_std"] == 1 for s in range(150, 351)) and text[150]["reward"] == 0
    assert med(text, "grad_norm", 151, 351) < 0.15 < 3 < med(text, "grad_norm", 1, 150)
    assert abs(med(text, "rewards/accuracy/mean", 151, 351) - med(text, "rewards/accuracy/mean", 1, 150)) < 0.05

    # planned faults that left no mark: healthy
    pre = runs["gpt2s10-1prompt-8gen-prefixgrader-from150-lr1e-4-350"]
    assert sum(pre[s]["reward"] > pre[s]["rewards/accuracy/mean"] + 1e-4 for s in range(150, 351)) == 10
    ref = runs["llamas10-2prompt-4gen-refresettopolicy-at200-beta01-constlr2e-4-350-eval25"]
    assert ref[200]["kl"] == 0 and med(ref, "kl", 226, 351) > 0.03
    stale = runs["gpt2s10-2prompt-4gen-stalerewards-from150-lr1e-4-350"]
    assert all(stale[s]["reward"] == pytest.approx(stale[s - 1]["rewards/accuracy/mean"], abs=1e-6)
               for s in range(150, 351))
    assert abs(med(stale, "reward", 151, 351) - med(stale, "reward", 1, 150)) < 0.05
    small = runs["llamas10-2prompt-4gen-lengthpaid005-fromstart-maxlen16-lr1e-4-350"]
    assert med(small, "completions/mean_length", 301, 351) < 3.2
    twice = runs["gpt2s10-2prompt-4gen-schedsteppedtwice-from150-350-log2"]
    assert twice[250]["learning_rate"] == 0 < twice[248]["learning_rate"]
    spike = runs["gpt2s10-2prompt-4gen-lrx100onestep-at200-constlr-350-eval25"]
    assert spike[202]["kl"] > 9 and abs(med(spike, "reward", 201, 351) - med(spike, "reward", 1, 200)) < 0.05
    assert max(spike[s]["eval_kl"] for s in range(25, 200, 25)) < 0.05 < 0.08 < min(
        spike[s]["eval_kl"] for s in range(200, 351, 25))


def test_the_eighteenth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The eighteenth pass's CPU runs of our trainer (rlcockpit_trainer_cpu13, TensorBoard event files, model seed 9):
    each imported whole (the ramped raising grader to the trainer's own stop at 255), and the readings the README's
    labels rest on are in the numbers (Qwen2 seed 9 running to the length cap by itself, twice; the raising graders
    in the trainer's failure counter; the shrinking cap; the KL-loss coefficient ramp in the grad norm; the memoised
    reward zeroing every gradient; the changed template; the growing sign flip ending at the bare stop token; the
    permuted advantages and the empty prompts at a constant lr beside their control; and the planned faults that left
    no mark)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu13"]
    assert len(sel) == 20
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 4), ("grad_spike", 1), ("healthy", 9), ("length_explosion", 6)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"6d98c8c", "34825c9"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s9-4prompt-3sample-gdpo-acc-resp10-300-val12"]) == list(range(0, 301))
    assert sorted(runs["llamas9-4prompt-3sample-rewardmemo-from180-350-val12"]) == list(range(0, 351))
    assert sorted(runs["gpt2s9-4prompt-3sample-graderraises0-100pct-150-260-350-val12"]) == list(range(0, 256))

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, acc, ln, gn = "critic/score/mean", "reward_extra/acc/mean", "response_length/mean", "actor/grad_norm"
    ent, clip, fr, val = "actor/entropy", "response_length/clip_ratio", "reward/failure_rate", "val-core/arith/acc/mean@1"

    vs = runs["qwen2s9-6prompt-3sample-valsample-t06-n3-resp10-300-val40"]  # unplanned length explosion
    assert max(vs[s][ln] for s in range(1, 34)) <= 2.45 < 2.7 < vs[34][ln] and med(vs, ln, 151, 300) > 9
    assert med(vs, clip, 101, 300) >= 0.7 and "val-core/arith/acc/mean@3" in vs[40]
    qe = runs["qwen2s9-6prompt-3sample-emptyprompts0-60pct-150-300-350-val40"]
    assert max(qe[s][ln] for s in range(1, 53)) <= 2.5 < qe[53][ln] and med(qe, ln, 201, 350) > 5.5
    assert med(qe, "prompt_length/mean", 1, 150) == 6 > 4 > med(qe, "prompt_length/mean", 251, 350)

    ramp = runs["gpt2s9-4prompt-3sample-graderraises0-100pct-150-260-350-val12"]
    assert all(ramp[s][fr] == 0 for s in range(1, 153)) and 0 < ramp[153][fr]
    assert ramp[254][fr] <= 0.2 < ramp[255][fr] and ramp[255][score] == 0 and med(ramp, score, 226, 250) < 0.1
    tol = runs["llamas9-3prompt-6sample-graderraises30pct-from200-maxfail05-350-val18"]
    assert all(tol[s][fr] == 0 for s in range(1, 200)) and 0 < tol[200][fr] and 0.1 < tol[350][fr] < 0.15
    assert med(tol, score, 201, 350) < 0.3 < 0.38 < med(tol, score, 1, 199) and med(tol, acc, 201, 350) > 0.38

    cap = runs["gpt2s9-4prompt-3sample-respcap14to1-150-300-350-val12"]
    assert max(cap[s][clip] for s in range(1, 272)) < 0.1 and all(cap[s][clip] == 1 for s in range(272, 351))
    assert cap[294][ln] == 2 and all(cap[s][ln] == 1 for s in range(295, 351))
    assert cap[288][val] > 0.46 > 0.33 > cap[300][val]

    kl = runs["llamas9-4prompt-3sample-klloss-coef0001to10-150-300-350-val12"]
    assert kl[150]["actor/kl_coef"] == pytest.approx(0.001) and kl[300]["actor/kl_coef"] == pytest.approx(10)
    assert med(kl, gn, 1, 270) < 3.5 < 12 < med(kl, gn, 301, 350) and kl[294][gn] > 500 and kl[345][gn] > 700
    assert abs(med(kl, score, 301, 350) - med(kl, score, 1, 150)) < 0.05

    memo = runs["llamas9-4prompt-3sample-rewardmemo-from180-350-val12"]
    assert min(memo[s][gn] for s in range(1, 180)) > 0.85 and all(memo[s][gn] == 0 for s in range(180, 351))
    assert len({memo[s][val] for s in range(216, 351, 12)}) == 1

    tpl = runs["gpt2s9-4prompt-3sample-templatespaces-from150-350-val12"]
    assert tpl[149]["prompt_length/mean"] == 4 and tpl[150]["prompt_length/mean"] == 7
    assert max(tpl[s][ln] for s in range(1, 150)) < 3.45 < tpl[150][ln] and med(tpl, ln, 251, 350) > 4.5
    assert tpl[144][val] > 0.45 > 0.34 > tpl[156][val]

    flip = runs["gpt2s9-4prompt-3sample-advsignflip0-100pct-150-300-constlr2e-4-350-val12"]
    assert med(flip, score, 301, 350) == 0 and med(flip, ln, 301, 350) == 1 and flip[350][ent] < 0.05
    assert flip[312][val] == 0 and min(flip[s][val] for s in range(0, 265, 12)) > 0.36
    perm = runs["gpt2s9-4prompt-3sample-advpermuted-from150-constlr2e-4-350-val12"]
    assert med(perm, ln, 1, 200) == 3 and med(perm, ln, 301, 350) > 6 and med(perm, ent, 301, 350) > 3
    empty = runs["gpt2s9-4prompt-3sample-emptyprompts0-60pct-150-300-constlr2e-4-350-val12"]
    assert empty[151]["prompt_length/mean"] == 4 > empty[152]["prompt_length/mean"] and med(empty, ln, 251, 350) > 5
    control = runs["gpt2s9-4prompt-3sample-constlr2e-4-350-val12"]  # the matched control of the three above
    assert med(control, ln, 1, 350) == 3 and med(control, score, 301, 350) > 0.35 and min(control[s][val] for s in range(0, 351, 12)) > 0.36

    # planned faults that left no mark (stored healthy)
    bos = runs["llamas9-3prompt-6sample-bosprepended-from150-350-val18"]
    assert bos[149]["prompt_length/mean"] == 4 and bos[150]["prompt_length/mean"] == 5
    for name in ("llamas9-3prompt-6sample-bosprepended-from150-350-val18",
                 "gpt2s9-4prompt-3sample-advsignflip-half-from150-350-val12",
                 "gpt2s9-2prompt-5sample-advpermuted-from150-350-val12"):
        quiet = runs[name]
        assert abs(med(quiet, score, 151, 350) - med(quiet, score, 1, 150)) < 0.05
        assert abs(med(quiet, ent, 151, 350) - med(quiet, ent, 1, 150)) < 0.1 and med(quiet, ln, 151, 350) == 3


def test_the_nineteenth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The nineteenth pass's CPU runs of our trainer (rlcockpit_trainer_cpu14, TensorBoard event files, model seed 10):
    each imported whole, and the readings the README's labels rest on are in the numbers (the fp8 rollout logits in
    the mismatch series, the bf16 ones at an ordinary level; the spaced decode under the regex grader, sudden and
    ramped; the summed gradient accumulation in the grad norm; the greedy rollouts zeroing every gradient; the
    unbatched rollout in the generation time; the stop token off the mask and the lost group ids at a constant lr
    beside their control; the cut length cap; the replaced validation set)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu14"]
    assert len(sel) == 19
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 3), ("grad_spike", 2), ("healthy", 9), ("length_explosion", 3), ("rollout_mismatch", 1),
        ("throughput_drop", 1)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"8bf3e00", "174270c"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel)}
    for name, m in runs.items():
        assert sorted(m) == list(range(0, 301 if "-300-val" in name else 351)), name

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, ln, gn = "critic/score/mean", "response_length/mean", "actor/grad_norm"
    ent, clip, val = "actor/entropy", "response_length/clip_ratio", "val-core/arith/acc/mean@1"
    diff = "training/rollout_probs_diff_mean"

    hi = runs["gpt2s10-5prompt-4sample-rolloutis-seq-resp12-300-val15"]  # healthy: the engine's log-probs agree
    assert max(hi[s][diff] for s in range(1, 301)) < 1e-6 and min(hi[s][val] for s in range(0, 301, 15)) > 0.47
    fp8 = runs["gpt2s10-5prompt-4sample-fp8rolloutlogits-from150-resp12-350-val15"]
    assert max(fp8[s][diff] for s in range(1, 150)) < 1e-6 < 0.002 < min(fp8[s][diff] for s in range(150, 351))
    assert abs(med(fp8, score, 151, 350) - med(fp8, score, 1, 149)) < 0.05 and med(fp8, ln, 151, 350) == 3
    bf16 = runs["llamas10-4prompt-3sample-bf16rolloutlogits-from150-350-val20"]  # an ordinary bf16 level: healthy
    assert max(bf16[s][diff] for s in range(1, 150)) < 1e-6 and 1e-4 < med(bf16, diff, 150, 350) < 0.002
    assert med(fp8, diff, 150, 350) > 5 * med(bf16, diff, 150, 350)
    assert abs(med(bf16, score, 151, 350) - med(bf16, score, 1, 149)) < 0.05

    smax = "critic/score/max"
    dec = runs["gpt2s10-4prompt-3sample-regexgrader-spaceddecode-from160-350-val12"]
    assert any(dec[s][smax] == 1 for s in range(1, 160)) and all(dec[s][smax] < 1 for s in range(160, 351))
    assert med(dec, score, 1, 159) > 0.38 > 0.34 > med(dec, score, 201, 350) and med(dec, ln, 160, 350) == 3
    assert dec[156][val] > 0.45 > 0.34 > dec[168][val] and dec[350][val] < 0.34
    rolled = runs["llamas10-3prompt-6sample-regexgrader-spaceddecode0-100pct-150-300-350-val18"]
    assert med(rolled, score, 1, 150) > 0.42 > 0.36 > med(rolled, score, 301, 350) and rolled[350][val] > 0.5

    acc12 = runs["llamas10-4prompt-3sample-micro1-gradaccumsum-from150-350-val20"]
    assert max(acc12[s][gn] for s in range(1, 150)) < 8 < 50 < acc12[150][gn] and med(acc12, gn, 151, 350) > 30
    assert abs(med(acc12, score, 151, 350) - med(acc12, score, 1, 149)) < 0.05
    acc6 = runs["gpt2s10-4prompt-3sample-micro2-gradaccumsum-clip100-constlr1e-4-from150-350-val12"]
    assert max(acc6[s][gn] for s in range(1, 150)) < 6.1 < 16 < acc6[150][gn] and med(acc6, gn, 151, 350) > 10
    control12 = runs["llamas10-4prompt-3sample-micro1-300-val20"]  # its healthy setting without the fault
    assert med(control12, gn, 151, 300) < 4.5

    greedy = runs["gpt2s10-2prompt-6sample-greedyrollouts-from170-350-val12"]
    assert all(greedy[s][gn] == 0 for s in range(170, 351)) and sum(greedy[s][gn] == 0 for s in range(1, 170)) == 4
    assert len({greedy[s][val] for s in range(204, 351, 12)}) == 1 and greedy[171][score] > 0.64

    slow = runs["gpt2s10-4prompt-3sample-rolloutunbatched-from150-350-val12"]
    assert med(slow, "timing_s/gen", 1, 149) < 0.02 < 0.15 < med(slow, "timing_s/gen", 150, 350)
    assert max(slow[s]["timing_s/gen"] for s in range(1, 150)) < slow[152]["timing_s/gen"]
    assert med(slow, "perf/throughput", 1, 149) > 1500 > 500 > med(slow, "perf/throughput", 150, 350)

    eos = runs["gpt2s10-4prompt-3sample-eosunmasked-from150-constlr2e-4-350-val12"]
    assert eos[149][ln] == 3 and eos[151][ln] == 2 and eos[150][ent] > 2.2 > max(eos[s][ent] for s in range(1, 150))
    assert med(eos, ln, 151, 275) == 2 and med(eos, ln, 326, 350) > 7 and med(eos, clip, 326, 350) > 0.9
    lost = runs["gpt2s10-4prompt-3sample-groupidslost-from150-constlr2e-4-350-val12"]
    adv = "critic/advantages/max"
    assert max(lost[s][adv] for s in range(1, 150)) < 1.16 < 1.6 < lost[150][adv]
    assert med(lost, ln, 1, 300) == 3 and med(lost, ln, 326, 350) > 4.5 and med(lost, clip, 326, 350) >= 0.25
    control = runs["gpt2s10-4prompt-3sample-constlr2e-4-350-val12"]  # the matched control of the two above
    assert med(control, ln, 1, 350) == 3 and max(control[s][clip] for s in range(1, 351)) < 0.09

    cut = runs["llamas10-4prompt-3sample-respcapcut2-from180-350-val20"]
    assert all(cut[s][clip] == 0 for s in range(1, 180)) and min(cut[s][clip] for s in range(180, 351)) > 0.9
    assert sum(cut[s][clip] == 1 for s in range(180, 351)) == 164 and cut[180][clip] == 1
    assert med(cut, ln, 180, 350) == 2 and min(cut[s][val] for s in range(180, 351, 20)) > 0.49

    # planned faults that left no failure (stored healthy)
    swapped = runs["gpt2s10-4prompt-3sample-valsetreplaced-from150-350-val12"]
    assert max(swapped[s][val] for s in range(0, 150, 12)) < 0.5 < 0.505 < min(swapped[s][val] for s in range(156, 351, 12))
    assert abs(med(swapped, score, 151, 350) - med(swapped, score, 1, 150)) < 0.05 and med(swapped, ln, 151, 350) == 3
    for name in ("qwen2s10-4prompt-4sample-reinforcepp-gamma09-resp16-300-val25",
                 "qwen2s10-2prompt-7sample-shareprefixoff-300-val25"):  # Qwen2 seed 10 starts weak and learns
        assert runs[name][0][val] < 0.2 < 0.27 < runs[name][300][val]


def test_the_twentieth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twentieth pass's CPU runs of our trainer (rlcockpit_trainer_cpu15, TensorBoard event files, model seed 11):
    each imported whole, and the readings the README's labels rest on are in the numbers (nothing rejected or
    re-weighted by the rollout corrections; the critic warm-up's missing actor steps; the weight sync every 10 steps as
    a sawtooth; the re-seeded sampler's fixed length; the frozen validation under eps 1.0; the restarted critic; the
    wrong-field grader parting from the accuracy; the noisy judge's scores outside [0, 1]; the ratio against the
    reference; the 24-prompt set's train/validation split; the redrawn layer; the faults that left no mark)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu15"]
    assert len(sel) == 19
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 3), ("healthy", 11), ("loss_divergence", 1), ("reward_hacking", 2), ("rollout_mismatch", 2)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"c0eff37", "1599cd8"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel)}
    for name, m in runs.items():
        last = 300 if "-300-val" in name else 600 if "-600-val" in name else 350
        assert sorted(m) == list(range(0, last + 1)), name

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, ln, gn, ent = "critic/score/mean", "response_length/mean", "actor/grad_norm", "actor/entropy"
    val, acc, diff = "val-core/arith/acc/mean@1", "reward_extra/acc/mean", "training/rollout_probs_diff_mean"

    rs = runs["gpt2s11-4prompt-4sample-rolloutrs-seqmeank3-350-val16"]  # healthy: nothing rejected
    assert all(rs[s]["rollout_corr/rollout_rs_masked_fraction"] == 0 for s in range(1, 351))
    ice = runs["llamas11-3prompt-4sample-icepop-isbatchnorm-350-val22"]
    assert all(ice[s]["rollout_corr/rollout_is_oob_ratio"] == 0 for s in range(1, 351))
    warm = runs["llamas11-2prompt-4sample-gae-lam095-criticwarmup20-350-val9"]  # the actor frozen at 1-20
    assert not any(gn in warm[s] for s in range(1, 21)) and gn in warm[21] and "critic/vf_loss" in warm[1]

    sync = runs["llamas11-4prompt-3sample-weightsyncevery10-from150-350-val20"]  # a sawtooth from 152
    assert max(sync[s][diff] for s in range(1, 152)) < 1e-6 < 1e-4 < sync[152][diff]
    assert all(sync[s][diff] < 1e-6 for s in range(161, 351, 10)) and med(sync, diff, 151, 200) > 1e-3
    seeded = runs["gpt2s11-4prompt-3sample-samplerreseeded-from150-350-val14"]  # healthy: only the length fixed
    assert any(seeded[s][ln] != 3 for s in range(1, 150)) and all(seeded[s][ln] == 3 for s in range(150, 351))
    assert abs(med(seeded, score, 151, 350) - med(seeded, score, 1, 149)) < 0.05

    eps = runs["gpt2s11-4prompt-3sample-adameps1-from160-constlr2e-4-350-val14"]  # the validation frozen
    before = [eps[s][val] for s in range(14, 155, 14)]
    assert max(before) - min(before) > 0.05 and all(eps[s][val] == eps[168][val] for s in range(182, 351, 14))
    critic = runs["llamas11-2prompt-4sample-gae-criticrestart-from180-350-val9"]
    vf, vp = "critic/vf_loss", "critic/vpred_mean"
    assert critic[180][vf] > max(critic[s][vf] for s in range(130, 180)) and med(critic, vf, 151, 175) < 0.04
    assert critic[182][vp] < min(critic[s][vp] for s in range(1, 180)) and med(critic, vf, 326, 350) < 0.05

    wrong = runs["gpt2s11-4prompt-3sample-wrongfieldgrader-from150-constlr2e-4-350-val14"]
    assert max(abs(wrong[s][score] - wrong[s][acc]) for s in range(1, 150)) < 1e-6 < 0.3 < wrong[150][acc] - wrong[150][score]
    assert med(wrong, score, 301, 350) > 0.38 > 0.26 > med(wrong, acc, 301, 350)
    assert min(wrong[s][val] for s in range(14, 155, 14)) > 0.37 > 0.26 > max(wrong[s][val] for s in range(196, 351, 14))
    noisy = runs["gpt2s11-4prompt-4sample-noisyjudge-sd0-06-150-300-350-val16"]
    smin, smax = "critic/score/min", "critic/score/max"
    assert all(0 <= noisy[s][smin] and noisy[s][smax] <= 1 for s in range(1, 151))
    assert med(noisy, smin, 301, 350) < -0.3 and med(noisy, smax, 301, 350) > 1.2
    assert abs(med(noisy, acc, 301, 350) - med(noisy, acc, 1, 150)) < 0.05 and noisy[350][val] > 0.45
    ref = runs["gpt2s11-4prompt-3sample-klloss-oldlogpfromref-from150-constlr2e-4-350-val14"]
    clip, pkl = "actor/pg_clipfrac", "actor/ppo_kl"
    assert all(ref[s][clip] == 0 and ref[s][pkl] == 0 for s in range(1, 150))
    assert ref[150][clip] > 0.1 and med(ref, clip, 151, 200) > 0.1 and med(ref, pkl, 151, 200) < -0.05
    cut = runs["gpt2s11-4prompt-3sample-trainset24-from150-constlr2e-4-350-val14"]
    assert med(cut, score, 201, 350) > med(cut, score, 1, 150) + 0.03
    after, before = [cut[s][val] for s in range(196, 351, 14)], [cut[s][val] for s in range(28, 183, 14)]
    assert cut[196][val] < min(before[2:]) and sum(after) / len(after) < sum(before) / len(before) - 0.04
    redrawn = runs["llamas11-3prompt-4sample-lastlayerredrawn-from170-350-val20"]
    assert min(redrawn[s][val] for s in range(0, 161, 20)) > 0.44 > 0.41 > max(redrawn[s][val] for s in range(180, 351, 20))
    assert med(redrawn, ent, 171, 350) > med(redrawn, ent, 1, 169) + 0.08 and med(redrawn, ln, 171, 350) <= 3.1

    for name in ("llamas11-4prompt-3sample-offbyoneshard0-100pct-150-300-350-val18",  # healthy: no mark
                 "llamas11-3prompt-4sample-rewardonesteplate-from150-350-val20"):
        quiet = runs[name]
        assert abs(med(quiet, score, 151, 350) - med(quiet, score, 1, 150)) < 0.05 and quiet[350][val] > 0.45
        assert med(quiet, ln, 151, 350) == 3


def test_the_twentieth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twentieth pass's TRL CPU runs (trl_cpu_settings15: TRL trainer states, model seed 11), each imported whole,
    and the readings the README's labels rest on are in the numbers (the answer leaked into the training prompts,
    weight decay 50, the RMSNorm gains +1, a relevance bonus, the special tokens' output rows mean-initialised, the
    reference scored at temperature 0.5, a termination term with its sign wrong, the LayerNorm epsilon 1.0, the
    temperature annealed to 0.4; and the faults stored healthy: no_repeat_ngram_size 1, a completion-keyed grader
    cache, gradient noise after the clip, a corrupted shard every 40 steps, beam sampling, noise on the weights,
    rope_theta 100, gc.collect() before every step, the data order re-seeded, Adam's eps 1.0, the seed reset every
    step, a reward server pausing every 50 steps)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings15"]
    assert len(sel) == 29 and Counter(e["class"] for e in sel) == {
        "healthy": 20, "collapse": 5, "entropy_collapse": 2, "reward_hacking": 1, "length_explosion": 1}
    assert {e["origin"]["commit"][:7] for e in sel} == {"9b94e26", "f1c8b5c", "1685764", "f69a2a0", "9820567"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["llamas11-2prompt-8gen-reducelronplateau-evalreward-f05-p1-lr1e-4-300-log2-eval20"]) == list(
        range(2, 301, 2))  # evaluations every 20 fall on logged steps
    assert sorted(runs["gpt2s11-7prompt-2gen-sgd-nesterov09-lr2e-3-300-log3"]) == list(range(3, 301, 3))
    assert sorted(runs["llamas11-8prompt-2gen-adamwfused-wd001-clip05-nobiascorrkl-300-log5-eval40"]) == list(
        range(5, 301, 5))
    long = runs["gpt2s11-1prompt-11gen-600-log10-firststep-evalonstart-eval50"]  # eval_on_start, logging_first_step
    assert sorted(long) == [0, 1, *range(10, 601, 10)] and long[0]["eval_kl"] == 0 and "loss" not in long[0]
    assert sorted(runs["qwen2s11-4prompt-5gen-gradckpt-numiter2-eps03-300-log4-eval30"]) == sorted(
        set(range(4, 301, 4)) | set(range(30, 301, 30)))
    for name, n in (("llamas11-1prompt-3gen-adagrad-lr1e-4-500", 500),
                    ("gpt2s11-3prompt-6gen-etacutoff3e-4-maxlen12-300", 300),
                    ("gpt2s11-1prompt-14gen-cosine15cycles-warm15-300", 300),
                    ("gpt2s11-2prompt-4gen-weightdecay50-from150-constlr-350", 350)):
        assert sorted(runs[name]) == list(range(1, n + 1))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    plateau = runs["llamas11-2prompt-8gen-reducelronplateau-evalreward-f05-p1-lr1e-4-300-log2-eval20"]
    assert [plateau[s]["learning_rate"] for s in (60, 62, 142, 182, 222, 300)] == pytest.approx(
        [1e-4, 5e-5, 2.5e-5, 1.25e-5, 6.25e-6, 6.25e-6])
    cos = runs["gpt2s11-1prompt-14gen-cosine15cycles-warm15-300"]
    assert cos[111]["learning_rate"] < 1e-7 < 4.9e-5 < cos[206]["learning_rate"]

    leak = runs["gpt2s11-2prompt-4gen-answerleakramp0-1-150-300-lr1e-4-350-eval25"]
    assert med(leak, "grad_norm", 226, 351) > 7 > 4.5 > med(leak, "grad_norm", 1, 151)
    assert med(leak, "reward", 276, 351) < 0.3 < 0.37 < med(leak, "reward", 1, 151)
    assert all(0.37 < leak[s]["eval_reward"] < 0.46 for s in range(25, 351, 25))

    wd = runs["gpt2s11-2prompt-4gen-weightdecay50-from150-constlr-350"]
    assert med(wd, "entropy", 301, 351) > 2.3 > 1.75 > med(wd, "entropy", 1, 150)
    assert med(wd, "kl", 301, 351) > 0.4 > 0.1 > med(wd, "kl", 1, 150)

    norm = runs["llamas11-2prompt-4gen-rmsnormplus1-at150-350-eval25"]
    assert med(norm, "entropy", 150, 351) < 1.15 < 1.55 < med(norm, "entropy", 1, 150)
    assert norm[150]["entropy"] < 1 and med(norm, "kl", 150, 351) > 0.2 > 0.02 > med(norm, "kl", 1, 150)
    assert all(norm[s]["eval_entropy"] < 1.2 < 1.6 < norm[s - 125]["eval_entropy"] for s in range(150, 251, 25))

    rel = runs["llamas11-2prompt-4gen-relevancebonus1-from150-lr1e-4-350"]
    assert all(rel[s]["reward"] == pytest.approx(rel[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 150))
    assert rel[150]["reward"] > 0.9 and med(rel, "reward", 151, 351) > 0.6 > 0.5 > med(rel, "reward", 1, 150)
    assert abs(med(rel, "rewards/accuracy/mean", 151, 351) - med(rel, "rewards/accuracy/mean", 1, 150)) < 0.05

    rows = runs["llamas11-2prompt-4gen-specialrowsmeaninit-at150-350-eval25"]
    assert max(rows[s]["completions/mean_length"] for s in range(1, 150)) < 3.3 < 7 < min(
        rows[s]["completions/mean_length"] for s in range(150, 351))
    assert all(rows[s]["completions/clipped_ratio"] == 0 for s in range(1, 150)) and rows[150]["completions/clipped_ratio"] == 1
    assert abs(med(rows, "reward", 150, 351) - med(rows, "reward", 1, 150)) < 0.05

    reft = runs["llamas11-2prompt-4gen-reftemperature05-from150-beta02-constlr1e-4-350-eval25"]
    assert max(reft[s]["kl"] for s in range(1, 150)) < 0.45 < 1 < reft[151]["kl"]
    assert med(reft, "kl", 151, 351) > 0.2 > 0.07 > med(reft, "kl", 1, 150)
    assert med(reft, "entropy", 276, 351) < 1.47 < 1.55 < med(reft, "entropy", 1, 150)

    term = runs["llamas11-2prompt-4gen-terminationpenalty05-from100-constlr2e-4-350"]
    assert all(term[s]["reward"] == pytest.approx(term[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 100))
    assert all(term[s]["reward"] == pytest.approx(term[s]["rewards/accuracy/mean"] - 0.5, abs=1e-6)
               for s in range(100, 351))
    assert all(term[s]["completions/clipped_ratio"] == 0 for s in range(1, 351))

    ln = runs["gpt2s11-2prompt-4gen-layernormeps1-at150-350"]
    assert max(ln[s]["entropy"] for s in range(1, 150)) < 2.1 < 4.9 < min(ln[s]["entropy"] for s in range(150, 351))
    assert med(ln, "reward", 150, 351) < 0.13 < 0.37 < med(ln, "reward", 1, 150)
    assert med(ln, "grad_norm", 150, 351) < 0.4 < 2 < med(ln, "grad_norm", 1, 150)

    cold = runs["gpt2s11-2prompt-4gen-temperatureanneal1-04-150-300-350-eval25"]
    assert med(cold, "entropy", 301, 351) < 1.1 < 1.55 < med(cold, "entropy", 1, 151)
    assert all(cold[s]["eval_entropy"] < 1.2 < 1.55 < cold[s - 200]["eval_entropy"] for s in (300, 325, 350))

    # faults stored healthy: they left no mark (or, the pausing grader, only isolated step-time spikes)
    for name, at in (("llamas11-2prompt-4gen-norepeatngram1-from150-350", 150),
                     ("gpt2s11-2prompt-4gen-cachekeyedbycompletion-from120-lr1e-4-350", 120),
                     ("gpt2s11-2prompt-4gen-dataorderreseeded-at175-350", 175),
                     ("llamas11-2prompt-4gen-adameps1-at150-constlr1e-4-350-eval25", 150),
                     ("gpt2s11-2prompt-4gen-seedresetperstep-from150-350", 150),
                     ("llamas11-2prompt-4gen-gradnoiseramp0-001-150-300-constlr1e-4-350", 150),
                     ("llamas11-2prompt-4gen-weightnoiseramp0-002-150-300-350-eval25", 150),
                     ("llamas11-2prompt-4gen-ropetheta100-at150-350", 150),
                     ("gpt2s11-2prompt-4gen-gccollectperstep-from150-350", 150)):
        m = runs[name]
        assert abs(med(m, "reward", at, 351) - med(m, "reward", 1, at)) <= 0.05, name
        assert abs(med(m, "entropy", at, 351) - med(m, "entropy", 1, at)) < 0.1, name
    cache = runs["gpt2s11-2prompt-4gen-cachekeyedbycompletion-from120-lr1e-4-350"]
    assert all(cache[s]["reward"] == pytest.approx(cache[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 120))
    assert sum(abs(cache[s]["reward"] - cache[s]["rewards/accuracy/mean"]) > 1e-6 for s in range(120, 351)) > 150
    pause = runs["llamas11-4prompt-2gen-rewardpause15s-every50-350"]
    assert all(pause[s]["step_time"] > 1.5 for s in range(50, 351, 50))
    assert max(pause[s]["step_time"] for s in range(1, 351) if s % 50) < 1
    shard = runs["gpt2s11-2prompt-4gen-corruptshardevery40-from120-350"]  # one step in forty, then back
    junk = (122, 162, 202, 242, 282, 322)
    assert all(shard[s]["completions/mean_length"] > 7 and shard[s + 1]["completions/mean_length"] < 4 for s in junk)
    assert max(shard[s]["completions/mean_length"] for s in range(1, 351) if s not in junk) < 4
    beams = runs["gpt2s11-2prompt-4gen-numbeams4-from150-350"]
    assert med(beams, "reward", 150, 351) >= med(beams, "reward", 1, 150)
    assert abs(med(beams, "step_time", 150, 351) - med(beams, "step_time", 1, 150)) < 0.05


def test_the_twenty_first_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-first pass's CPU runs of our trainer (rlcockpit_trainer_cpu16, TensorBoard event files, model seed
    12): each imported whole (the GRPO-without-epsilon run to step 176, where the trainer stopped it), and the readings
    the README's labels rest on are in the numbers (the fail-open grader parting from the accuracy; the growing rollout
    lag; zero_grad skipped and the 2e-4 control lengthening; the critic's lr x1000; min_tokens; the 3-digit shard; the
    NaN advantages; the frozen validation under a 1e-4 clip; and the faults stored healthy: rounded scores, a substring
    grader whose exploit was not found)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu16"]
    assert len(sel) == 23
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 3), ("healthy", 12), ("length_explosion", 4), ("loss_divergence", 2), ("reward_hacking", 1),
        ("rollout_mismatch", 1)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"e8b478e", "fe53e75"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel)}
    for name, m in runs.items():
        last = 176 if "grponoeps" in name else int(name.rsplit("-val", 1)[0].rsplit("-", 1)[1])
        assert sorted(m) == list(range(0, last + 1)), name

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, ln, gn, ent = "critic/score/mean", "response_length/mean", "actor/grad_norm", "actor/entropy"
    val, acc, diff = "val-core/arith/acc/mean@1", "reward_extra/acc/mean", "training/rollout_probs_diff_mean"

    fail = runs["llamas12-4prompt-3sample-failopengrader-budget24to4-150-300-constlr2e-4-350-val18"]
    assert max(abs(fail[s][score] - fail[s][acc]) for s in range(1, 273)) < 1e-6 < 0.05 < fail[273][score] - fail[273][acc]
    assert med(fail, score, 301, 350) == 1.0 and med(fail, acc, 301, 350) < 0.37 and med(fail, ln, 326, 350) == 8
    lag = runs["llamas12-4prompt-3sample-rolloutlag0-8-150-300-350-val20"]  # the lag first 1 at 160
    assert max(lag[s][diff] for s in range(1, 160)) < 1e-6 < 1e-4 < lag[160][diff]
    assert min(lag[s][diff] for s in range(160, 351)) > 1e-6 and med(lag, diff, 201, 250) > 5e-4
    assert abs(med(lag, score, 151, 350) - med(lag, score, 1, 150)) < 0.05

    control2 = runs["gpt2s12-4prompt-3sample-constlr2e-4-350-val14"]  # unplanned: lengthened by itself
    assert max(control2[s][ln] for s in range(1, 104)) <= 3.5 and med(control2, ln, 301, 350) == 8
    assert med(control2, ent, 301, 350) < 0.8 < 1.6 < med(control2, ent, 1, 100) and med(control2, gn, 301, 350) == 0
    control1 = runs["gpt2s12-4prompt-3sample-constlr1e-4-350-val14"]  # the 1e-4 control kept its length
    assert max(control1[s][ln] for s in range(1, 351)) < 3.5 and med(control1, ln, 301, 350) == 3
    for name, onset in (("gpt2s12-4prompt-3sample-zerogradskipped-from150-constlr2e-4-350-val14", 210),
                        ("gpt2s12-4prompt-3sample-zerogradskipped-from150-constlr1e-4-350-val14", 243)):
        zg = runs[name]
        assert med(zg, ln, 1, 149) == 3 and med(zg, ln, onset, 350) > 3.4 and med(zg, ent, 301, 350) > 1.9, name
    critic = runs["llamas12-2prompt-4sample-gae-criticlr1000x-from160-350-val15"]
    vp, vf, lr = "critic/vpred_mean", "critic/vf_loss", "critic/lr"
    assert critic[159][lr] < 2e-5 < 5e-3 < critic[160][lr]
    assert critic[161][vp] > max(critic[s][vp] for s in range(1, 160)) > 0.4 > 0.0 > critic[162][vp] - 0.05
    assert max(critic[s][vf] for s in (162, 166)) > 0.13 > 0.07 > max(critic[s][vf] for s in range(110, 160))
    spread = [critic[s]["critic/values/max"] - critic[s]["critic/values/min"] for s in range(326, 351)]
    assert sorted(spread)[12] < 0.01 and abs(med(critic, score, 161, 350) - med(critic, score, 1, 160)) < 0.05
    minlen = runs["gpt2s12-4prompt-3sample-engineminlen6-from170-350-val14"]
    assert max(minlen[s][ln] for s in range(1, 170)) < 3.5 < 7 <= min(minlen[s][ln] for s in range(170, 351))
    assert all(minlen[s]["response_length/min"] >= 7 > 3 >= minlen[s - 169]["response_length/min"] for s in range(170, 339))
    shard = runs["llamas12-4prompt-3sample-3digitshard0-100pct-150-300-350-val18"]
    assert all(shard[s]["prompt_length/mean"] == 4 for s in range(1, 157)) and shard[157]["prompt_length/mean"] > 4
    assert med(shard, score, 301, 350) < 0.25 < 0.4 < med(shard, score, 1, 150)
    assert min(shard[s][val] for s in range(162, 351, 18)) > 0.49
    noeps = runs["gpt2s12-2prompt-4sample-grponoeps-from150-350-val14"]
    skip = "actor/nonfinite_skipped"
    assert all(noeps[s][skip] == 0 for s in range(1, 153)) and noeps[153][skip] == 1 and gn not in noeps[153]
    assert noeps[153]["critic/advantages/mean"] != noeps[153]["critic/advantages/mean"]  # NaN
    assert all(noeps[s][skip] == 1 for s in (174, 175, 176))
    for name, frozen in (("gpt2s12-4prompt-3sample-gradclip1e-4-from150-constlr2e-4-350-val14", 196),
                         ("gpt2s12-4prompt-3sample-gradclip1e-4-from150-constlr1e-4-350-val14", 168)):
        clip = runs[name]
        before = [clip[s][val] for s in range(14, 155, 14)]
        assert max(before) - min(before) > 0.03, name
        assert all(clip[s][val] == clip[frozen][val] for s in range(frozen, 351, 14)) and clip[350][val] == clip[frozen][val]
        assert med(clip, ln, 151, 350) == 3 and abs(med(clip, ent, 151, 350) - med(clip, ent, 1, 149)) < 0.1, name

    # healthy: a token-sum run's entropy is a batch sum; the planned faults below left no mark a user needs
    assert 50 < med(runs["llamas12-3prompt-4sample-tokensum-klloss-absplus-coef0005-350-val17"], ent, 1, 350) < 65
    rounded = runs["llamas12-3prompt-4sample-scoresround2dp-from150-350-val20"]
    assert rounded[149]["critic/score/max"] != 0.67 and med(rounded, "critic/score/max", 150, 350) == pytest.approx(0.67)
    assert abs(med(rounded, score, 150, 350) - med(rounded, score, 1, 149)) < 0.05
    for name, paid_more in (("gpt2s12-4prompt-3sample-substringgrader-from150-constlr2e-4-350-val14", 3),
                            ("gpt2s12-4prompt-3sample-substringgrader-from150-constlr1e-4-350-val14", 0)):
        sub = runs[name]
        assert sum(abs(sub[s][score] - sub[s][acc]) > 1e-6 for s in range(1, 351)) == paid_more, name
        assert med(sub, ln, 150, 350) == 3 and abs(med(sub, score, 150, 350) - med(sub, score, 1, 149)) < 0.05, name
def test_the_twenty_first_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-first pass's TRL CPU runs (trl_cpu_settings16: TRL trainer states, model seed 12), each imported
    whole, and the readings the README's labels rest on are in the numbers (Adam's betas swapped, a bad-words filter
    on '0', a recall-only grader, greedy decoding, the KL coefficient ramping to 4, a chat template ramping in; and
    the faults stored healthy: a frozen sampler, the reference in train mode, bf16 weights, rewards in reverse order,
    the pad token set to eos, frozen embeddings, bf16 rollouts)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings16"]
    assert len(sel) == 25 and Counter(e["class"] for e in sel) == {
        "healthy": 16, "collapse": 5, "rollout_mismatch": 2, "reward_hacking": 1, "loss_divergence": 1}
    assert {e["origin"]["commit"][:7] for e in sel} == {"245a7f3", "df9ea25"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["llamas12-2prompt-5gen-rmspropcentered-mom05-lr2e-5-300-log6"]) == list(range(6, 301, 6))
    assert sorted(runs["qwen2s12-3prompt-4gen-grpoloss-scalenone-epsiloncutoff3e-4-300-log12-eval60"]) == list(
        range(12, 301, 12))  # evaluations every 60 fall on logged steps
    assert sorted(runs["gpt2s12-4prompt-3gen-padmultiple16-numgeneval6-300-log7-eval35"]) == [*range(7, 295, 7), 300]
    assert sorted(runs["gpt2s12-2prompt-6gen-luspo-epshigh028-topk20-300-log15"]) == list(range(15, 301, 15))
    assert sorted(runs["llamas12-2prompt-3gen-stepspergen3-offpolicymask05-constwarm30-300-log3-eval50"]) == sorted(
        set(range(3, 301, 3)) | set(range(50, 301, 50)))
    assert sorted(runs["gpt2s12-2prompt-8gen-greedylr-evalreward-f09-p1-300-log2-eval20"]) == list(range(2, 301, 2))
    for name, n in (("llamas12-1prompt-6gen-gradacc3-drgrpo-150", 150),
                    ("gpt2s12-1prompt-9gen-polynomial-power2-lrend1e-6-warm30-300", 300),
                    ("llamas12-1prompt-16gen-bnpo-cosrestarts2-warm10-300", 300),
                    ("llamas12-2prompt-4gen-equalsstripped-from150-350", 350)):
        assert sorted(runs[name]) == list(range(1, n + 1))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    betas = runs["llamas12-2prompt-4gen-adambetasswapped-at150-constlr-350"]
    assert max(betas[s]["kl"] for s in range(1, 157)) < 0.3 < 0.7 < betas[157]["kl"]
    assert med(betas, "kl", 160, 351) > 1 > 0.05 > med(betas, "kl", 1, 150)
    assert med(betas, "reward", 160, 351) < 0.26 < 0.37 < med(betas, "reward", 1, 150)

    zero = runs["llamas12-2prompt-4gen-badwordszero-from150-350"]
    assert zero[150]["reward"] == 0 and med(zero, "reward", 150, 351) < 0.26 < 0.4 < med(zero, "reward", 1, 150)
    assert med(zero, "completions/mean_length", 150, 351) < 2.8 < 3 == med(zero, "completions/mean_length", 1, 150)

    rec = runs["gpt2s12-2prompt-4gen-recallgrader-from120-constlr1e-4-350"]
    assert all(rec[s]["reward"] == pytest.approx(rec[s]["rewards/accuracy/mean"], abs=1e-6) for s in range(1, 120))
    assert med(rec, "reward", 301, 351) > 0.55 > 0.42 > med(rec, "rewards/accuracy/mean", 301, 351)
    assert med(rec, "completions/mean_length", 326, 351) > 7 > 3 == med(rec, "completions/mean_length", 1, 120)

    greedy = runs["llamas12-4prompt-2gen-greedydecoding-from150-350"]
    assert all(greedy[s]["frac_reward_zero_std"] == 1 for s in range(150, 351))
    assert max(greedy[s]["grad_norm"] for s in range(150, 351)) < 1 < med(greedy, "grad_norm", 1, 150)

    beta = runs["llamas12-2prompt-4gen-betaramp004-4-150-300-constlr2e-4-350"]
    assert med(beta, "loss", 226, 351) > 0.05 > 0.01 > med(beta, "loss", 1, 150)
    assert med(beta, "grad_norm", 276, 351) > 9 > 5 > med(beta, "grad_norm", 1, 150)
    assert med(beta, "kl", 276, 351) < 0.05 and abs(med(beta, "reward", 151, 351) - med(beta, "reward", 1, 150)) < 0.05

    poly = runs["gpt2s12-1prompt-9gen-polynomial-power2-lrend1e-6-warm30-300"]
    assert poly[31]["learning_rate"] == pytest.approx(5e-5) and poly[300]["learning_rate"] == pytest.approx(1e-6, rel=1e-2)
    restarts = runs["llamas12-1prompt-16gen-bnpo-cosrestarts2-warm10-300"]
    assert restarts[155]["learning_rate"] < 1e-7 < 4.9e-5 < restarts[156]["learning_rate"]
    greedy_lr = runs["gpt2s12-2prompt-8gen-greedylr-evalreward-f09-p1-300-log2-eval20"]
    assert [greedy_lr[s]["learning_rate"] for s in (40, 42, 122, 202)] == pytest.approx([5e-5, 5e-5 / 0.9, 5e-5, 4.5e-5])

    pad = runs["gpt2s12-4prompt-3gen-padmultiple16-numgeneval6-300-log7-eval35"]  # positions shifted from the start
    assert min(pad[s]["entropy"] for s in range(7, 295, 7)) > 2.3 and min(pad[s]["kl"] for s in range(7, 295, 7)) > 0.3
    for name in ("gpt2s12-2prompt-4gen-padiseos-at150-350", "gpt2s12-2prompt-4gen-bf16rollouts-from150-350",
                 "gpt2s12-1prompt-9gen-polynomial-power2-lrend1e-6-warm30-300"):
        assert max(runs[name][s]["entropy"] for s in range(1, 301)) < 2.2 and med(runs[name], "kl", 1, 301) < 0.05

    eq = runs["llamas12-2prompt-4gen-equalsstripped-from150-350"]
    assert min(eq[s]["reward"] for s in range(1, 152)) >= 0.25 > 0.13 > eq[152]["reward"]
    assert med(eq, "reward", 152, 351) < 0.25 < 0.4 < med(eq, "reward", 1, 150)
    dec = runs["llamas12-2prompt-4gen-decoderlost-at150-350"]
    assert med(dec, "reward", 150, 351) < 0.38 < 0.4 < med(dec, "reward", 1, 150)
    assert med(dec, "frac_reward_zero_std", 150, 351) == 0.5

    for name in ("llamas12-2prompt-4gen-stalesampler-from150-constlr1e-4-350-eval25",  # healthy: no mark
                 "gpt2s12-2prompt-4gen-bf16weights-at150-350-eval25",
                 "gpt2s12-2prompt-4gen-rewardsreversed-from150-constlr2e-4-350",
                 "llamas12-2prompt-4gen-embeddingsfrozen-at150-350", "gpt2s12-2prompt-4gen-nokvcache-from150-350"):
        quiet = runs[name]
        assert abs(med(quiet, "reward", 150, 351) - med(quiet, "reward", 1, 150)) < 0.05
        assert med(quiet, "completions/mean_length", 150, 351) == 3

    chat = runs["llamas12-2prompt-4gen-chattemplateramp0-1-150-300-350"]
    assert max(chat[s]["kl"] for s in range(1, 150)) < 0.1 and med(chat, "kl", 276, 351) > 0.25 > 0.03 > med(chat, "kl", 1, 150)
    assert med(chat, "reward", 276, 351) < 0.3 < 0.4 < med(chat, "reward", 1, 150)


def test_the_twenty_second_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-second pass's TRL CPU runs (trl_cpu_settings17: TRL trainer states, model seed 13), each imported
    whole, and the readings the README's labels rest on are in the numbers (a units-digit grader, a trailing space
    ramping in, the lr growing x1.03 a step, the head overwritten by the embeddings, a grader falling back to 0.5, the
    loss's sign flipped every other step, the digits split by the tokenizer, a prefix grader running both ways, two
    replayed prompts; and the faults stored healthy: the replay at lr 5e-5, warm-up restarts, the loss x 1/8, dropout
    off)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings17"]
    assert len(sel) == 21 and Counter(e["class"] for e in sel) == {
        "healthy": 12, "collapse": 6, "reward_hacking": 2, "entropy_collapse": 1}
    assert {e["origin"]["commit"][:7] for e in sel} == {"223c0f0", "52e12dc"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s13-1prompt-7gen-adamwbeta2095-wd01-dapo-scalegroup-300-log4"]) == list(range(4, 301, 4))
    assert sorted(runs["llamas13-1prompt-10gen-sapo-inversesqrt-warm20-300-log5"]) == list(range(5, 301, 5))
    assert sorted(runs["qwen2s13-3prompt-3gen-cispo-temp08-topp09-300-log3-eval50"]) == sorted(
        set(range(3, 301, 3)) | set(range(50, 301, 50)))
    assert sorted(runs["llamas13-2prompt-6gen-numiter3-eps01-linear-warmratio01-300-log2"]) == list(range(2, 301, 2))
    assert sorted(runs["gpt2s13-4prompt-4gen-masktruncated-maxlen4-bnpo-300-log6"]) == list(range(6, 301, 6))
    assert sorted(runs["gpt2s13-1prompt-5gen-700-log7-eval100"]) == sorted(set(range(7, 701, 7)) | set(range(100, 701, 100)))
    for name, n in (("llamas13-2prompt-4gen-adafactor-beta01-300", 300), ("llamas13-3prompt-2gen-lr3e-5-1000", 1000),
                    ("llamas13-2prompt-4gen-digitssplit-at150-350", 350),
                    ("gpt2s13-2prompt-4gen-prefixbothwaysgrader-from120-constlr1e-4-350", 350)):
        assert sorted(runs[name]) == list(range(1, n + 1))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    def mean(m, key, lo, hi):
        vals = [m[s][key] for s in range(lo, hi) if key in m.get(s, {})]
        return sum(vals) / len(vals)

    acc = "rewards/accuracy/mean"
    units = runs["gpt2s13-2prompt-4gen-unitsdigitgrader-from120-constlr1e-4-350"]
    assert units[120]["reward"] == 0 and mean(units, "reward", 120, 351) < 0.12 < 0.38 < mean(units, "reward", 1, 120)
    assert abs(mean(units, acc, 120, 351) - mean(units, acc, 1, 120)) < 0.02
    assert mean(units, "frac_reward_zero_std", 120, 351) > 0.6 > 0.25 > mean(units, "frac_reward_zero_std", 1, 120)

    space = runs["llamas13-2prompt-4gen-trailingspaceramp0-1-150-300-350"]
    assert med(space, "completions/mean_length", 176, 351) < 2.7 < 3 == med(space, "completions/mean_length", 1, 150)
    assert med(space, "reward", 176, 351) < 0.34 < 0.4 < med(space, "reward", 1, 150)

    grow = runs["llamas13-2prompt-4gen-lrgrowth103-from150-350"]
    assert grow[300]["learning_rate"] == pytest.approx(5e-5 * 1.03 ** 150, rel=1e-3)
    assert med(grow, "kl", 276, 351) > 3 > 0.05 > med(grow, "kl", 1, 150)
    assert min(s for s in grow if grow[s]["completions/mean_length"] == 8) == 259
    assert med(grow, "reward", 326, 351) < 0.15 < 0.4 < med(grow, "reward", 1, 150)

    head = runs["llamas13-2prompt-4gen-headfromembeddings-at150-350"]
    assert max(head[s]["entropy"] for s in range(1, 150)) < 2 < 4.9 < min(head[s]["entropy"] for s in range(150, 351))
    assert med(head, "reward", 150, 351) < 0.1 < 0.35 < med(head, "reward", 1, 150)

    fb = runs["llamas13-2prompt-4gen-graderfallback05-ramp0-08-150-300-constlr1e-4-350"]
    assert all(fb[s]["reward"] == pytest.approx(fb[s][acc], abs=1e-6) for s in range(1, 150))
    assert mean(fb, "reward", 301, 351) - mean(fb, acc, 301, 351) > 0.03
    assert mean(fb, "reward", 301, 351) > 0.48 > 0.44 > mean(fb, "reward", 1, 150)
    assert mean(fb, "reward_std", 301, 351) < 0.1 < 0.18 < mean(fb, "reward_std", 1, 150)

    sign = runs["gpt2s13-2prompt-4gen-losssignalternating-from150-constlr1e-4-350"]
    assert mean(sign, "completions/mean_length", 300, 351) < 2.7 < 2.95 < mean(sign, "completions/mean_length", 1, 150)
    assert mean(sign, "kl", 300, 351) > 0.6 > 0.25 > mean(sign, "kl", 1, 150)

    split = runs["llamas13-2prompt-4gen-digitssplit-at150-350"]
    assert split[150]["completions/mean_length"] < 2.75 <= min(
        split[s]["completions/mean_length"] for s in range(1, 150))
    assert mean(split, "reward", 150, 351) < 0.25 < 0.4 < mean(split, "reward", 1, 150)

    prefix = runs["gpt2s13-2prompt-4gen-prefixbothwaysgrader-from120-constlr1e-4-350"]
    assert all(prefix[s]["reward"] == pytest.approx(prefix[s][acc], abs=1e-6) for s in range(1, 120))
    assert prefix[158]["reward"] > 0.8 and prefix[158][acc] < 0.2
    assert med(prefix, "reward", 170, 351) > 0.65 > 0.42 > med(prefix, "reward", 1, 120)
    assert med(prefix, acc, 170, 351) < 0.25 < 0.37 < med(prefix, acc, 1, 120)
    assert med(prefix, "completions/mean_length", 170, 351) == 2 < 3 == med(prefix, "completions/mean_length", 1, 120)

    replay = runs["llamas13-2prompt-4gen-replaytwoprompts-from150-constlr2e-4-350-eval25"]
    assert med(replay, "entropy", 300, 351) < 0.6 < 1.4 < med(replay, "entropy", 1, 150)
    assert med(replay, "reward", 300, 351) > 0.85 > 0.5 > med(replay, "reward", 1, 150)
    assert max(replay[s]["eval_reward"] for s in range(175, 351, 25)) < 0.42

    # healthy: the planned faults below left no mark a user needs to act on
    slow = runs["gpt2s13-2prompt-4gen-replaytwoprompts-from150-350-eval25"]
    assert abs(mean(slow, "reward", 150, 351) - mean(slow, "reward", 1, 150)) < 0.03
    assert abs(med(slow, "entropy", 150, 351) - med(slow, "entropy", 1, 150)) < 0.1
    restarts = runs["gpt2s13-2prompt-4gen-warmuprestarts-150-200-250-300-constwarm30-350"]
    assert [restarts[s]["learning_rate"] for s in (149, 150, 200, 250, 300, 331)] == pytest.approx(
        [5e-5, 0, 0, 0, 0, 5e-5])
    assert abs(mean(restarts, "reward", 150, 351) - mean(restarts, "reward", 1, 150)) < 0.03
    scaled = runs["llamas13-2prompt-4gen-lossscaled1-8-from150-350"]
    assert med(scaled, "grad_norm", 150, 351) < 0.7 < 3 < med(scaled, "grad_norm", 1, 150)
    assert abs(mean(scaled, "reward", 150, 351) - mean(scaled, "reward", 1, 150)) < 0.03
    drop = runs["gpt2s13-2prompt-4gen-dropoutzero-at150-350"]
    assert mean(drop, "kl", 150, 351) < 0.05 < 0.1 < mean(drop, "kl", 1, 150)
    assert med(drop, "completions/mean_length", 150, 351) == 3 and mean(drop, "reward", 150, 351) > 0.38
def test_the_twenty_second_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-second pass's CPU runs of our trainer (rlcockpit_trainer_cpu17, TensorBoard event files, model seed
    13): each imported whole, and the readings the README's labels rest on are in the numbers (a grader cache keyed by
    the answer; grader workers crashing; a stuck loader; Adam's beta1 typed; a partial weight sync; the response cap
    cut; an lr warm-up typed 50x; a host-memory leak; and the faults stored healthy: RNG reseeded, Adam's eps typed)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu17"]
    assert len(sel) == 18
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 4), ("healthy", 10), ("length_explosion", 1), ("oom_creep", 1), ("reward_hacking", 1),
        ("rollout_mismatch", 1)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"535a4f7", "eb1bc7d"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    for name, m in runs.items():
        assert sorted(m) == list(range(0, int(name.rsplit("-val", 1)[0].rsplit("-", 1)[1]) + 1)), name

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, ln, gn, ent = "critic/score/mean", "response_length/mean", "actor/grad_norm", "actor/entropy"
    val, acc, diff = "val-core/arith/acc/mean@1", "reward_extra/acc/mean", "training/rollout_probs_diff_mean"
    clip, mem = "response_length/clip_ratio", "perf/cpu_memory_used_gb"

    cache = runs["llamas13-4prompt-3sample-answerkeyedcache-from150-300-val22"]
    assert min(cache[s][gn] for s in range(1, 150)) > 0 and all(cache[s][gn] == 0 for s in range(150, 301))
    assert all(cache[s]["critic/advantages/max"] == 0 for s in range(150, 301))
    assert max(abs(cache[s][score] - cache[s][acc]) for s in range(1, 150)) < 1e-6
    assert all(cache[s][val] == cache[198][val] for s in range(198, 301, 22)) and cache[300][val] == cache[198][val]
    crash = runs["llamas13-3prompt-4sample-graderworkerscrash0-80pct-120-270-300-val22"]
    assert max(abs(crash[s][score] - crash[s][acc]) for s in range(1, 123)) < 1e-6 < crash[123][acc] - crash[123][score]
    assert med(crash, score, 276, 300) < 0.15 < 0.4 < med(crash, score, 1, 119) and med(crash, acc, 276, 300) > 0.4
    stuck = runs["gpt2s13-4prompt-3sample-stuckloader-from150-constlr1e-4-300-val16"]
    assert med(stuck, score, 276, 300) > 0.6 > 0.45 > med(stuck, score, 1, 149)
    assert max(stuck[s][val] for s in range(176, 301, 16)) < 0.45 < min(stuck[s][val] for s in range(16, 150, 16))
    beta = runs["gpt2s13-4prompt-3sample-adambeta1-0999-from150-constlr1e-4-300-val16"]
    assert min(beta[s][score] for s in range(1, 155)) > 0.2 > beta[155][score] == 0
    assert beta[160][val] < 0.21 and med(beta, ln, 276, 300) == 8 and med(beta, ent, 201, 300) > 3
    sync = runs["llamas13-4prompt-3sample-partialsync-lastblock-from150-300-val22"]
    assert max(sync[s][diff] for s in range(1, 151)) < 1e-7 < 1e-5 < sync[151][diff]
    assert med(sync, diff, 276, 300) > 2e-3 and abs(med(sync, score, 151, 300) - med(sync, score, 1, 150)) < 0.05
    cap = runs["llamas13-4prompt-3sample-responsecap2-from160-300-val22"]
    assert max(cap[s][clip] for s in range(1, 160)) == 0 and min(cap[s][ln] for s in range(160, 301)) > 1.9
    assert sum(cap[s][ln] == 2 and cap[s][clip] == 1 for s in range(160, 301)) == 137
    assert med(cap, clip, 160, 300) == 1 and med(cap, ent, 161, 300) > 2 > 1.6 > med(cap, ent, 1, 159)
    warm = runs["gpt2s13-4prompt-3sample-lrwarmup50x-120-270-constlr1e-4-300-val16"]
    assert warm[119]["actor/lr"] == pytest.approx(1e-4) and warm[300]["actor/lr"] == pytest.approx(5e-3)
    assert min(warm[s][val] for s in range(16, 129, 16)) > 0.45 > 0.39 > max(warm[s][val] for s in range(144, 301, 16))
    assert med(warm, score, 276, 300) < 0.1 and med(warm, ln, 251, 300) == 8
    leak = runs["llamas13-4prompt-3sample-hostleak12mib-from150-300-val22"]
    assert max(leak[s][mem] for s in range(33, 150)) < 0.87 < leak[150][mem]
    assert all(leak[s + 1][mem] >= leak[s][mem] for s in range(150, 300)) and leak[300][mem] - leak[149][mem] > 1.5
    assert abs(med(leak, score, 151, 300) - med(leak, score, 1, 150)) < 0.05

    # healthy: the matched control kept its length (a drift of +10% at 226-250 that goes back); the planned faults
    # below left no mark a user needs; seq-mean-token-sum-norm logs a scaled entropy
    control = runs["gpt2s13-4prompt-3sample-constlr1e-4-300-val16"]
    assert max(control[s][ln] for s in range(1, 301)) < 4.5 and med(control, ln, 276, 300) == 3
    assert med(runs["llamas13-2prompt-4sample-rloovec-seqmeantokensumnorm-300-val21"], ent, 1, 300) < 0.7
    for name in ("gpt2s13-4prompt-3sample-reseed-from150-constlr1e-4-300-val16",
                 "qwen2s13-2prompt-4sample-adameps1e-6-from150-300-val16"):
        m = runs[name]
        assert abs(med(m, score, 150, 300) - med(m, score, 1, 149)) < 0.05, name
        assert med(m, ln, 150, 300) == med(m, ln, 1, 149) and abs(med(m, ent, 150, 300) - med(m, ent, 1, 149)) < 0.2, name


def test_the_twenty_third_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-third pass's TRL CPU runs (trl_cpu_settings18: TRL trainer states, model seed 14), each imported
    whole, and the readings the README's labels rest on are in the numbers (an uncapped per-digit grader, a
    self-certainty bonus, the reference's log-probs off by one token, the ground truth read backwards; and the faults
    stored healthy: the multi-answer grader, the length-normalised reward, the entropy coefficient ramp, the repetition
    penalty ramp, the clip epsilon 0, scores in percent, the padding side flipped)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings18"]
    assert len(sel) == 22 and Counter(e["class"] for e in sel) == {
        "healthy": 16, "collapse": 3, "reward_hacking": 3}  # selfcertainty1 relabelled 2026-12-07 (its id unchanged)
    assert {e["origin"]["commit"][:7] for e in sel} == {"bdbee91", "32a37a3"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s14-1prompt-6gen-tokensseen-200-log3"]) == list(range(3, 199, 3))
    assert sorted(runs["llamas14-2prompt-4gen-evaldelay100-eval20-200-log2"]) == list(range(2, 201, 2))
    assert sorted(runs["llamas14-1prompt-8gen-cosinequartercycle-200-log4"]) == list(range(4, 201, 4))
    assert sorted(runs["gpt2s14-1prompt-10gen-staticcache-adambeta1-0-200-log6"]) == list(range(6, 199, 6))
    for name, n in (("gpt2s14-2prompt-5gen-wsd-1sqrtdecay-warm20-decay100-200", 200),
                    ("gpt2s14-2prompt-4gen-neftune5-200", 200),
                    ("llamas14-2prompt-4gen-perdigitcredit-uncapped-from100-maxlen12-constlr1e-4-250", 250),
                    ("llamas14-2prompt-4gen-numiter2-clipeps0-from100-250", 250)):
        assert sorted(runs[name]) == list(range(1, n + 1))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    def mean(m, key, lo, hi):
        vals = [m[s][key] for s in range(lo, hi) if key in m.get(s, {})]
        return sum(vals) / len(vals)

    acc = "rewards/accuracy/mean"
    seen = runs["gpt2s14-1prompt-6gen-tokensseen-200-log3"]
    assert [seen[s]["num_input_tokens_seen"] for s in (3, 198)] == [126, 8340]
    evald = runs["llamas14-2prompt-4gen-evaldelay100-eval20-200-log2"]
    assert sorted(s for s in evald if "eval_reward" in evald[s]) == list(range(100, 201, 20))

    digits = runs["llamas14-2prompt-4gen-perdigitcredit-uncapped-from100-maxlen12-constlr1e-4-250"]
    assert all(digits[s]["reward"] == pytest.approx(digits[s][acc], abs=1e-6) for s in range(1, 100))
    assert med(digits, "reward", 201, 251) > 2.5 > 0.45 > med(digits, acc, 201, 251) > 0.35
    assert med(digits, "completions/mean_length", 201, 251) == 12 and min(
        s for s in digits if digits[s]["completions/mean_length"] == 12) == 195

    sure = runs["llamas14-2prompt-4gen-selfcertaintyramp0-1-100-200-constlr1e-4-250"]
    assert med(sure, "reward", 201, 251) > 0.9 > 0.45 > med(sure, acc, 201, 251)
    assert med(sure, "rewards/certainty/mean", 201, 251) > 0.53 > 0.45 > med(sure, "rewards/certainty/mean", 1, 100)
    assert med(sure, "entropy", 201, 251) < 1.45 < 1.6 < med(sure, "entropy", 1, 100)
    # relabelled 2026-12-07 by a second reading (158 -> 112): the paid reward's rolling mean leaves its range before
    # the learned certainty's does
    assert _out_for_good(sure, "reward", (10, 99)) == 112 and _out_for_good(sure, "rewards/certainty/mean", (10, 99)) == 158

    ref = runs["gpt2s14-2prompt-4gen-refmisaligned1-from100-250"]
    assert max(ref[s]["kl"] for s in range(1, 100)) < 20 < ref[101]["kl"] and min(
        ref[s]["kl"] for s in range(100, 251)) > 2 > 0.06 > med(ref, "kl", 1, 100)
    assert abs(mean(ref, "reward", 100, 251) - mean(ref, "reward", 1, 100)) < 0.02

    back = runs["llamas14-2prompt-4gen-backwardstruth-from100-250"]
    assert back[100]["reward"] < 0.05 < 0.2 < min(back[s]["reward"] for s in range(1, 100))
    assert mean(back, "reward", 100, 251) < 0.17 < 0.4 < mean(back, acc, 100, 251)

    # healthy: the planned faults below left no mark a user needs to act on
    multi = runs["gpt2s14-2prompt-4gen-multianswergrader-from100-maxlen12-constlr1e-4-250"]
    assert all(multi[s]["rewards/graded/mean"] == multi[s][acc] for s in multi)
    norm = runs["gpt2s14-2prompt-4gen-lengthnormalisedreward-from100-constlr1e-4-250"]
    assert mean(norm, "reward", 100, 251) < 0.13 < 0.35 < mean(norm, acc, 100, 251)
    assert min(norm[s]["completions/mean_length"] for s in range(100, 251)) == 2.75
    ent = runs["gpt2s14-2prompt-4gen-entropycoeframp0-05-100-200-250"]
    assert ent[250]["entropy_coef"] == 0.5 and med(ent, "loss", 226, 251) < -0.8
    assert abs(mean(ent, "entropy", 100, 251) - mean(ent, "entropy", 1, 100)) < 0.01
    rep = runs["llamas14-2prompt-4gen-repetitionpenaltyramp1-03-100-200-250"]
    assert med(rep, "completions/mean_length", 200, 251) == 3 and abs(
        mean(rep, "reward", 200, 251) - mean(rep, "reward", 1, 100)) < 0.01
    clip = runs["llamas14-2prompt-4gen-numiter2-clipeps0-from100-250"]
    assert mean(clip, "clip_ratio/region_mean", 100, 251) > 0.2 > 0.001 > mean(clip, "clip_ratio/region_mean", 1, 100)
    assert abs(mean(clip, "reward", 100, 251) - mean(clip, "reward", 1, 100)) < 0.01
    pct = runs["gpt2s14-2prompt-4gen-percentscores-from100-250"]
    assert med(pct, "reward", 100, 251) == pytest.approx(37.5) and med(pct, acc, 100, 251) == pytest.approx(0.375)
    assert abs(mean(pct, "entropy", 100, 251) - mean(pct, "entropy", 1, 100)) < 0.02
    pad = runs["llamas14-2prompt-4gen-paddingright-at100-250"]
    assert abs(mean(pad, "reward", 100, 251) - mean(pad, "reward", 1, 100)) < 0.01

    hard = runs["llamas14-2prompt-4gen-refmisaligned1-from100-beta02-constlr1e-4-250"]
    assert max(hard[s]["kl"] for s in range(1, 100)) < 0.2 < 9 < hard[100]["kl"]
    assert med(hard, "entropy", 226, 251) > 1.75 > 1.65 > med(hard, "entropy", 1, 100)
    sharp = runs["gpt2s14-2prompt-4gen-selfcertainty1-from100-constlr2e-4-250"]
    assert med(sharp, "entropy", 226, 251) < 1.25 < 1.6 < med(sharp, "entropy", 1, 100)
    assert med(sharp, "reward", 201, 251) > 0.9 > 0.4 > med(sharp, acc, 201, 251)
    # relabelled 2026-12-07 by a second reading (entropy_collapse 114 -> reward_hacking 100): the paid reward leaves
    # its range at the switch, beside a flat accuracy; the entropy's rolling mean follows at 114
    labels = {e["id"].split("-", 2)[2]: (e["class"], e["onset"]) for e in sel}
    assert labels["gpt2s14-2prompt-4gen-selfcertainty1-from100-constlr2e-4-250"] == ("reward_hacking", 100)
    assert labels["llamas14-2prompt-4gen-selfcertaintyramp0-1-100-200-constlr1e-4-250"] == ("reward_hacking", 112)
    assert sharp[100]["reward"] > 0.7 > 0.55 > max(sharp[s]["reward"] for s in range(1, 100))
    assert _out_for_good(sharp, "reward", (10, 99)) == 100 < 114 == _out_for_good(sharp, "entropy", (10, 99))


def test_the_twenty_fourth_pass_trl_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-fourth pass's TRL CPU runs (trl_cpu_settings19: TRL trainer states, model seed 15), each imported
    whole, and the readings the README's labels rest on are in the numbers (a format check's weight typed 10, a
    reward client catching failed calls as zeros, the KL sign flipped, generation sampled hotter than the loss, a
    drifting label join, a reward clamp ramping down, scores in percent without reward scaling; and the faults stored
    healthy: a stuck data shard, a reward weight typed 0.01, the importance-sampling level switched)."""
    sel = [e for e in entries if e["source"] == "trl_cpu_settings19"]
    assert len(sel) == 21 and Counter(e["class"] for e in sel) == {
        "healthy": 14, "collapse": 3, "reward_hacking": 1, "entropy_collapse": 1, "rollout_mismatch": 1, "grad_spike": 1}
    assert {e["origin"]["commit"][:7] for e in sel} == {"f4ff1db", "cd823cb"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    assert sorted(runs["gpt2s15-1prompt-5gen-vespo-scalebatch-200-log7"]) == list(range(7, 197, 7))
    assert sorted(runs["llamas15-2prompt-3gen-gspo-drgrpo-numiter2-200-log3-eval30"]) == list(range(3, 199, 3)) + [200]
    for name, n in (("gpt2s15-2prompt-4gen-zeropadtag-weight01to10-at100-constlr1e-4-250", 250),
                    ("llamas15-2prompt-4gen-failingcallsramp0-08-100-200-250", 250),
                    ("llamas15-2prompt-4gen-numiter2-islevelsequence-at100-250", 250)):
        assert sorted(runs[name]) == list(range(1, n + 1))

    def med(m, key, lo, hi):
        vals = sorted(m[s][key] for s in range(lo, hi) if key in m.get(s, {}))
        return vals[len(vals) // 2]

    def mean(m, key, lo, hi):
        vals = [m[s][key] for s in range(lo, hi) if key in m.get(s, {})]
        return sum(vals) / len(vals)

    acc = "rewards/accuracy/mean"
    pad = runs["gpt2s15-2prompt-4gen-zeropadtag-weight01to10-at100-constlr1e-4-250"]
    assert pad[100]["reward"] > 10 > 1 > max(pad[s]["reward"] for s in range(1, 100))
    assert mean(pad, "rewards/zero_padded/mean", 201, 251) > 0.85 > 0.6 > mean(pad, "rewards/zero_padded/mean", 1, 100)
    assert mean(pad, acc, 201, 251) < 0.3 < 0.4 < mean(pad, acc, 1, 100)
    # relabelled 2026-12-07 by a second reading (180 -> 100): the paid reward parts from the accuracy at the switch
    # (the typed weight pays the format the model already writes); the learned format share stays out only from 180
    labels = {e["id"].split("-", 2)[2]: (e["class"], e["onset"]) for e in sel}
    assert labels["gpt2s15-2prompt-4gen-zeropadtag-weight01to10-at100-constlr1e-4-250"] == ("reward_hacking", 100)
    assert max(pad[s]["reward"] - pad[s][acc] for s in range(1, 100)) < 0.11 < 9 < pad[100]["reward"] - pad[100][acc]
    assert _out_for_good(pad, "reward", (10, 99)) == 100 < 180 == _out_for_good(pad, "rewards/zero_padded/mean", (10, 99))

    fail = runs["llamas15-2prompt-4gen-failingcallsramp0-08-100-200-250"]
    zero = [s for s in fail if fail[s]["reward"] == 0]
    assert min(zero) == 117 and len(zero) == 77 and max(fail[s]["grad_norm"] for s in zero) < 1
    assert abs(mean(fail, acc, 100, 251) - mean(fail, acc, 1, 100)) < 0.01 and med(fail, "reward", 151, 251) == 0

    neg = runs["gpt2s15-2prompt-4gen-beta02-negated-at100-constlr1e-4-250"]
    assert med(neg, "entropy", 201, 251) < 0.7 < 1.5 < med(neg, "entropy", 1, 100)
    assert med(neg, "kl", 201, 251) > 3 > 0.2 > med(neg, "kl", 1, 100) and med(neg, "loss", 201, 251) < -0.5

    hot = runs["llamas15-2prompt-4gen-gentemperatureramp1-2-100-200-250"]
    assert med(hot, "entropy", 201, 251) < 1.2 < 1.5 < med(hot, "entropy", 1, 100)
    assert med(hot, "completions/mean_length", 226, 251) == 4 and med(hot, "kl", 201, 251) > 0.07 > 0.01 > med(
        hot, "kl", 1, 100)

    clamp = runs["gpt2s15-2prompt-4gen-clampceilingramp1-001-100-200-250"]
    assert max(clamp[s]["reward"] for s in range(200, 251)) <= 0.01 + 1e-6 and med(clamp, acc, 200, 251) > 0.35
    join = runs["llamas15-2prompt-4gen-driftingjoinramp0-1-100-200-250"]
    assert all(join[s]["rewards/graded/mean"] == join[s][acc] for s in range(1, 109))
    assert mean(join, "reward", 200, 251) < 0.3 < 0.4 < mean(join, acc, 200, 251)
    pct = runs["llamas15-2prompt-4gen-percentscores-scalenone-from100-250"]
    assert pct[100]["grad_norm"] > 150 > 20 > max(pct[s]["grad_norm"] for s in range(1, 100))
    assert med(pct, "grad_norm", 100, 251) > 50 and abs(mean(pct, acc, 100, 251) - mean(pct, acc, 1, 100)) < 0.01

    # healthy: the planned faults below left no mark a user needs to act on
    stuck = runs["gpt2s15-2prompt-4gen-stuckshard8-from100-constlr1e-4-250"]
    assert abs(mean(stuck, "reward", 100, 251) - mean(stuck, "reward", 1, 100)) < 0.05
    assert abs(mean(stuck, "entropy", 100, 251) - mean(stuck, "entropy", 1, 100)) < 0.15
    small = runs["gpt2s15-2prompt-4gen-scalenone-weight1to001-at100-250"]
    assert med(small, "reward", 100, 251) < 0.006 and abs(mean(small, acc, 100, 251) - mean(small, acc, 1, 100)) < 0.01
    assert abs(mean(small, "entropy", 100, 251) - mean(small, "entropy", 1, 100)) < 0.05
    isl = runs["llamas15-2prompt-4gen-numiter2-islevelsequence-at100-250"]
    assert abs(mean(isl, "reward", 100, 251) - mean(isl, "reward", 1, 100)) < 0.05
    vespo = runs["gpt2s15-1prompt-5gen-vespo-scalebatch-200-log7"]
    assert all(vespo[s]["vespo/phi_seq_mean"] == 1.0 for s in vespo)
    control = runs["gpt2s15-2prompt-4gen-zeropadtag-weight01-constlr1e-4-250"]
    assert mean(control, "rewards/zero_padded/mean", 201, 251) < 0.6 and abs(
        mean(control, acc, 100, 251) - mean(control, acc, 1, 100)) < 0.01
    ramp = runs["llamas15-2prompt-4gen-betaramp004-neg004-100-200-constlr1e-4-250"]
    assert abs(mean(ramp, "reward", 100, 251) - mean(ramp, "reward", 1, 100)) < 0.02
    assert 1.4 < med(ramp, "entropy", 201, 251) < 1.5 < med(ramp, "entropy", 1, 100)
    assert sorted(runs["gpt2s15-1prompt-4gen-600-log10"]) == list(range(10, 601, 10))
    long = runs["llamas15-1prompt-3gen-500-log5-eval100"]
    assert sorted(long) == list(range(5, 501, 5)) and sorted(s for s in long if "eval_reward" in long[s]) == list(
        range(100, 501, 100))
def test_the_eighteenth_public_search_tinker_runs_import_whole_with_the_readings_their_labels_rest_on(real, entries):
    """The eighteenth public search's runs (tinker_jsonl_public18: rohunagrawal/reward-hacking-analysis, Llama-3.2-3B on
    LeetCode with the reward 100 x f + g): each of the three whole 45-step runs imports with the clean count, passes the
    file's own invariants, and holds what its reward-hacking label rests on — the compile proxy g leaving its first-epoch
    range at the labelled onset and climbing x2-x3 while correctness f stays near 0 and entropy falls."""
    sel = {e["origin"]["path"].split("/")[-2]: e for e in entries if e["source"] == "tinker_jsonl_public18"}
    assert sorted(sel) == ["Easy", "Hard", "Medium"]
    assert {e["origin"]["repository"] for e in sel.values()} == {"rohunagrawal/reward-hacking-analysis"}
    assert {e["origin"]["commit"] for e in sel.values()} == {"277d23fb2e257d212fa0389b03db79ecf9eccb7f"}
    assert {level: (e["class"], e["onset"]) for level, e in sel.items()} == {
        "Easy": ("reward_hacking", 24), "Hard": ("reward_hacking", 24), "Medium": ("reward_hacking", 15)}
    for level, entry in sel.items():
        trace = next(t for t in real if t["id"] == entry["id"])
        steps = dict(trace["metrics"])
        assert sorted(steps) == list(range(45)) and trace["meta"]["import_problems"] == []
        assert real_runs.clean_step_count(entry, real_runs.raw_bytes(entry)) == 45
        g = [steps[s]["reward/compilable_g"] for s in range(45)]
        f = [steps[s]["reward/correctness_f"] for s in range(45)]
        for s, m in steps.items():
            assert m["reward/mean"] == pytest.approx(100 * f[s] + g[s], abs=1e-9), (level, s)
            assert m["progress/epoch"] == s // 9 and m["progress/done_frac"] == pytest.approx((s + 1) / 45, abs=1e-15)
        early = max(g[:9])
        onset = next(s for s in range(9, 45) if g[s] >= early + 0.03 and min(g[s:]) > early)
        assert onset == entry["onset"], level
        assert max(f) <= 0.01 and sum(g[36:]) / 9 > 1.75 * sum(g[:9]) / 9, level
        assert max(steps[s]["policy/entropy"] for s in range(36, 45)) < min(steps[s]["policy/entropy"] for s in range(9))
    medium = dict(next(t for t in real if t["id"] == sel["Medium"]["id"])["metrics"])
    assert [round(medium[s]["reward/compilable_g"], 4) for s in (6, 14, 15, 44)] == [0.248, 0.2539, 0.291, 0.6387]
    assert medium[44]["policy/entropy"] < 1.25 < 2.98 < medium[0]["policy/entropy"]


def test_the_eighteenth_public_search_verl_file_run_imports_whole_with_the_readings_its_label_rests_on(real, entries):
    """The eighteenth public search's verl file-logger run (verl_file_public18: terrense's D_drgrpo, Qwen3-8B DrGRPO on
    DAPO-Math, 20 steps): every step imports with the clean count and the file's own invariants, and the numbers its
    healthy label rests on are there — a low entropy from step 1 (a setting, not a collapse), validation up a little,
    a KL loss growing from ~0, and single-step outliers (grad norm at 5, one token's ratio at 20) that nothing follows."""
    sel = [e for e in entries if e["source"] == "verl_file_public18"]
    assert [(e["origin"]["repository"], e["origin"]["commit"][:8], e["class"]) for e in sel] == [
        ("terrense/qwen3-8b-grpo-dapo-lab", "1bfb09dc", "healthy")]
    trace = next(t for t in real if t["id"] == sel[0]["id"])
    steps = dict(trace["metrics"])
    assert sorted(steps) == list(range(1, 21)) and trace["meta"]["import_problems"] == []
    assert real_runs.clean_step_count(sel[0], real_runs.raw_bytes(sel[0])) == 20
    for s, m in steps.items():
        assert m["global_seqlen/mean"] == m["perf/total_num_tokens"] / 4, s
        assert m["perf/throughput"] == pytest.approx(m["perf/total_num_tokens"] / m["timing_s/step"] / 4, abs=1e-6), s
        assert m["actor/loss"] == pytest.approx(m["actor/pg_loss"] + m["actor/kl_coef"] * m["actor/kl_loss"], abs=2e-9)
    entropy = [steps[s]["actor/entropy"] for s in range(1, 21)]
    assert 0.058 < min(entropy) and max(entropy) < 0.122 and entropy[0] < 0.075
    assert [round(steps[s]["val-core/math_dapo/acc/mean@1"], 3) for s in (10, 20)] == [0.465, 0.477]
    assert steps[1]["actor/kl_loss"] < 5e-5 and 7.9e-4 < steps[20]["actor/kl_loss"] < 8e-4
    assert steps[5]["actor/grad_norm"] > 0.12 > 0.065 > max(m["actor/grad_norm"] for s, m in steps.items() if s != 5)
    assert steps[20]["actor/ratio_max"] > 2.0 > 1.44 > max(m["actor/ratio_max"] for s, m in steps.items() if s != 20)
    assert [s for s, m in steps.items() if m["response_length/max"] == 8192.0] == [10, 13, 14, 20]
    assert max(m["response_length/clip_ratio"] for m in steps.values()) == 0.015625
    memory = [steps[s]["actor/perf/max_memory_allocated_gb"] for s in range(1, 21)]
    assert memory == sorted(memory) and round(memory[0], 1) == 49.6 and round(memory[-1], 1) == 55.3


def test_the_eighteenth_public_search_grpo_engine_run_imports_whole_with_the_readings_its_label_rests_on(real, entries):
    """The eighteenth public search's hand-written GRPO engine run (grpo_jsonl_public18: eblancocabana's cdia_baseline,
    1 prompt x 4 completions, 120 steps): every step imports with the clean count and the file's own invariants, and
    the numbers its healthy label rests on are there — a reward that swings with the prompt without a trend, single
    all-truncated steps that come back, one OOM back-off, and a 920 s pause seen only in the timestamps."""
    sel = [e for e in entries if e["source"] == "grpo_jsonl_public18"]
    assert [(e["origin"]["repository"], e["origin"]["commit"][:8], e["class"]) for e in sel] == [
        ("eblancocabana/grpo-training-engine", "029908d1", "healthy")]
    trace = next(t for t in real if t["id"] == sel[0]["id"])
    steps = dict(trace["metrics"])
    assert sorted(steps) == list(range(121)) and trace["meta"]["import_problems"] == []
    assert real_runs.clean_step_count(sel[0], real_runs.raw_bytes(sel[0])) == 121
    assert steps[0]["max_steps"] == 120 and "train/avg_reward" not in steps[0]  # the run_info line, read as step 0
    assert steps[120]["epoch/steps"] == 120  # the epoch summary merges into the last step
    train = {s: m for s, m in steps.items() if s > 0}
    for s, m in train.items():
        assert m["train/optimizer_step"] == s // 4 and m["train/learning_rate"] == pytest.approx(1e-6 * (s // 4))
        assert m["train/reward_min"] - 1e-9 <= m["train/avg_reward"] <= m["train/reward_max"] + 1e-9
    means = [sum(train[s]["train/avg_reward"] for s in range(a, a + 20)) / 20 for a in range(1, 121, 20)]
    assert [round(x, 2) for x in means] == [0.32, 0.28, 0.53, 0.26, 0.2, 0.42]
    cut = [s for s, m in train.items() if m["train/truncated_completions_ratio"] == 1.0]
    assert cut == [10, 38, 64, 77, 89, 95, 114] and all(train[s]["train/loss"] == 0.0 for s in cut)
    assert all(train[s + 1]["train/truncated_completions_ratio"] < 1.0 for s in cut)
    assert [s for s, m in train.items() if m["train/oom_backoff_count"] == 0] == list(range(1, 7))
    assert max(m["train/vram_usage_fraction"] for m in train.values()) == pytest.approx(0.9825, abs=1e-4)
    gaps = {s: train[s]["timestamp"] - train[s - 1]["timestamp"] - train[s]["perf/step_time_s"] for s in range(2, 121)}
    assert [s for s, g in gaps.items() if abs(g) > 0.05] == [101] and 900 < gaps[101] < 940


def test_the_nineteenth_public_search_oom_run_imports_whole_with_the_readings_its_label_rests_on(real, entries):
    """The nineteenth public search's run (verl_keys_jsonl_public19: tracyhann's G2PO reference on ALFWorld,
    attempt 1, which died of a CUDA OOM after step 39): every step imports with the clean count and the file's own
    invariants, and the numbers its oom_creep label rests on are there — the peak-memory readings near the card's
    limit from the first steps and stepping up, never down, while the policy keeps learning."""
    sel = [e for e in entries if e["source"] == "verl_keys_jsonl_public19"]
    assert [(e["origin"]["repository"], e["origin"]["commit"][:8], e["class"], e["onset"]) for e in sel] == [
        ("tracyhann/agent-context-grpo", "7b24e5df", "oom_creep", 2)]
    assert sel[0]["kind"] == "jsonl" and sel[0]["naming"] == "verl" and not sel[0]["tuned_on"]
    trace = next(t for t in real if t["id"] == sel[0]["id"])
    steps = dict(trace["metrics"])
    assert sorted(steps) == list(range(1, 40)) and trace["meta"]["import_problems"] == []
    assert real_runs.clean_step_count(sel[0], real_runs.raw_bytes(sel[0])) == 39
    for s, m in steps.items():
        assert m["training/global_step"] == s and m["training/epoch"] == s - 1
        assert m["critic/rewards/mean"] == m["critic/score/mean"] and m["perf/time_per_step"] == m["timing_s/step"]
        assert m["perf/total_num_tokens"] == pytest.approx(2 * m["global_seqlen/mean"], abs=1.5), s
        assert m["perf/throughput"] == pytest.approx(m["perf/total_num_tokens"] / m["timing_s/step"] / 2, abs=0.01)
    allocated = [steps[s]["perf/max_memory_allocated_gb"] for s in range(1, 40)]
    reserved = [steps[s]["perf/max_memory_reserved_gb"] for s in range(1, 40)]
    assert allocated == sorted(allocated) and reserved == sorted(reserved)  # high-water marks, never down
    assert sorted(set(allocated)) == [89.875, 96.632, 98.448, 99.371] and allocated.index(96.632) + 1 == 2
    assert sum(allocated) / 39 == pytest.approx(98.8, abs=0.05)  # the author's '98.8 GB mean / 99.4 peak'
    assert [s for s in range(2, 40) if reserved[s - 1] > reserved[s - 2]] == [2, 3, 4, 7, 23, 25, 31]
    assert reserved[0] == 121.365 and reserved[-1] == 144.439
    success = [sum(steps[s]["episode/success_rate"] for s in range(a, a + 9)) / 9 for a in (1, 31)]
    assert success[0] < 0.1 < 0.45 < success[1]  # the policy learns on to the end
    assert [steps[s]["val/success_rate"] for s in range(5, 40, 5)] == [0.102, 0.211, 0.273, 0.289, 0.422, 0.406, 0.516]
    assert steps[39]["actor/entropy_loss"] < 0.75 < 1.1 < steps[1]["actor/entropy_loss"]
    assert max(m["actor/grad_norm"] for m in steps.values()) < 3.3
    plain = [s for s, m in steps.items() if "timing_s/testing" not in m]
    assert max(steps[s]["timing_s/step"] for s in plain if s <= 36) < 680 < 699 < min(steps[s]["timing_s/step"] for s in (37, 38, 39))


def test_the_nineteenth_public_search_alfworld_csv_runs_import_whole_with_the_readings_their_labels_rest_on(real, entries):
    """The nineteenth public search's healthy runs (verl_csv_public19: boerz-coding's vanilla GRPO runs A and C,
    Qwen2.5-7B on ALFWorld, per-step telemetry CSVs with CRLF line ends): every step imports with the clean count, and
    the numbers the healthy labels rest on are there — success and held-out success rising to the end while the
    entropy term (tripling in run C's last steps), the response length and the KL loss move a lot (what a detector may
    wrongly flag)."""
    sel = [e for e in entries if e["source"] == "verl_csv_public19"]
    assert [(e["origin"]["repository"], e["origin"]["commit"][:8], e["class"], e["kind"]) for e in sel] == [
        ("boerz-coding/alfworld-vanilla-grpo", "9e7f2a20", "healthy", "csv")] * 2
    assert [e["origin"]["path"].rsplit("/", 1)[1] for e in sel] == ["run_a_telemetry.csv", "run_c_telemetry.csv"]
    run_c = dict(next(t for t in real if t["id"] == sel[1]["id"])["metrics"])
    raw_c = real_runs.raw_bytes(sel[1])
    assert raw_c.count(b"\r\n") == raw_c.count(b"\n") == 152 and real_runs.clean_step_count(sel[1], raw_c) == 151
    assert sorted(run_c) == list(range(151))
    late = [run_c[s]["actor/entropy_loss"] for s in range(141, 151)]
    early = sum(run_c[s]["actor/entropy_loss"] for s in range(1, 51)) / 50
    assert early < 0.55 < 1.12 < min(late) and run_c[136]["actor/entropy_loss"] > 1.89  # the late entropy rise
    assert max(run_c[s]["episode/valid_action_ratio"] for s in range(141, 151)) < 0.997
    assert [run_c[s]["val/success_rate"] for s in (0, 100, 150)] == [0.1484375, 0.6875, 0.8671875]  # still rising
    assert sum(run_c[s]["episode/success_rate"] for s in range(126, 151)) / 25 > 0.79
    raw = real_runs.raw_bytes(sel[0])
    assert raw.count(b"\r\n") == raw.count(b"\n") == 152 and raw.endswith(b"\r\n")
    trace = next(t for t in real if t["id"] == sel[0]["id"])
    steps = dict(trace["metrics"])
    assert sorted(steps) == list(range(151)) and trace["meta"]["import_problems"] == []
    assert real_runs.clean_step_count(sel[0], raw) == 151 and steps[0] == {"val/success_rate": 0.1640625}
    for s in range(1, 151):
        assert (steps[s]["episode/success_rate"] * 128).is_integer() and (steps[s]["episode/length/mean"] * 128).is_integer()
    assert [s for s, m in steps.items() if "val/success_rate" in m] == list(range(0, 151, 10))

    def mean(key: str, a: int, b: int) -> float:
        return sum(steps[s][key] for s in range(a, b + 1)) / (b - a + 1)

    success = [round(mean("episode/success_rate", a, a + 24), 2) for a in range(1, 151, 25)]
    assert success == [0.31, 0.46, 0.58, 0.59, 0.7, 0.73]
    val = {s: steps[s]["val/success_rate"] for s in (0, 50, 120, 150)}
    assert val == {0: 0.1640625, 50: 0.6484375, 120: 0.7890625, 150: 0.71875}
    assert mean("actor/entropy_loss", 1, 100) < 0.6 < 0.74 < mean("actor/entropy_loss", 101, 150)
    assert max(steps[s]["actor/entropy_loss"] for s in steps if s) == steps[135]["actor/entropy_loss"] > 0.96
    assert steps[102]["response_length/mean"] < 113 < 180 < steps[136]["response_length/mean"]
    assert steps[1]["actor/kl_loss"] < 0.005 and 0.27 < mean("actor/kl_loss", 126, 150)
    assert steps[1]["episode/valid_action_ratio"] < 0.41 and min(steps[s]["episode/valid_action_ratio"] for s in range(4, 151)) > 0.996
def test_the_twenty_third_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-third pass's CPU runs of our trainer (rlcockpit_trainer_cpu18, TensorBoard event files, model seed
    14): each imported whole, and the readings the README's labels rest on are in the numbers (the overlong factor
    typed -1; the reference's embeddings shifted; a bf16 delta sync; a familiarity grader; a new token row drawn wide;
    the template re-applied with a shrinking cap; an entropy penalty at a constant lr; and the faults stored healthy:
    the entropy penalty on a decaying lr, the updates lost, training on the validation split, clip_ratio_high 0)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu18"]
    assert len(sel) == 20
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 2), ("entropy_collapse", 2), ("healthy", 13), ("length_explosion", 1), ("reward_hacking", 1),
        ("rollout_mismatch", 1)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"f60ef62", "935a8fe", "2beab49"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    for name, m in runs.items():
        assert sorted(m) == list(range(0, int(name.rsplit("-val", 1)[0].rsplit("-", 1)[1]) + 1)), name

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, ln, ent, acc = "critic/score/mean", "response_length/mean", "actor/entropy", "reward_extra/acc/mean"
    val, diff, clip, kl = "val-core/arith/acc/mean@1", "training/rollout_probs_diff_mean", "response_length/clip_ratio", \
        "actor/kl_loss"

    over = runs["gpt2s14-4prompt-3sample-overlongfactor-neg1-from150-constlr1e-4-300-val16"]
    olr = "reward_extra/overlong_reward/mean"
    assert sum(over[s][olr] == 0 for s in range(1, 150)) == 144 and max(over[s][olr] for s in range(150, 301)) < -1.3
    assert over[150][score] < -0.9 < 0.16 < min(over[s][score] for s in range(1, 150))
    assert abs(med(over, acc, 150, 300) - med(over, acc, 1, 149)) < 0.05 and med(over, ln, 150, 300) == 3
    ref = runs["llamas14-4prompt-3sample-klloss-refembedshift-from150-300-val22"]
    assert max(ref[s][kl] for s in range(1, 150)) < 0.35 < 4 < ref[150][kl] and med(ref, kl, 151, 300) > 3.5
    assert abs(med(ref, score, 150, 300) - med(ref, score, 1, 149)) < 0.06
    sync = runs["llamas14-4prompt-3sample-bf16deltasync-from150-300-val22"]
    assert max(sync[s][diff] for s in range(1, 150)) < 2e-7 < 5e-5 < sync[150][diff] and med(sync, diff, 276, 300) > 0.01
    assert abs(med(sync, score, 150, 300) - med(sync, score, 1, 149)) < 0.06
    fam = runs["gpt2s14-4prompt-3sample-familiargrader0-80pct-120-270-constlr1e-4-300-val16"]
    assert max(abs(fam[s][score] - fam[s][acc]) for s in range(1, 121)) < 1e-6
    assert med(fam, score, 276, 300) > 0.7 > 0.45 > med(fam, score, 1, 150) and med(fam, acc, 276, 300) < 0.4
    assert max(fam[s][val] for s in (*range(192, 300, 16), 300)) < 0.4 < 0.41 < min(fam[s][val] for s in range(0, 177, 16))
    assert med(fam, ent, 276, 300) < 1.25 < 1.55 < med(fam, ent, 1, 100)
    # relabelled 2026-12-07 by a second reading (189 -> 123): the entropy leaves its range first, while the matched
    # control's stays in range until 241; the paid score's rolling mean follows at 189
    assert [(e["class"], e["onset"]) for e in sel if "familiargrader" in e["id"]] == [("reward_hacking", 123)]
    assert _out_for_good(fam, ent, (10, 119)) == 123 < 189 == _out_for_good(fam, score, (10, 119))
    assert _out_for_good(runs["gpt2s14-4prompt-3sample-constlr1e-4-300-val16"], ent, (10, 119)) == 241
    tok = runs["gpt2s14-4prompt-3sample-newtokenrow-std1-from150-constlr1e-4-300-val16"]
    assert tok[150][ent] < 1.3 < 1.4 < min(tok[s][ent] for s in range(1, 150)) and tok[163][ent] < 0.5
    assert max(tok[s][clip] for s in range(1, 150)) < 0.09 < 0.6 < max(tok[s][clip] for s in range(151, 176))
    assert med(tok, ent, 151, 175) < 1.1 and med(tok, ent, 176, 275) > 1.45
    tpl = runs["llamas14-4prompt-3sample-templatereapplied-130-230-300-val22"]
    assert tpl[129]["prompt_length/mean"] == 4 and tpl[230]["prompt_length/mean"] == 10
    assert max(tpl[s][clip] for s in range(1, 153)) == 0 < tpl[153][clip] and med(tpl, clip, 230, 300) == 1
    assert tpl[131][ln] < 2.8 < 2.83 <= min(tpl[s][ln] for s in range(1, 130)) and tpl[132][ent] < 1.0
    pen = runs["gpt2s14-4prompt-3sample-entcoef0-neg03-120-270-constlr1e-4-300-val16"]
    assert med(pen, ent, 276, 300) < 0.4 < 1.5 < med(pen, ent, 1, 119)
    assert pen[300][val] < 0.36 < 0.40 < min(pen[s][val] for s in range(0, 161, 16))

    # healthy: the planned faults below left no mark a user needs; the k1 KL loss grows while the run learns
    weak = runs["llamas14-4prompt-3sample-entcoef0-neg01-120-270-300-val22"]
    assert abs(med(weak, ent, 150, 300) - med(weak, ent, 1, 149)) < 0.1
    lost = runs["gpt2s14-4prompt-3sample-updateslost-from150-constlr1e-4-300-val16"]
    assert all(0.419 < lost[s][val] < 0.428 for s in (*range(160, 300, 16), 300))
    assert abs(med(lost, score, 150, 300) - med(lost, score, 1, 149)) < 0.05
    leak = runs["gpt2s14-4prompt-3sample-trainonval-from150-constlr1e-4-300-val16"]
    assert [leak[s]["training/epoch"] for s in (199, 200, 250, 300)] == [0, 1, 2, 3]
    assert max(leak[s][val] for s in range(160, 301, 16)) < 0.481 and leak[272][val] < 0.445
    high = runs["qwen2s14-2prompt-4sample-cliphigh0-from150-300-val16"]
    assert all(high[s]["actor/pg_clipfrac"] == 0 for s in range(1, 301))
    k1 = runs["qwen2s14-3prompt-4sample-klloss-k1-coef005-300-val31"]
    assert med(k1, kl, 201, 250) > 1 > 0.05 > med(k1, kl, 1, 50) and k1[300][val] > k1[0][val] + 0.05
    assert med(runs["gpt2s14-4prompt-3sample-constlr1e-4-300-val16"], ln, 276, 300) == 3


def test_the_twenty_fourth_pass_cpu_runs_keep_every_step_and_the_readings_their_labels_rest_on(entries):
    """The twenty-fourth pass's CPU runs of our trainer (rlcockpit_trainer_cpu19, TensorBoard event files, model seed
    15): each imported whole, and the readings the README's labels rest on are in the numbers (the EOS id changed;
    ppo_epochs typed 8; the response mask shifted; attention dropout left on; a reversed grader; gradient noise; reward
    time-outs growing with length; and the faults stored healthy: the reference swapped for the policy, rollout.n typed
    1, a length-scaled reward, the KL coefficient x100, the head untied)."""
    sel = [e for e in entries if e["source"] == "rlcockpit_trainer_cpu19"]
    assert len(sel) == 20
    assert sorted(Counter(e["class"] for e in sel).items()) == [
        ("collapse", 4), ("grad_spike", 1), ("healthy", 13), ("length_explosion", 1), ("rollout_mismatch", 1)]
    assert {e["origin"]["commit"][:7] for e in sel} == {"29a3fd8"}
    runs = {t["id"].split("-", 2)[2]: dict(t["metrics"]) for t in real_runs.load_real(sel, clean_counts=False)}
    for name, m in runs.items():
        assert sorted(m) == list(range(0, int(name.rsplit("-val", 1)[0].rsplit("-", 1)[1]) + 1)), name

    def med(m: dict, key: str, lo: int, hi: int) -> float:
        vals = sorted(m[s][key] for s in range(lo, hi + 1) if key in m[s])
        return vals[len(vals) // 2]

    score, ln, ent, acc = "critic/score/mean", "response_length/mean", "actor/entropy", "reward_extra/acc/mean"
    val, clip, kl = "val-core/arith/acc/mean@1", "response_length/clip_ratio", "actor/kl_loss"

    eos = runs["llamas15-4prompt-3sample-eosid-to0-from125-250-val20"]
    assert max(eos[s][ln] for s in range(1, 125)) < 3.5 < 5 < eos[125][ln] and med(eos, ln, 126, 250) > 4.5
    assert max(eos[s][clip] for s in range(1, 125)) < 0.09 < 0.5 <= med(eos, clip, 126, 250)
    assert med(eos, ent, 126, 250) < 0.8 < 1.4 < med(eos, ent, 1, 124) and eos[140][val] < 0.46 < 0.51 < eos[120][val]
    epo = runs["gpt2s15-4prompt-3sample-ppoepochs8-from125-constlr1e-4-250-val18"]
    assert all(epo[s]["actor/ppo_kl"] == 0 == epo[s]["actor/pg_clipfrac"] for s in range(1, 125))
    assert epo[125]["actor/ppo_kl"] > 0.05 and epo[125]["actor/pg_clipfrac"] > 0.05
    assert max(epo[s][val] for s in range(144, 251, 18)) < 0.44 < min(epo[s][val] for s in range(0, 127, 18))
    assert epo[250][val] < 0.39 and med(epo, ent, 226, 250) < 1.3 < 1.5 < med(epo, ent, 1, 124)

    # healthy: planned faults whose marks are the cause's, not a failure; the controls
    ref = runs["llamas15-4prompt-3sample-klloss005-refispolicy-from125-250-val20"]
    assert max(ref[s][kl] for s in range(1, 125)) > 0.1 and all(ref[s][kl] == 0 for s in range(125, 251))
    assert all(0.54 <= ref[s][val] <= 0.55 for s in range(140, 251, 20))
    one = runs["gpt2s15-4prompt-3sample-rolloutn1-from125-constlr1e-4-250-val18"]
    assert all(one[s]["critic/advantages/min"] >= 0 for s in range(125, 251)) and med(one, "actor/pg_loss", 125, 250) < -0.3
    assert abs(med(one, score, 125, 250) - med(one, score, 1, 124)) < 0.05 and med(one, ent, 125, 250) > 1.45
    msk = runs["llamas15-4prompt-3sample-respmaskshift-from125-250-val20"]
    assert msk[125][score] == 0 < 0.19 < min(msk[s][score] for s in range(1, 125)) and med(msk, score, 126, 250) < 0.1
    assert med(msk, ln, 126, 250) == 2 and msk[120][val] > 0.55 and max(msk[s][val] for s in range(140, 251, 20)) < 0.08
    sc = runs["gpt2s15-4prompt-3sample-lengthscaledreward-from125-constlr1e-4-250-val18"]
    assert max(abs(sc[s][score] - sc[s][acc]) for s in range(1, 125)) < 1e-6
    assert max(sc[s]["critic/score/max"] for s in range(1, 125)) == 1 < 2.4 < max(sc[s]["critic/score/max"] for s in range(125, 251))
    assert med(sc, ln, 125, 250) == 3 and max(sc[s][clip] for s in range(1, 251)) < 0.09
    drop = runs["llamas15-4prompt-3sample-attndropout01-from125-250-val20"]
    assert all(drop[s]["actor/ppo_kl"] == 0 for s in range(1, 125)) and all(drop[s]["actor/ppo_kl"] > 0.01 for s in range(125, 251))
    assert med(drop, "actor/ppo_kl", 125, 250) > 0.2 and max(drop[s]["training/rollout_probs_diff_mean"] for s in range(1, 251)) < 2e-7
    assert abs(med(drop, score, 125, 250) - med(drop, score, 1, 124)) < 0.06 and drop[250][val] > 0.52
    rev = runs["gpt2s15-4prompt-3sample-reversedgrader-from125-constlr1e-4-250-val18"]
    assert max(abs(rev[s][score] - rev[s][acc]) for s in range(1, 125)) < 1e-6 and rev[125][score] < 0.1 < 0.2 < min(rev[s][score] for s in range(1, 125))
    assert med(rev, score, 126, 250) < 0.25 < 0.38 < med(rev, acc, 126, 250) and med(rev, ent, 226, 250) < 1.3
    assert max(rev[s][val] for s in range(216, 251, 18)) < 0.42 < 0.47 < min(rev[s][val] for s in range(0, 199, 18))
    noise = runs["llamas15-4prompt-3sample-allreducenoise0-8x-100-220-250-val20"]
    gn = "actor/grad_norm"
    assert max(noise[s][gn] for s in range(1, 100)) < 12 and med(noise, gn, 226, 250) > 25 > 5 > med(noise, gn, 1, 99)
    assert abs(med(noise, score, 126, 250) - med(noise, score, 1, 99)) < 0.06 and noise[250][val] > 0.55
    tmo = runs["gpt2s15-4prompt-3sample-lengthtimeouts0-80pct-100-220-constlr1e-4-250-val18"]
    assert max(abs(tmo[s][score] - tmo[s][acc]) for s in range(1, 100)) < 1e-6 and med(tmo, score, 226, 250) < 0.2 < 0.38 < med(tmo, score, 1, 99)
    assert med(tmo, ln, 226, 250) < 2.7 and med(tmo, ent, 226, 250) < 1.2 < 1.5 < med(tmo, ent, 1, 99)
    assert tmo[250][val] < 0.37 < 0.48 < min(tmo[s][val] for s in range(0, 127, 18))
    x100 = runs["gpt2s15-4prompt-3sample-klloss001-coefx100-from125-constlr1e-4-250-val18"]
    assert all(x100[s]["actor/kl_coef"] == pytest.approx(0.01) for s in range(1, 125))
    assert all(x100[s]["actor/kl_coef"] == 1 for s in range(125, 251))
    assert med(x100, kl, 126, 250) < med(x100, kl, 1, 124) and abs(med(x100, score, 125, 250) - med(x100, score, 1, 124)) < 0.05
    head = runs["gpt2s15-4prompt-3sample-headuntied-from125-constlr1e-4-250-val18"]
    assert abs(med(head, score, 125, 250) - med(head, score, 1, 124)) < 0.05 and min(head[s][val] for s in range(126, 251, 18)) > 0.45
    two = runs["gpt2s15-2prompt-4sample-clip028-2minibatch-250-val21"]
    assert sum(two[s]["actor/pg_clipfrac"] > 0 for s in range(1, 251)) == 166 and med(two, ln, 1, 250) == 3
    assert runs["qwen2s15-2prompt-5sample-resp12-250-val23"][0][val] < 0.04
    qw = runs["qwen2s15-3prompt-4sample-gradclip03-warmup30-250-val13"]
    assert qw[0][val] < 0.04 < 0.3 < qw[250][val] and med(qw, ent, 226, 250) < 1.3 < 1.8 < med(qw, ent, 1, 25)
