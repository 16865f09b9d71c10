"""Detection quality of rlcockpit's health detectors vs rlwatch on the labelled corpus (bench/detection_corpus/).

    python bench/detection_quality.py --json                    # tuning and held-out, side by side
    python bench/detection_quality.py --markdown                # tables for BENCHMARKS.md
    python bench/detection_quality.py --split tuning --list-misses   # per-trace detail (tuning only)
    python bench/detection_quality.py --responsible grad_spike=my_detector   # credit a new detector for a class

The rule, the same for every tool and split: a failure trace counts as detected when an alert (warning or
critical) from a detector responsible for its class STARTS within [onset - 5, onset + 15]; responsible alerts that
start before onset - 5 are early alerts; the delay is the start of the first responsible alert in the window minus
the onset. An alert starts where a detector's findings begin after a quiet logged step. On healthy traces every
critical and every warning counts, from any detector. Targets (held-out): see TARGETS.
Also measured: rlcockpit's per-step detector cost (``HealthMonitor.observe``, wall and thread-CPU µs, p50/p99) and
whether every metric name in the corpus resolves through the metric guide (``rlcockpit.metrics.lookup``).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "detection_corpus" / "gen"))
from corpus_schema import CLASSES, REAL_SOURCES, SOURCES, SPLITS, load_corpus  # noqa: E402
from real_runs import load_real  # noqa: E402

from rlcockpit.health import HealthMonitor  # noqa: E402

WINDOW = (-5, 15)  # detected: a responsible alert starts in [onset - 5, onset + 15]
# Which detectors are responsible for a class: an alert from any other detector neither detects the failure nor
# counts as early. To credit a new detector, add its name here (or pass --responsible CLASS=NAME,NAME).
OURS: dict[str, set[str]] = {
    "collapse": {"reward_cliff", "reward_drop", "kl_spike", "kl_rising", "sample_degeneration", "entropy_explosion",
                 "held_out_drop",
                 "update_size", "length_collapse"},
    "reward_hacking": {"reward_hacking",
                       "reward_divergence"},
    "entropy_collapse": {"entropy_collapse"},
    "loss_divergence": {"nonfinite", "loss_spike", "grad_spike", "value_divergence"},
    "grad_spike": {"grad_spike", "nonfinite"},
    "oom_creep": {"gpu_memory", "memory_growth",
                  "length_memory"},
    "low_gpu_util": {"gpu_utilization", "bottleneck"},
    "rollout_mismatch": {"rollout_mismatch"},
    "throughput_drop": {"throughput_drop", "bottleneck"},
    "length_explosion": {"length_explosion", "truncation"},
}
RLWATCH: dict[str, set[str]] = {  # rlwatch 0.5 has no memory, utilisation, mismatch, throughput or length detector
    "collapse": {"kl_explosion", "reward_hacking", "entropy_collapse"},
    "reward_hacking": {"reward_hacking", "reward_mean_drift"},
    "entropy_collapse": {"entropy_collapse"},
    "loss_divergence": {"loss_nan", "gradient_norm_spike"},
    "grad_spike": {"gradient_norm_spike", "loss_nan"},
}
# real sources a detector change was developed on: their figures are no longer held-out figures (the manifest's
# ``tuned_on`` records the corpus owner's view of each file; this records which detector work looked at a source)
DEVELOPED_ON: dict[str, str] = {
    "grpo_loop_jsonl_public": "reward_divergence's perplexity and correctness checks (issue 29, branch h-detect2); "
                              "its fixed-kl and baseline runs' training metrics read, nothing changed (issue 29, "
                              "branch h-quiet)",
    "tinker_jsonl_public": "held out until scored once (0/4 at aa9b6fd); then changed: reward parts not named for "
                           "format count as task scores (issue 29, branch h-detect2); then its four runs' g and f "
                           "were read: reward_divergence's paired lead of the reward over a task score on the same "
                           "samples (issue 29, branch h-detect8)",
    "rlcockpit_trainer_cpu": "its lr x30 run (gpt2-1prompt-lr30-800, missed at 9a67d21) was read to find why no "
                             "collapse detector fired: entropy_explosion's range rule (issue 29, branch h-detect3); "
                             "then its held-out scores' slides under their range (two evaluations under the "
                             "reference's lowest, each lower than the one before) were scanned for how far healthy "
                             "ones go, nothing changed (issue 29, branch h-lrramp); then every run's ppo_kl for a "
                             "stretch of exact zeros: only the collapse-300 run's (4 PPO epochs from step 200) ends, "
                             "and rollout_mismatch's old-log-probs rule adds an unscored warning at 202 there (issue "
                             "29, branch h-mis15)",
    "rlcockpit_trainer_cpu2": "scored once held out (1 critical, 1.67 warnings per healthy run at 7d6cf40); then its "
                              "healthy lr3e-4 run's single long answers were read: truncation / length_explosion "
                              "persistence and batch-size rules (issue 29, branch h-detect4); then its nines run's "
                              "score, clip ratio, length and validation were read (still missed; issue 29, branch "
                              "h-detect8); then its nines run's score, clip ratio and length again: reward_hacking's "
                              "level re-measured after a change point downwards (issue 29, branch h-detect12); then "
                              "its held-out scores' slides under their range (two evaluations under the reference's "
                              "lowest, each lower than the one before) were scanned for how far healthy ones go, "
                              "nothing changed (issue 29, branch h-lrramp)",
    "trl_cpu_settings2": "scored once held out (2.67 warnings per healthy run at 7d6cf40); then its one-step "
                         "KL/loss/grad blips and shared-machine slowdowns were read: kl_spike, loss_spike, "
                         "grad_spike, kl_rising and CPU throughput_drop rules (issue 29, branch h-detect4); then its "
                         "nines run's reward and rewards/accuracy/mean were read (still missed; issue 29, branch "
                         "h-detect8; read again with its eval_reward in h-detect12, still missed); then its healthy "
                         "lr3e-4 run's KL (0.15-0.6, wandering by a factor of 4) was read to set kl_rising's range "
                         "rule's bar (issue 29, branch h-detect10); then its nines run's reward and "
                         "rewards/accuracy/mean were read: reward_cliff's fall under the task score it equalled warns"
                         " at 159 there, where the paid reward changed at 150 (issue 29, branch h-trlramp); then its "
                         "healthy lr3e-4 run's frac_reward_zero_std (two groups: every group tied on 122-124 by "
                         "chance) was read to size rollout_mismatch's all-tied run rule (issue 29, branch "
                         "h-trl11miss); then the paid reward against the task score it equalled read on every run "
                         "where the two part (where reward_cliff's new parted-both-ways rule would warn), nothing "
                         "changed but that rule's bar (issue 29, branch h-reward13); then the temperature-0.2 run's "
                         "loss, kl and completion lengths at 30-60 read (loss_spike's warning at 55, 195 steps before"
                         " the onset, went: the loss beta x KL where lengths are equal, the length-weighted "
                         "advantages where they differ) (issue 29, branch h-quiet14)",
    "trl_cpu_settings": "its eos-lost length_explosion run's clip ratio and length were read to check that the "
                        "truncation / length_explosion batch-size rules keep it (issue 29, branch h-detect4); then "
                        "its healthy 800-step llama run's step_time was read (a sustained machine slowdown: "
                        "throughput_drop still warns, left; issue 29, branch h-trlslow); then its lr-jump run's KL "
                        "was read: a kl_rising range warning no longer takes the check of the accelerating-rise rule "
                        "(its critical at 264 was lost; issue 29, branch h-ramp); its lr-jump run's kl at 220-256 was"
                        " read (kl_spike's critical now at 254, not 253; issue 29, branch h-early)",
    "rlcockpit_trainer_cpu3": "scored once held out (recall 4/6, 2 criticals on healthy runs, 0.67 warnings per "
                              "healthy run at 2f5980c); then its sparse-reward and one-prompt healthy runs were read:"
                              " count_noise floors of reward_divergence / reward_hacking, reward_hacking's held rise "
                              "(issue 29, branch h-detect5); its temp025 run's entropy read: its fast fall (warned at"
                              " 305) is now the held one, 5 of 6 values under, their mean halved (issue 29, branch "
                              "h-fastfall); then its held-out scores' slides under their range (two evaluations under"
                              " the reference's lowest, each lower than the one before) were scanned for how far "
                              "healthy ones go, nothing changed (issue 29, branch h-lrramp); then its sevens run's "
                              "score, validation, entropy and length were read (left: "
                              "reward_divergence/reward_hacking work, not entropy; issue 29, branch h-entrise)"
                              "; then the sevens run's score and validation read (validation flat while "
                              "the score triples: no rule added, still missed) (issue 29, branch "
                              "h-grader18)",
    "trl_cpu_settings3": "scored once held out (recall 6/7, 1 critical on a healthy run, 0.33 warnings per healthy "
                         "run at 2f5980c); then its log-every-7 KL climb, early reward dip and eval speed were read: "
                         "kl_spike's sudden rule, reward_cliff's min_reference, eval speed/spread not scores (issue "
                         "29, branch h-detect5); then its sevens run's reward and rewards/accuracy/mean were read: "
                         "reward_cliff's fall under the task score it equalled warns at 174 there, where the paid "
                         "reward changed at 150 (issue 29, branch h-trlramp); its lr30 run's kl, learning_rate and "
                         "entropy at 0-270 were read (kl_rising's range warning at 94, a 45-step stretch at 3.5x, 160"
                         " steps before the lr jump): left (issue 29, branch h-early); then its sevens run's reward "
                         "and rewards/accuracy/mean were read: reward_divergence's paired lead judged from the level "
                         "the lead moved down to (issue 29, branch h-lrramp); then the paid reward against the task "
                         "score it equalled read on every run where the two part (where reward_cliff's new "
                         "parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29, branch "
                         "h-reward13); then lr30's kl at 1-300 read: kl_rising's range warning at 94 is a burst "
                         "(0.1-0.47 at 73-112 against a median of 0.036, back by 115), left: no rule found that tells"
                         " it from the range warnings that detect (issue 29, branch h-early16)"
                         "; then read (issue 29, branch h-quiet18): the noclip-lr30 run's kl 1-110 (the early "
                         "kl_rising at 94: a 3-4x burst over 73-112, left as h-early16 did)",
    "rlcockpit_trainer_cpu4": "scored once held out (recall 1/3, 5 criticals on healthy runs, 1.75 warnings per "
                              "healthy run at eabf7b2); then its temperature / lr ramps and its long KL-in-reward run"
                              " were read: slow drifts against the early range, kl_rising's critical (issue 29, "
                              "branch h-detect6); then its lr-ramp run's validation and its 800-step KL-in-reward "
                              "run's entropy and validation were read: held_out_drop's mean of two evaluations, "
                              "entropy_collapse's held-out gain (issue 29, branch h-detect8); then its healthy runs' "
                              "KL bursts, GAE explained variance and host memory: kl_rising warn_hold, "
                              "explained_variance's window median, host_memory's record growth (issue 29, branch "
                              "h-detect7); then its held-out scores' slides under their range (two evaluations under "
                              "the reference's lowest, each lower than the one before) were scanned for how far "
                              "healthy ones go, nothing changed (issue 29, branch h-lrramp); then its held-out and "
                              "score series were surveyed with every developed-on source's (held_out_drop's "
                              "one-evaluation rule with the training reward, issue 29, branch h-slow16: lrramp60 250 "
                              "-> 240); then its GAE runs' critic/values/mean and returns/mean 10-step spreads were "
                              "surveyed (value_divergence's swing rule: healthy ratios <= 1.31) (issue 29, branch "
                              "h-cpu16r)",
    "trl_cpu_settings4": "scored once held out (recall 0/4, 5 criticals on healthy runs, 1.67 warnings per healthy "
                         "run at eabf7b2); then its ramps and its num_iterations=2 run (each value logged twice) were"
                         " read: slow drifts, kl_spike / kl_rising persistence (issue 29, branch h-detect6); then its"
                         " eosbiasramp run's clipped ratio and its 12-completion sevens run's reward and accuracy "
                         "were read: truncation leaving zero, reward_divergence's paired lead (issue 29, branch "
                         "h-detect8); then its healthy runs' KL bursts and the num_iterations=2 run's pairs (KL, "
                         "loss) and its lr-ramp run's KL: batches not logged steps, kl_rising warn_hold (issue 29, "
                         "branch h-detect7); then its healthy num_iterations=2 run's KL was read for kl_rising's "
                         "range rule (issue 29, branch h-detect10); then its lrramp60 run's kl_rising range-rule "
                         "state was read (still missed: its 1-prompt KL's noise bar, 2.8-3x, is above where the KL "
                         "was by step 240; issue 29, branch h-detect12); then its lrramp60 run's range-rule state was"
                         " read again: the last level reference stays while newer ones are not (a warning at 262, "
                         "still 30 steps late; its learning_rate: lr_schedule's climb after the decay, a warning at "
                         "209; issue 29, branch h-ramp); then its lrramp60 run's KL was read again (still missed: "
                         "left, issue 29, branch h-lrramp); then the paid reward against the task score it equalled "
                         "read on every run where the two part (where reward_cliff's new parted-both-ways rule would "
                         "warn), nothing changed but that rule's bar (issue 29, branch h-reward13); then every run's "
                         "grad norm scanned for four steps in a row above the previous 50's 95% quantile "
                         "(grad_spike's new level-shift warning): its iter2-800 healthy run does it at 2.4x their "
                         "median, under the 4x bar, nothing changed (issue 29, branch h-grad14); then its qwen2 iter2"
                         " healthy run's kl (0.3-7 single batches at 100-180, logged twice per batch) was read to "
                         "size the blow-ups rule's floor; nothing changed for it (issue 29, branch h-trlmiss16)"
                         "; then read by h-miss18: the lrramp60 collapse's reward, entropy, length, lr, kl, grad norm by "
                         "15-step means (kl x3 by onset+10 inside what kl_rising allows healthy runs); nothing changed (issue "
                         "29, branch h-miss18)",
    "rlcockpit_trainer_cpu5": "scored once held out (recall 4/6, 0 criticals, 0.25 warnings per healthy run at "
                              "4cc081b); then its stop-token runs' mean / min length, its healthy runs' length dips "
                              "and its eosbias ramp's length and clip ratio were read: length_collapse's own-range "
                              "shrink rule (issue 29, branch h-detect9); then its healthy opo run's host memory "
                              "beside a sparse RSS was read: memory_growth's sparse-RSS check (issue 29, branch "
                              "h-detect10); then its healthy drgrpo cliphigh run's perf/throughput and timing_s split"
                              " were read: throughput_drop's held-level rule (issue 29, branch h-trlslow); then its "
                              "remax lr-ramp run's actor/lr, validation and update metrics were read: lr_schedule's "
                              "climb after the decay (a warning at 205, a cause, not credited); the run stays missed:"
                              " no KL logged, ppo_kl and clip fraction 0, validation 0.495 / 0.473 at 210 / 220 "
                              "within one evaluation's noise of its 0.50-0.56 range (issue 29, branch h-ramp); then "
                              "its remax lr-ramp run's validation was read again and its eosbiasramp run's mean / max"
                              " length: both left (the remax run's validation slide at 210-220, 6x its step-to-step "
                              "noise and 1.5x one evaluation's sampling noise under its range, is smaller than "
                              "healthy runs' held-out slides; the eosbias run's length 3.0 -> 3.25 in the window) "
                              "(issue 29, branch h-lrramp); then its held-out scores' slides under their range (two "
                              "evaluations under the reference's lowest, each lower than the one before) were scanned"
                              " for how far healthy ones go, nothing changed (issue 29, branch h-lrramp); then the "
                              "paid reward against the task score it equalled read on every run where the two part "
                              "(where reward_cliff's new parted-both-ways rule would warn), nothing changed but that "
                              "rule's bar (issue 29, branch h-reward13)"
                              "; then eosbiasramp's response length and clip ratio (120-330) read: +5% by onset+15, "
                              "inside healthy length drift; nothing changed (issue 29, branch h-lag18)"
                              "; then read by h-miss18: the remax lrramp100 collapse's validation, reward, entropy, length and lr "
                              "(validation slides 0.513 -> 0.453 by 230, inside its range's floor until then); nothing changed "
                              "(issue 29, branch h-miss18)"
                              "; then the lenbonusramp run's score minus acc read (leads under one item: "
                              "quiet) (issue 29, branch h-grader18)"
                              "; h-crit per-run diff: the eosbiasramp length_explosion run's truncation critical 304 -> 326 (clip "
                              "ratio kept the level it jumped to; still a miss either way) (issue 29, branch h-crit)",
    "trl_cpu_settings5": "scored once held out (recall 2/5, 1 critical, 1.25 warnings per healthy run at 4cc081b); "
                         "then its eosboost ramp's mean / min length, its gradient-accumulation run's loss and KL and"
                         " its temperature-cut run's entropy were read: length_collapse's shrink rule, loss_spike's "
                         "trailing scale and raw persistence, loss_oscillation's min_values, entropy_collapse's "
                         "sudden fall (issue 29, branch h-detect9); then its dr_grpo lr-ramp run's KL was read (still"
                         " missed: its KL left its range at 205-210, before the labelled onset 218; issue 29, branch "
                         "h-detect10); then its healthy bnpo eval50 run's step_time was read: throughput_drop's "
                         "held-level rule (issue 29, branch h-trlslow); its range-rule state was read again (still "
                         "missed: kl_rising warns at 206, the KL's range left before the entropy's; its "
                         "learning_rate: lr_schedule's climb after the decay, a warning at 206; issue 29, branch "
                         "h-ramp); its healthy dapo-epshigh028 run's KL (0.02 -> 0.3 over steps 30-50, then flat) "
                         "read, nothing changed (issue 29, branch h-quiet); its drgrpo lrramp100 run's findings were "
                         "printed: the kl_rising warning at 206, 6 steps into the lr ramp, left as a real early sign "
                         "(issue 29, branch h-early); then its dr_grpo lr-ramp run's KL was read again: kl_rising's "
                         "range rule critical once the KL kept climbing after the warning (issue 29, branch "
                         "h-lrramp); then the paid reward against the task score it equalled read on every run where "
                         "the two part (where reward_cliff's new parted-both-ways rule would warn), nothing changed "
                         "but that rule's bar (issue 29, branch h-reward13); then lrramp100's kl and learning_rate at"
                         " 100-240 read: the range warning at 206 follows the lr ramp from 202 (4.2x at 206), an "
                         "early sign of the labelled collapse, left (issue 29, branch h-early16)"
                         "; then the lenbonusramp run's reward minus accuracy read (leads under one item: "
                         "quiet) (issue 29, branch h-grader18)",
    "trl_state_public8": "scored once held out (0 alerts at 52156b6; 1 reward_divergence warning on its healthy "
                         "4-function run after h-detect8's paired lead, at e4eca3c); then that run's reward parts "
                         "were read: no paired lead over a part the reward pays in full (issue 29, main)",
    "rlcockpit_trainer_cpu6": "scored once held out (at bd42ad5: recall 3/6, 1 critical on healthy runs; the critical"
                              " was length_collapse's empty rule, changed on main at 63eaea5); then its judge199ramp "
                              "run's validation, reward and reward_extra parts were read: reward_divergence's "
                              "held-out fall while the reward holds and another part of it rises (issue 29, branch "
                              "h-detect11); its lr-ramp run's KL loss and its leak run's host memory and sparse RSS "
                              "were read: kl_rising's range rule (that run still found late, at 266), memory_growth "
                              "judging the machine's memory beside a sparse RSS (issue 29, branch h-detect10); then "
                              "its k3+ lr-ramp run's KL loss, actor/lr and kl_rising's range-rule state were read: "
                              "the range rule's factor once the lr was raised above its reference (issue 29, branch "
                              "h-detect12); then its held-out scores' slides under their range (two evaluations under"
                              " the reference's lowest, each lower than the one before) were scanned for how far "
                              "healthy ones go, nothing changed (issue 29, branch h-lrramp); then its healthy "
                              "gae-klreward-adaptive run's entropy (25-step medians) was read for an entropy-rise "
                              "rule, not adopted (issue 29, branch h-entrise); then its leak16mb run's machine memory"
                              " and sparse process RSS were read: a machine-memory warning held for the next RSS "
                              "reading would find it at 218 (onset 170), not adopted (issue 29, branch h-cpu11miss); "
                              "then its judge199ramp run's critic/score/mean and reward_extra/acc/mean at 196-216 "
                              "read for reward_cliff's new fell-under warning at 215 (the judge's pay under the "
                              "accuracy, a reward_hacking run: not scored) (issue 29, branch h-cliff); then the paid "
                              "reward against the task score it equalled read on every run where the two part (where "
                              "reward_cliff's new parted-both-ways rule would warn), nothing changed but that rule's "
                              "bar (issue 29, branch h-reward13); then its GAE runs' critic/values/mean and "
                              "returns/mean 10-step spreads were surveyed (value_divergence's swing rule: healthy "
                              "ratios <= 1.31) (issue 29, branch h-cpu16r); then its oom_creep run's "
                              "perf/cpu_memory_used_gb and sparse system/proc_rss_gb were read, nothing changed "
                              "(issue 29, branch h-quiet17)"
                              "; then read (issue 29, branch h-quiet18): the leak16mb oom_creep run's machine "
                              "memory and RSS (unchanged)",
    "trl_cpu_settings6": "scored once held out (at bd42ad5: recall 2/6, 2 criticals on healthy runs from the same "
                         "length_collapse rule); then its brevityramp run's reward and accuracy, its judge run's "
                         "evaluations and its healthy GSPO run's reward and accuracy were read: the paired lead "
                         "judged on its own noise, correctness flat against the reward over the same steps (issue 29,"
                         " branch h-detect11); its lr-ramp run's KL and its healthy runs' KL were read: kl_rising's "
                         "range rule (issue 29, branch h-detect10); then its lr-ramp run's KL beside its learning "
                         "rate was read: kl_rising's range rule with a raised lr; its digitvote160 run's entropy, "
                         "reward and rewards/accuracy/mean were read: entropy_collapse's reward exemption needs the "
                         "accuracy beside it to gain too (issue 29, branch h-detect12); its topent02 run's entropy "
                         "read: no fast fall under entropy_collapse's held fast fall (issue 29, branch h-fastfall); "
                         "then its judge199ramp run's reward, rewards/accuracy/mean and eval scores were read (still "
                         "missed: the judge's pay for wrong answers is clear from ~190, the window's end; issue 29, "
                         "branch h-lrramp); then the paid reward against the task score it equalled read on every run"
                         " where the two part (where reward_cliff's new parted-both-ways rule would warn), nothing "
                         "changed but that rule's bar (issue 29, branch h-reward13)"
                         "; then the judge199ramp run's paid reward minus accuracy and eval accuracy read "
                         "(eval every 25: first fall at 200, still missed) (issue 29, branch h-grader18)",
    "rlcockpit_trainer_cpu7": "scored once held out (at e41fbd3: recall 3/5, 0 alerts on healthy runs); then its "
                              "emptypasses150 run's critic/score/mean and reward_extra/acc/mean were read: "
                              "reward_divergence's lead opened over a score the reward had equalled (issue 29, branch"
                              " h-detect13); then its klloss-negcoef200 run's actor/kl_loss was read: kl_rising's "
                              "range rule keeps the level verdict of the reference a held departure left (issue 29, "
                              "branch h-detect14); then its healthy rppbaseline-sapo run's response length and clip "
                              "ratio were read: lengths up 1.4x with a few answers cut, as in a length explosion's "
                              "first steps, so truncation's leaving-zero bar stays (issue 29, branch h-trlramp); its "
                              "refnoise3x200 run's actor/kl_loss at 100-215 (kl_rising's range warning at 174, a "
                              "12-step burst at 3.4x) and its negcoef200 run's at 100-260 were read: left (issue 29, "
                              "branch h-early); then its held-out scores' slides under their range (two evaluations "
                              "under the reference's lowest, each lower than the one before) were scanned for how far"
                              " healthy ones go, nothing changed (issue 29, branch h-lrramp); then its healthy "
                              "rppbaseline-sapo run's entropy, score, length and grad norm were read: its entropy "
                              "rises 1.57 -> 1.95 over steps 126-226, as fast as cpu9's temperature ramp (issue 29, "
                              "branch h-entrise); then reward_cliff's fell-under gate values on its rewardsignflip "
                              "run read (209 kept) (issue 29, branch h-cliff); then the paid reward against the task "
                              "score it equalled read on every run where the two part (where reward_cliff's new "
                              "parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29, "
                              "branch h-reward13); then refnoise3x200's actor/kl_loss at 100-205 read: kl_rising's "
                              "range warning at 174 is a burst (0.14-0.9 at 162-172 against 0.06, back by 176), left:"
                              " no rule found that tells it from the range warnings that detect (issue 29, branch "
                              "h-early16)",
    "trl_cpu_settings7": "scored once held out (at e41fbd3: recall 2/5, 1 critical and 3 warnings on healthy runs); "
                         "then its healthy luspo run's kl was read: kl_spike's critical clears the warning's absolute"
                         " bar; its emptypasses150 run's reward and rewards/accuracy/mean were read: "
                         "reward_divergence's lead opened; its healthy vespo run's entropy was read: "
                         "entropy_collapse's fast fall judged smoothed against smoothed (issue 29, branch "
                         "h-detect13); then its negbeta200 run's kl was read for kl_rising's range rule (still "
                         "missed; issue 29, branch h-detect14); then its slowgenramp run's and healthy vespo run's "
                         "step_time were read (the ramp still found at 261, the vespo slowdown still warned: left; "
                         "issue 29, branch h-trlslow); then its range-rule state was read again: the last level "
                         "reference stays while the newer ones, with the 185-206 bump in their newer half, are not "
                         "(issue 29, branch h-ramp); then its slowgenramp run's step_time was read again (a rise to "
                         "1.4x by 220 against a level that had wandered 0.13 -> 0.2 before the ramp: left to the "
                         "throughput work; issue 29, branch h-trlramp); its negbeta200 run's kl at 100-250 was read "
                         "(its range warning at 230 is the detection; nothing changed; issue 29, branch h-early); "
                         "then its healthy vespo-adafactor run's entropy (25-step medians) was read for an "
                         "entropy-rise rule, not adopted (issue 29, branch h-entrise); then the paid reward against "
                         "the task score it equalled read on every run where the two part (where reward_cliff's new "
                         "parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29, branch "
                         "h-reward13); then every run's grad norm scanned for a level shift and the "
                         "vespo-adafactor-600 healthy run's read at 440-520 (ordinary swings of 0.01-66, no four "
                         "steps above the previous 50's largest): grad_spike's new level-shift warning stays off it; "
                         "its minnew10at200 length run gets one at 212, after its onset (issue 29, branch h-grad14); "
                         "then its slowgenramp run's step_time was read; nothing changed for it (issue 29, branch "
                         "h-trlmiss16)"
                         "; then read (issue 29, branch h-quiet18): the vespo healthy run's reward 540-600 (one "
                         "prompt: reward_cliff at 599 left)"
                         "; then slowgenramp's step_time (150-270) read; nothing changed (issue 29, branch h-lag18)",
    "tinker_jsonl_public2": "scored held out at 30dd218 (recall 4/6, 3 alerts before onset-5, median delay 4.5); then"
                            " its two llmjudge runs' reward g and correctness f were read: reward_divergence's "
                            "pulling-away lead escalates to critical once lead and rise are each critical_factor x "
                            "their bars (issue 29, branch h-detect14); its two llmjudge runs' findings and labels "
                            "were printed: the alerts at 28, 31 and 34 fall in the onset range the labels call "
                            "defensible (26-33), left (issue 29, branch h-early); then Easy-llmjudge's reward/f and "
                            "reward/g at 0-50 read: g rises 0.14 -> 0.2-0.3 from ~26 while f stays ~0: the alerts at "
                            "28 and 31 (and Medium-llmjudge's at 34) are early signs of the hacking, left (issue 29, "
                            "branch h-early16)",
    "trl_state_public3": "scored held out at 30dd218 (recall 1/1, median delay 15); then its run's clipped ratio, "
                         "mean / min length were read: truncation's standing ratio is a change once the share of "
                         "answers that fit the limit halved (issue 29, branch h-detect14)",
    "rlcockpit_trainer_cpu8": "scored once held out at 331a9ce (recall 4/8, 2 criticals and 0.67 warnings per healthy"
                              " run); then its healthy pass@k calclogprobs run's actor/ppo_kl was read: update_size "
                              "judges a signed estimate by the median of its last 3 against its warm-up magnitude "
                              "(issue 29, branch h-detect16); its slow-reward run's timing_s split was read: "
                              "throughput_drop compares a phase that grew from under phase_min (issue 29, branch "
                              "h-detect18); its accelerating leak's host memory was read: memory_growth's sign trend "
                              "(issue 29, branch h-detect19); its stuck-loader and weight-decay runs' entropy, "
                              "training score and validation accuracy were read: entropy_collapse's slow fall judged "
                              "by a held-out score since the drift's start (issue 29, branch h-stuck); its refswap "
                              "run's actor/kl_loss at 0-215 was read (kl_rising's range warning at 74, a 16-step "
                              "burst at 4.4x): left (issue 29, branch h-early); then its held-out scores' slides "
                              "under their range (two evaluations under the reference's lowest, each lower than the "
                              "one before) were scanned for how far healthy ones go, nothing changed (issue 29, "
                              "branch h-lrramp); then its accelleak150 run's machine memory and sparse process RSS "
                              "were read: a machine-memory warning held for the next RSS reading would find it at 262"
                              " (onset 170), not adopted (issue 29, branch h-cpu11miss); then the paid reward against"
                              " the task score it equalled read on every run where the two part (where reward_cliff's"
                              " new parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29,"
                              " branch h-reward13); then refswap-s3at200's actor/kl_loss at 1-130 read: kl_rising's "
                              "range warning at 74 is a burst (0.07-0.26 at 59-76 against 0.026, back by 77), left "
                              "(issue 29, branch h-early16); then its stuck-loader run's entropy slow-fall state was "
                              "read by mistake (a search by run name); nothing changed for it (issue 29, branch "
                              "h-trlmiss16); then its GAE runs' critic/values/mean and returns/mean 10-step spreads "
                              "were surveyed (value_divergence's swing rule: healthy ratios <= 1.31) (issue 29, "
                              "branch h-cpu16r); then its oom_creep run's perf/cpu_memory_used_gb and sparse "
                              "system/proc_rss_gb were read, nothing changed (issue 29, branch h-quiet17)"
                              "; then read (issue 29, branch h-quiet18): the accelleak oom_creep run's machine "
                              "memory and RSS, the refswap run's KL 1-110 (unchanged)",
    "trl_cpu_settings8": "scored once held out at 331a9ce (recall 3/7, 0.33 warnings per healthy run); then its "
                         "loss-scale run's grad_norm was read: grad_spike's huge-ratio path (issue 29, branch "
                         "h-detect17); its bnpo run's kl: batches logged in turn count as repeats (issue 29, branch "
                         "h-detect16); then its slowrewardramp and lossscale runs' step_time were read (the ramp's "
                         "warning at 221 kept, its lossscale run's 13x slowdown at 166 left; issue 29, branch "
                         "h-trlslow); its wdneg200 run's kl at 80-120 was read: a kept level reference must be the "
                         "second level one in a row (issue 29, branch h-ramp); its stuck-loader run's entropy, reward"
                         " and evaluation reward were read: entropy_collapse's slow fall judged by TRL's evaluation "
                         "reward (issue 29, branch h-stuck); its beta01 refswap run's kl at 130-160 was read: "
                         "kl_spike judges its tail check on the lowest held value, not their median (a critical at "
                         "157 gone); its slowrewardramp run's finding and label printed: the throughput_drop warning "
                         "at 221, 21 steps into the ramp, left as a real early sign (issue 29, branch h-early); then "
                         "its gentemp2 run's entropy, length, reward, kl, grad norm, loss and clip ratios were read "
                         "(left missed: no logged series says the sampler and the trainer differ), and its "
                         "stuck-loader run's entropy drift state and evaluation reward: entropy_collapse's held-out "
                         "score up by less than its noise is no gain (issue 29, branch h-entrise); then the paid "
                         "reward against the task score it equalled read on every run where the two part (where "
                         "reward_cliff's new parted-both-ways rule would warn), nothing changed but that rule's bar "
                         "(issue 29, branch h-reward13); then slowrewardramp's step_time at 190-285 read: the warning"
                         " at 221 is the ramp from 200 (0.056 -> 0.14 s), the failure's own sign before its label "
                         "(230), left (pinned by a test against the new step-to-step rule) (issue 29, branch "
                         "h-early16); then its gentemp2at200 run's kl, entropy, length and reward around 200 and its "
                         "stuck-loader run's entropy slow-fall state were read; nothing changed for them (issue 29, "
                         "branch h-trlmiss16)"
                         "; then gentemp2at200's entropy, frac_reward_zero_std, reward_std, completion length, kl and"
                         " loss (170-225) and slowrewardramp's step time read; nothing changed (issue 29, branch "
                         "h-lag18)"
                         "; then read by h-miss18: the stuckloader entropy collapse's slow-fall drift state 170-230 (its fall "
                         "passes the drop bar with the training reward climbing and no held-out verdict until 225); nothing "
                         "changed (issue 29, branch h-miss18)",
    "verl_console_public12": "scored once held out at 331a9ce (0/1); then its entropy was read: entropy_explosion's "
                             "noise level from the first step (issue 29, branch h-detect17)",
    "trl_console_public12": "scored once held out at 331a9ce (2 healthy runs, no alert); its per-run outcome was "
                            "shown to h-detect16/17 (nothing changed for it)",
    "trl_csv_public13": "scored once held out at 331a9ce (1.40 warnings per healthy run); then its log-prob gap and "
                        "entropy were read (issue 29, branch h-detect16): rollout_mismatch re-bases on the level the "
                        "gap settles at (issue 29, branch h-detect20); its healthy gsm8k-full run's entropy was read:"
                        " entropy_collapse's low-level warning needs the drift_smooth mean under the bar too (issue "
                        "29, branch h-stuck); then the log-prob gap of its two runs still warned (sft-start 103, "
                        "entropy-control 296) was read and left as is (a gap that doubles over 100-500 steps; no "
                        "sound rule tells it at 103 from a growing fault), and its full-lr2e-6 run's fast-fall "
                        "warning at 33 went with entropy_collapse's noise bar (issue 29, branch h-quiet); its "
                        "full-lr2e-6 run's entropy after step 30 was read: it holds at ~0.53 of its earlier median, "
                        "no halving, under entropy_collapse's held fast fall (issue 29, branch h-fastfall)",
    "trl_state_public13": "scored once held out at 331a9ce (2 criticals, 9 warnings on its one healthy run); then its"
                          " long-answer episodes were read: length_explosion's critical holds on 2 checks (issue 29, "
                          "branch h-detect16); then its entropy (10-step means of 0.06-0.19, 0.66 in the first "
                          "episode) was read: entropy_explosion's critical is a multiple of at least the guide's "
                          "critical_from, an event ends after 5 logging intervals of quiet at least, "
                          "entropy_collapse's fast fall must leave the run's own swings; then its clip ratio and mean"
                          " terminated length were read: length_explosion's turn is left to truncation while the "
                          "answers that end keep their length, and entropy_explosion / truncation raise a new warning"
                          " event only above the peak of the events the run recovered from (issue 29, branch "
                          "h-quiet); its entropy's swings read again: quiet under entropy_collapse's held fast fall "
                          "(issue 29, branch h-fastfall)",
    "trl_state_public14": "scored once held out (1 healthy run: 1 critical + 2 warnings at d482f29); then its reward "
                          "was read: reward_cliff's warm-up scale is at least sqrt(2) x the logged reward spread (one"
                          " right answer of 16 is no level to fall from) (issue 29, branch h-rewardfall); its "
                          "grad_norm, frac_reward_zero_std and reward were read: grad_spike judges a step against the"
                          " last steps that had a learning signal (a norm above 0, not every group tied), its warm-up"
                          " level too (issue 29, branch h-sparsegrad); then its per-run outcomes were printed, "
                          "nothing read or changed for it (issue 29, branch h-entropyup)",
    "rlcockpit_trainer_cpu9": "scored once held out (recall 5/8, 1 healthy critical, 0.33 warnings per healthy run at"
                              " d482f29); then its shuffledlabels200 run's paid score was read: reward_cliff keeps a "
                              "drop open against its frozen reference, not the EMA that follows it down (issue 29, "
                              "branch h-rewardfall); its 1-prompt 2-sample run's and reward x100 run's "
                              "actor/grad_norm were read: grad_spike's reference is the last steps with a gradient, "
                              "not the last logged steps (issue 29, branch h-sparsegrad); its dppo_tv run's clip "
                              "ratio and length were read, its truncation critical left: the ratio rose from its "
                              "warm-up 25% to 10-step means of 51-56% over steps 21-60 before it fell (branch "
                              "h-sparsegrad); then its tempramp run's entropy (left missed: a healthy run's entropy "
                              "rises as fast and further, see the report) and its dedupscan run's timing_s split were"
                              " read: throughput_drop's one-phase growth rule (issue 29, branch h-entropyup); then "
                              "its held-out scores' slides under their range (two evaluations under the reference's "
                              "lowest, each lower than the one before) were scanned for how far healthy ones go, "
                              "nothing changed (issue 29, branch h-lrramp); then its tempramp run's entropy, score, "
                              "length, grad norm and validation were read again beside rlcockpit_trainer_cpu7's "
                              "healthy rppbaseline-sapo run (left missed: no series tells the ramp's rise from that "
                              "run's; issue 29, branch h-entrise); its dppotv run's clip ratio read again and its "
                              "llamas5-lora8 length run's response_length/max and clip ratio read: the dppotv "
                              "critical left (its 10-step mean reaches 66% cut: 34% of answers fit, under half the "
                              "warm-up's 75%, over 10 steps), the 5-token 'limit' of the llamas5 run was a maximum no"
                              " answer was cut at (its limit is 8; issue 29, branch h-quiet); then reward_cliff's "
                              "fell-under gate values on its shuffledlabels200 run read (209 kept) (issue 29, branch "
                              "h-cliff); then the paid reward against the task score it equalled read on every run "
                              "where the two part (where reward_cliff's new parted-both-ways rule would warn), "
                              "nothing changed but that rule's bar (issue 29, branch h-reward13); then its dppotv "
                              "run's clip ratio over 1-80 read again against truncation's came-back rule (no step "
                              "back at the warm-up level after 62% at 18-20): its critical at 20 stays (issue 29, "
                              "branch h-quiet16)"
                              "; then read by h-miss18: the tempramp collapse's entropy, reward, length and validation (entropy "
                              "+12% by onset+15, as healthy runs' entropy also rises); nothing changed (issue 29, branch h-miss18)"
                              "; h-crit per-run diff: the lr10x-at200 collapse's kl_rising critical at 222 held as a warning "
                              "(truncation critical at 222 unchanged); the dppotv healthy truncation critical at 20 stays (no lr "
                              "warm-up, no level change) (issue 29, branch h-crit)",
    "rlcockpit_trainer_cpu10": "scored once held out (recall 4/6, 2 criticals on healthy runs, 0.89 warnings per "
                               "healthy run at 884cba3); then its valleak16mb run's and two qwen2s6 healthy runs' "
                               "(ent0005-resp24, constlr5e-5-1000) perf/cpu_memory_used_gb and system/proc_rss_gb "
                               "were read: memory_growth keeps each sparse RSS reading with the machine's level when "
                               "read, the machine's climb before the first reading raises the host bar, and RSS "
                               "readings that grew past it let the machine series be judged by the process's bar "
                               "(issue 29, branch h-memnoise); then its leading1bias run's critic/score/mean and "
                               "reward_extra/acc/mean were read: reward_divergence's pulling-away lead judges verl's "
                               "correctness field logged beside the score, not only critic/score/<fn> parts (issue "
                               "29, branch h-hack); then its 1-prompt 16-sample entropy-bonus run's and 3-prompt "
                               "3-sample run's actor/grad_norm, critic/advantages/max/min and score were read: "
                               "grad_spike counts a step whose every advantage is 0 as one without a learning signal "
                               "(the entropy term's norm), and calls a second spike critical only within a burst of "
                               "10 logged steps (or at 100x its median); the 3-sample run's two one-step warnings "
                               "left (issue 29, branch h-gradcrit); then its healthy 1.5-cycle cosine run's actor/lr "
                               "was read: lr_schedule's climb must pass the peak the lr first fell from (issue 29, "
                               "main); then its held-out scores' slides under their range (two evaluations under the "
                               "reference's lowest, each lower than the one before) were scanned for how far healthy "
                               "ones go, nothing changed (issue 29, branch h-lrramp); then its healthy "
                               "resp16-constlr5e-5-1000 run's entropy (25-step medians) was read for an entropy-rise "
                               "rule, not adopted (issue 29, branch h-entrise); then reward_cliff's fell-under gate "
                               "values on its healthy gradetrunc2chars run read (no warning before or after) (issue "
                               "29, branch h-cliff); then the paid reward against the task score it equalled read on "
                               "every run where the two part (where reward_cliff's new parted-both-ways rule would "
                               "warn), nothing changed but that rule's bar (issue 29, branch h-reward13); then its "
                               "oom_creep run's perf/cpu_memory_used_gb and sparse system/proc_rss_gb were read, "
                               "nothing changed (issue 29, branch h-quiet17)"
                               "; then read (issue 29, branch h-quiet18): the valleak oom_creep run's machine "
                               "memory and RSS (unchanged)",
    "trl_cpu_settings9": "scored once held out (recall 5/7, 0 criticals, 0.2 warnings per healthy run at d482f29); "
                         "then its shuffledlabelsramp150-300 run's reward and kl were read: a slow-fall test against "
                         "the early level dates it at 264, not by 230; left missed (issue 29, branch h-rewardfall); "
                         "its no-clip run's and reward x100 run's grad_norm and frac_reward_zero_std were read: "
                         "grad_spike judges a step against the steps that had a learning signal (issue 29, branch "
                         "h-sparsegrad); then its iter3-eps10 run's clip ratio and KL were read: update_size's range "
                         "rule needs the bar to have been rare before, kl_rising's acceleration warning a level not "
                         "held within its range window (issue 29, branch h-entropyup); then its iter3-eps10 run's "
                         "clip ratio and lr were read: update_size's clipping-stopped rule (a clip ratio above 0 on "
                         "half the steps, then exactly 0 for 15); its shuffledlabelsramp150-300 run's reward and "
                         "rewards/accuracy/mean were read again: reward_cliff's fall under the task score it equalled"
                         " (issue 29, branch h-trlramp); its shuffledlabelsramp run's kl at 15-40 was read: "
                         "kl_spike's critical needs each held value nearer their median than the reference (a "
                         "critical at 37 gone); its refdrift01 run's kl at 60-180 read (its range warning at 164 is "
                         "the detection; issue 29, branch h-early); then reward_cliff's fell-under gate values and "
                         "equal-stretch noise on its shuffledlabelsramp run read (218 kept) (issue 29, branch "
                         "h-cliff); then the paid reward against the task score it equalled read on every run where "
                         "the two part (where reward_cliff's new parted-both-ways rule would warn), nothing changed "
                         "but that rule's bar (issue 29, branch h-reward13)",
    "trl_cpu_settings10": "scored once held out (recall 6/7, 2 criticals on healthy runs, 0.50 warnings per healthy "
                          "run at 884cba3); then its GSPO temp07 run's kl was read: kl_spike needs the held median "
                          "above all but one of the trailing window's values (a heavy-tailed KL's single batches of "
                          "0.5-2.5 make three of 0.27-0.78 no jump); its CISPO syncref5 run's entropy was read: "
                          "entropy_explosion's ratio critical holds for sustain checks of its own, as the warning "
                          "does; its betadecay length-explosion run's length, clip ratio, kl and entropy were read: "
                          "left missed (issue 29, branch h-trlcrit); then its healthy syncref10 run's reward, "
                          "rewards/accuracy/mean and completions/mean_length were read: reward_divergence's "
                          "length-bonus rule does not judge a score the reward equalled on every step of its window "
                          "(issue 29, branch h-hack); then its betadecay run's length, max length and clipped ratio "
                          "were read again: its lengths up 1.37x by 228 with 3 of 6 steps clipped look like a healthy"
                          " rlcockpit_trainer_cpu7 run's, left missed (issue 29, branch h-trlramp); its "
                          "zerobonusgrows run's findings were printed: the reward_divergence warning at 220, 70 steps"
                          " into the growing bonus, left as a real early sign (issue 29, branch h-early); then its "
                          "healthy syncref10-warmup70 run's entropy (75-step medians) was read for an entropy-rise "
                          "rule, not adopted (issue 29, branch h-entrise); then its healthy CISPO syncref5 run's "
                          "completions/max_length, mean_length and clipped_ratio were read: truncation's inferred "
                          "limit needs answers cut at it (issue 29, branch h-quiet); then the paid reward against the"
                          " task score it equalled read on every run where the two part (where reward_cliff's new "
                          "parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29, branch "
                          "h-reward13); then zerobonusgrows004from150's reward and rewards/accuracy/mean at 140-250 "
                          "read: the gap grows from 150; reward_divergence's warning at 220 an early sign, left "
                          "(issue 29, branch h-early16)"
                          "; then read (issue 29, branch h-quiet18): the cispo log10 healthy run's entropy (a "
                          "steady 2.5x climb over 110 steps: left)",
    "rlcockpit_trainer_cpu11": "scored once held out (recall 7/9, 0 criticals on healthy runs, 1.00 warnings per "
                               "healthy run at 883e521; 5/9 with the detectors of e82ff19); then developed on: its "
                               "misses' series (entcoeframp's grad norm, entropy, actor/loss, pg_loss, entropy_loss, "
                               "ppo_kl, clip fraction; pertokenleak's machine memory and process RSS) and its healthy"
                               " klcov-tokensum and reinforceloss runs' memory and loss were read: loss_spike's "
                               "round-off slab widened to a token-sum loss's (ROUNDOFF 1e-5); both misses left (no "
                               "symptom a responsible detector reads leaves the healthy runs' range inside the "
                               "window) (issue 29, branch h-cpu11miss); then its healthy runs' warnings read (show.py"
                               " --all and the series): tirotb's and lr1e-3's entropy and held-out accuracy, lr1e-3's"
                               " response clip ratio and length, grpovec-minibatch2's clip fraction, ppo_kl and lr, "
                               "dppokl's throughput, step time and timing_s split: all five warnings left (each is "
                               "the shape a detected failure's alert has, or a drift the run really made) (issue 29, "
                               "branch h-cpu11warn); its lenpenaltysignflip02 run's reward, acc and length read for "
                               "its two early reward_divergence warnings (one batch each): the rise must hold without"
                               " the window's top-lead pair (issue 29, branch h-early2); then reward_cliff's "
                               "fell-under gate values on its runs read (the healthy qwen2s7 rewardclip1to03 run: "
                               "reward 3 units down at 400 with a gap 19% of the level but 57-64% of the reward's "
                               "fall, the accuracy fell too; the gpt2s7 one: the reward's fall binds, 291 kept): the "
                               "score-held share 0.75 (issue 29, branch h-cliff); then the paid reward against the "
                               "task score it equalled read on every run where the two part (where reward_cliff's new"
                               " parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29, "
                               "branch h-reward13); then every run's grad norm scanned for four steps in a row above "
                               "the previous 50's 95% quantile (grad_spike's new level-shift warning): its "
                               "gradertimeout0-70pct collapse run does it at 2.9x their median before its onset, "
                               "under the 4x bar, nothing changed (issue 29, branch h-grad14); then its healthy "
                               "tirotb run's entropy at 160-215 read (a two-value dip to 1.10 at 202-203, back at "
                               "1.86 the next step: no held step; entropy_collapse's held-step rule adds nothing "
                               "there) (issue 29, branch h-ent15); then its oom_creep run's perf/cpu_memory_used_gb "
                               "and sparse system/proc_rss_gb were read, nothing changed (issue 29, branch h-quiet17)"
                               "; then read (issue 29, branch h-quiet18): the klcov-tokensum and reinforceloss "
                               "healthy runs' machine memory and sparse RSS (left: the machine climbs 16-23% "
                               "before a second RSS reading)"
                               "; then pertokenleak64kb's perf/cpu_memory_used_gb (1-280) read beside every healthy "
                               "run of the source (they climb as fast, 0.0025 GB a step); nothing changed (issue 29, "
                               "branch h-lag18)"
                               "; then read by h-miss18: the entcoeframp collapse's entropy, reward, grad norm and validation "
                               "(entropy up from 290, before the window); nothing changed (issue 29, branch h-miss18)"
                               "; then the lenpenaltysignflip02 run's validation, score and acc read (its "
                               "dip at 275 kept quiet by the reward's alarm) (issue 29, branch h-grader18)"
                               "; h-crit per-run diff: the warmup25 length_explosion run's truncation critical 36 -> 50 (the lr "
                               "warm-up's settling; found at the same step) (issue 29, branch h-crit)",
    "trl_cpu_settings11": "scored once held out (recall 2/7, 1 critical on a healthy run, 0.50 warnings per healthy "
                          "run at 883e521; the same with the detectors of e82ff19); then all its runs' outcomes and "
                          "its seven failures' labels were read, and its top_k-ramp run's frac_reward_zero_std, "
                          "entropy and reward were read: rollout_mismatch's sampling narrower than the policy (every "
                          "group tied longer than chance, entropy held; issue 29, branch h-trl11miss); and its "
                          "healthy cosine-restarts run's clip_ratio/region_mean (above 0 on every value of the "
                          "window, then one 0 at 414): update_size's clipping-stopped chance with half a count of "
                          "each added (issue 29, branch h-trl11miss); its weightschedule run's reward and accuracy "
                          "read for its early reward_divergence warning at 179: a real early sign, left (issue 29, "
                          "branch h-early2); and its healthy one-prompt beta-0.2 run's kl and learning_rate were "
                          "read: kl_rising's accelerating-rise critical needs the KL still climbing when its hold is "
                          "met (issue 29, branch h-klcrit); then reward_cliff's fell-under gate values and "
                          "equal-stretch noise on its graderraises and rewardnoise runs read (graderraises 225 -> "
                          "221, still late) (issue 29, branch h-cliff); then the paid reward against the task score "
                          "it equalled read on every run where the two part (where reward_cliff's new "
                          "parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29, branch "
                          "h-reward13); then the max-new-tokens-ramp run's loss, kl and completion lengths at 48-64 "
                          "read (loss_spike's warning at 60 went: -0.14 on a step whose answers ran 1-8 tokens, the "
                          "loss 0.04 x kl on the equal-length steps) (issue 29, branch h-quiet14); then the early "
                          "reward_divergence warning of weightschedule (179, label 186) read from its title: the "
                          "weights move from 150, an early sign, left (issue 29, branch h-early16); then the "
                          "cosinerestarts3 healthy run's and the lrrestartspeakx2 collapse's learning_rate were read:"
                          " lr_schedule leaves a hard restart from under 1% of the peak back to it (2 healthy "
                          "warnings fewer), a restart past the peak still warns (issue 29, branch h-quiet17)"
                          "; then read by h-miss18: the graderraises, rewardnoise and lrrestarts collapses' reward, reward_std, "
                          "frac_reward_zero_std, entropy, length, lr and kl; nothing changed (issue 29, branch h-miss18)"
                          "; then the weightschedule run's reward, accuracy and format read (its warning "
                          "at 179 is 2 steps before onset-5: left) (issue 29, branch h-grader18)",
    "rlcockpit_trainer_cpu12": "scored once held out (recall 3/9, 0 criticals on healthy runs, 1 warning on 11 "
                               "healthy runs at 1c7b36d); then every run's outcome read (show.py, session 2026-12-07 "
                               "04:51); then its GPT-2 and Qwen2 sorted-dataset runs' entropy, score, grad norm, "
                               "length and validation and its Qwen2 constant-lr-2e-4 run's length (mean, max, clip "
                               "ratio), entropy and score read: entropy_collapse's slow fall takes one held-out "
                               "evaluation since the fall began as a verdict when it is at or under its mean (the "
                               "GPT-2 run 199 -> 167); the other two left (issue 29, branch h-ent); then its "
                               "strictgraderrollout run's critic/score/mean, reward_extra/acc/mean, score max/min, "
                               "entropy, length and validation at 140-200 and reward_cliff's fell-under gate values "
                               "(gap, the reward's fall, noise) were read: where the score held (the gap three "
                               "quarters of the reward's fall) a gap of a tenth of the level is enough (195 -> 185; "
                               "its rewardscale1to002 run 186 -> 180) (issue 29, branch h-cliff); then its "
                               "KL-in-reward h30 healthy run's host memory was read (2.21 -> 2.79 GB over 211 steps, "
                               "flat after: a real climb, its memory_growth warning left; issue 29, branch h-quiet); "
                               "then its rewardscale1to10 run's grad norm, advantages, critic/score/mean and "
                               "reward_extra/acc/mean at 1-200, and its four klinreward-adaptive runs' kl "
                               "coefficient, reward_kl_penalty, critic/rewards/mean and critic/score/mean were read "
                               "(with a scan of every DEVELOPED_ON run's grad-norm 10-step median against its warm-up"
                               " and of every logged KL coefficient's runs of rises): grad_spike's "
                               "growing-with-the-reward's-scale warning and kl_rising's KL-coefficient-runaway "
                               "warning (issue 29, branch h-kl); then the paid reward against the task score it "
                               "equalled read on every run where the two part (where reward_cliff's new "
                               "parted-both-ways rule would warn), nothing changed but that rule's bar (issue 29, "
                               "branch h-reward13)"
                               "; then read (issue 29, branch h-quiet18): the klinreward-h30 healthy run's "
                               "machine memory and RSS (left)"
                               "; then gradclip05's response length and clip ratio (1-100) read; nothing changed "
                               "(issue 29, branch h-lag18)"
                               "; then read by h-miss18: the sorteddataset collapse's reward, grad norm, entropy and validation; "
                               "nothing changed (issue 29, branch h-miss18)",
    "trl_cpu_settings12": "scored once held out (recall 3/5, 1 critical on a healthy run, 5 warnings on 5 healthy "
                          "runs at 1c7b36d); then every run's outcome read (show.py, session 2026-12-07 04:51); then "
                          "its rewardclipshrinks run's reward, rewards/accuracy/mean, reward_std, entropy, length and"
                          " frac_reward_zero_std at 195-240 and reward_cliff's fell-under gate values were read: the "
                          "same rule (232 -> 224) (issue 29, branch h-cliff); then its prompt-truncation run's KL at "
                          "1-185 was read: kl_spike's tail also over the last 100 logged values (its critical at 122,"
                          " on unchanged prompts, gone); its eval-leak healthy run's KL/entropy at 1-350 (a real "
                          "13-step KL excursion at 219-231, entropy to 0.95: its kl_spike critical stays in the "
                          "ratchet), its vespo healthy run's clip ratio, length, reward and lr (a real length drift "
                          "at 138-267; one-prompt reward noise at 295-297, left), and its repetition-bonus run's "
                          "reward and rewards/accuracy/mean at 95-195 (the paid bonus pulls the reward up from 120: "
                          "real) were read, each alert left with its reason (issue 29, branch h-quiet); then the paid"
                          " reward against the task score it equalled read on every run where the two part (where "
                          "reward_cliff's new parted-both-ways rule would warn), nothing changed but that rule's bar "
                          "(issue 29, branch h-reward13); then its eval-leak healthy run's kl at 190-240 read again "
                          "(0.5-0.98 at 219-225, 4.2 and 2.5 at 226-227, entropy 0.95: kl_spike's critical at 227 "
                          "left) (issue 29, branch h-ent14); then repetitionbonus-from120's reward and "
                          "rewards/accuracy/mean at 100-240 read: reward leads accuracy from 120 (0.1, 0.2-0.3 by "
                          "183); reward_divergence's alerts at 127 and 186 are the failure's own, before its label "
                          "(227), left (issue 29, branch h-early16); then that run's kl, entropy and reward at "
                          "150-250 read again (kl 0.1-0.3 with lone spikes to 4.9 at 181, then >= 0.5 on every step "
                          "219-231 and entropy 1.55 -> 0.95): a real KL excursion, kl_spike's critical at 227 left "
                          "(issue 29, branch h-quiet16)"
                          "; then read (issue 29, branch h-quiet18): the vespo healthy run's reward 250-300 (one "
                          "prompt: reward_cliff at 297 left)"
                          "; then the repetitionbonus run's reward minus accuracy read (the lead opens at "
                          "120, warned at 127; labelled 227: left, label doubted) (issue 29, branch "
                          "h-grader18)",
    "rlcockpit_trainer_cpu13": "scored once held out (recall 7/11, 0 criticals on healthy runs, 3 warnings on 9 "
                               "healthy runs at 9bb2bb7); then every run's outcome read (show.py, session 2026-12-07 "
                               "08:05); then the length, clip ratio, longest answer, entropy and score of its two "
                               "Qwen2 length runs (1-80), its GPT-2 empty-prompts and template runs and their "
                               "constant-lr control (140-250) were read: truncation's leaving-zero rule takes three "
                               "of ten steps cut at a limit 3x the usual length or more (sampled-validation run "
                               "missed -> 41; Qwen2 empty-prompts run 66 -> 62; the GPT-2 empty-prompts run left) "
                               "(issue 29, branch h-len13); then the host memory of the 3-epoch clip-0.1 run (1.04 "
                               "flat at 101-161, then up at nearly every step to 1.77 at 300: a real steady climb of "
                               "the only memory series it logs, memory_growth's warning left), the constant-lr-2e-4 "
                               "control's entropy (25-step medians 1.71 -> 1.41-1.49: entropy_collapse's drift "
                               "warning left) and clip ratio (> 0 on 13 of 20 steps at 306-325, to 0.33: truncation's"
                               " warning left) and the KL-loss ramp run's grad norm at 41 (82, 32x its median, alone:"
                               " grad_spike's one-off warning left) read; nothing changed (issue 29, branch "
                               "h-quiet13); then its two raising graders' reward/failures, critic/score/mean and "
                               "reward_extra/acc/mean and its memoised reward's score, accuracy, grad norm and "
                               "advantages read step by step around their onsets: reward_cliff warns on a reward "
                               "failure count that grows on 2 logged steps within 20, and on a reward that parts from"
                               " the task score it equalled both ways, a fifth of its level apart (recall 7/11 -> "
                               "9/11; the 30% grader 209 -> 201) (issue 29, branch h-reward13); then the grad_spike "
                               "run's actor/grad_norm at 1-60 and 280-300 read: 81.9 at 41 (32x its median 2.5, one "
                               "step) is a real spike of the labelled kind, unlabelled; left (issue 29, branch "
                               "h-early16); then its held-out and score series were surveyed with every developed-on "
                               "source's (held_out_drop's one-evaluation rule with the training reward, issue 29, "
                               "branch h-slow16: advsignflip 290 -> 288)"
                               "; then read (issue 29, branch h-quiet18): the dualclip2 healthy run's machine "
                               "memory and RSS (left)"
                               "; then emptyprompts' response length and clip ratio (100-250) and the constlr2e-4 "
                               "healthy run's read; nothing changed (issue 29, branch h-lag18)"
                               "; then the advpermuted healthy run's validation read (a test keeps it "
                               "quiet) (issue 29, branch h-grader18)",
    "trl_cpu_settings13": "scored once held out (recall 8/9, 0 criticals on healthy runs, 7 warnings on 6 healthy "
                          "runs at 9bb2bb7); then every run's outcome read (show.py, session 2026-12-07 08:05); then "
                          "its runs' length, clipped ratio and longest answer were scanned with every developed-on "
                          "run's for a leaving-zero rule at a far limit (no trl13 outcome moved) (issue 29, branch "
                          "h-len13); then the bnpo run's reward, rewards/accuracy/mean and rewards/width_ok/mean "
                          "(reward = 0.8 x accuracy + 0.2 x width on all 300 steps: reward_divergence's two 'pulling "
                          "away' warnings on the width check went, a part paid at a fixed weight judged as a part "
                          "paid in full), its grad norm at 108 (45.5, alone: left), the sorted-by-difficulty run's "
                          "loss, kl and reward at 90-300 (each warning at a change of the data: left), the long "
                          "warm-up's kl and length at 60-130 (kl 4.6-9.2 at 100-102, clipped to 0.875 at 104-111: "
                          "kl_spike's early critical left) and the time-out run's grad norm at 57 (94, alone: left) "
                          "and step time at 140-165 (0.58-1.32 s on 17 of the 19 steps 140-158 against medians of "
                          "0.13-0.18 s: throughput_drop's early warning at 154 left) read; 7 -> 5 warnings on 6 "
                          "healthy runs (issue 29, branch h-quiet13); then its None-share run's reward, reward_std, "
                          "rewards/graded/mean, frac_reward_zero_std and grad norm read step by step 100-350: nothing"
                          " changed (the batch's reward spread is exactly 0 at 152-154 and 20-33% of the steps after,"
                          " 29 steps before the labelled onset: a rule on it would warn early) (issue 29, branch "
                          "h-reward13); then the long warm-up's kl at 60-115 read again (4.6, 3.6, 9.2 at 100-102 and"
                          " 0.9-6.7 to 113, entropy 2.0-2.4 at 104-111: a real excursion 75 steps before the labelled"
                          " onset; kl_spike's early critical at 102 left) (issue 29, branch h-ent14); then the "
                          "sorted-by-difficulty run's loss, kl and completion lengths at 90-108 and the None-share "
                          "run's at 85-98 read: loss_spike's warnings at 103 and 94 went (each on steps whose "
                          "completions' lengths differ, min 1 or max 4-6 against 3; the loss 0.04 x kl on every other"
                          " step) (issue 29, branch h-quiet14); then every run's grad norm scanned for four steps in "
                          "a row above the previous 50's 95% quantile (grad_spike's new level-shift warning): its "
                          "numiter3 and sortedbydifficulty healthy runs do it at 2.2-2.7x their median, under the 4x "
                          "bar, nothing changed (issue 29, branch h-grad14); then rewardtimeouts' step_time at "
                          "100-215 read (0.58-1.32 s over 139-158 against 0.13, 0.10-0.20 again until 200): "
                          "throughput_drop reads the step-to-step log spread of a CPU run's whole low stretch past "
                          "ten speeds (0.49 here): the warning at 154 is info (early alerts 2 -> 1, detection "
                          "unchanged at 206); warmup300of350-peak3e-3's kl at 60-200 read (1 -> 2.6 -> 4.6 -> 9.2 at "
                          "96-102 with entropy 1.7 -> 2.3 under the lr warm-up): the critical at 102 is an early sign"
                          " of that collapse, left (issue 29, branch h-early16); then its syncrefalphaneg05 and "
                          "sortedbydifficulty runs' kl was read (to keep the blow-ups rule from a KL climbing from "
                          "0.0003 and from a healthy bursty KL: the severe_above floor); nothing changed for them "
                          "(issue 29, branch h-trlmiss16)"
                          "; then read by h-miss18: the rewardnone collapse's reward, reward_std, grad norm and "
                          "frac_reward_zero_std; nothing changed (issue 29, branch h-miss18)"
                          "; h-crit per-run diff: the warmup300of350 collapse's criticals in its 300-step warm-up (102-200) "
                          "held as warnings, first critical 260 (found at the same step) (issue 29, branch h-crit)",
    "rlcockpit_trainer_cpu14": "scored once held out (recall 6/10, 0 criticals on healthy runs, 3 warnings on 9 "
                               "healthy runs at ed0004a); then every run's outcome read (show.py, session 2026-12-07 "
                               "11:14); then the rollout-IS run's actor/ppo_kl, pg_clipfrac, grad norm and "
                               "rollout_corr series 1-300 (ppo_kl 0.073 at step 1, median 0.041, no value under 0 in "
                               "its first 10: update_size's 2 warnings went, a ppo_kl whose warm-up level is past "
                               "ppo_kl_warn / critical_ratio judged against it; with a scan of every developed-on "
                               "run's ppo_kl median, 90th percentile and warm-up sign: the 8 runs whose median is "
                               "above 0.005 are all GPT-2 runs with a separate old-log-prob pass or 4 PPO epochs, the"
                               " other 7 signed in their warm-up) and the constant-lr control's entropy, reward and "
                               "val-core accuracy 1-350 (entropy's drift warning at 218 left: a 13% fall like those "
                               "the drift detects on failures) read (issue 29, branch h-quiet14); then its two "
                               "gradaccumsum runs' grad norm, pg_loss, pg_clipfrac, ppo_kl, lr and score read at "
                               "100-215 (with a scan of every DEVELOPED_ON run's grad norm for four steps in a row "
                               "above the previous 50's 95% quantile): grad_spike's level-shift warning, the GPT-2 "
                               "run missed -> 153, the Llama run 160 -> 153, recall 6/10 -> 7/10 (issue 29, branch "
                               "h-grad14); then its greedy-rollouts run's grad norm, pg_loss, clip fraction, ppo_kl, "
                               "advantages, score mean/min/max, entropy and length at 140-215 and its spaced-decode "
                               "ramp's score mean/min/max, validation, grad norm and entropy at 1-350 were read: "
                               "update_size's updates-stopped rule (the grad norm exactly 0 for longer than the run's"
                               " own share of exact zeros makes likely and than any earlier run of zeros; its minimum"
                               " run of 8 set above the longest run of zeros on any healthy run of every DEVELOPED_ON"
                               " source, 5) finds the greedy run at 177; the ramp stays missed: its score's fall is "
                               "significant from ~216-221 (30/50-step means, 4 sd) and out of range for good at the "
                               "labelled 261, so a trend rule alerts early (issue 29, branch h-collapse14); then its "
                               "held-out and score series were surveyed with every developed-on source's "
                               "(held_out_drop's one-evaluation rule with the training reward, issue 29, branch "
                               "h-slow16: regexgrader-spaceddecode-from160 180 -> 168); then the bf16-rollout-logits "
                               "healthy run's probs diff (140-200) was read beside cpu17's partial sync (a step off "
                               "the bit-exact floor that holds, the reason a jump alone cannot warn) (issue 29, "
                               "branch h-cpu16r)"
                               "; then the bf16rolloutlogits healthy run's probs diff (145-227: steps to 5-9e-4 at "
                               "150 and holds, the counter-case of rollout_mismatch's leap-and-growth rule, still "
                               "quiet) and eosunmasked's response length (100-240: it falls 3 -> 2 at its onset 150 "
                               "and explodes only from ~280; the length onset looks early for a length_explosion "
                               "label) read; nothing changed here (issue 29, branch h-lag18)"
                               "; then read by h-miss18: the regexgrader spaced-decode collapse's reward, validation, entropy and "
                               "length; nothing changed (issue 29, branch h-miss18)",
    "trl_cpu_settings14": "scored once held out (recall 8/9, 0 criticals on healthy runs, 5 warnings on 11 healthy "
                          "runs at ed0004a); then every run's outcome read (show.py, session 2026-12-07 11:14); then "
                          "the dropout run's kl, entropy, reward, grad norm and loss at 40-160 read (kl 0.55, 0.53, "
                          "0.98 at 85-87, back to 0.064 at 88, after 2.0 and 0.61 back to back at 53-54; nothing else"
                          " moved): kl_spike now needs the held batches above every level the last 100 held for 2 "
                          "batches in a row (its critical at 87, 63 steps early, gone; the collapse still seen by "
                          "kl_rising at 158), and the one-prompt-ramp run's entropy, kl, reward, reward_std, "
                          "frac_reward_zero_std, grad norm and lr at 90-240 read (12-step entropy mean 1.60 at 150, "
                          "1.54-1.57 at 160-174, 1.46 at 219, against a drift level of 1.663 and noise 0.060: the "
                          "drift's 12% bar is met at 219; a 7% bar detects it at 164 but adds 6 healthy warnings on "
                          "other sources, 4 when only where held-out scores are flat: left) (issue 29, branch "
                          "h-ent14); then the prefix-grader, stale-rewards and scheduler-stepped-twice runs' loss, "
                          "kl, completion lengths, reward, rewards/accuracy/mean and learning_rate read step by step:"
                          " loss_spike's 2 warnings went (each on steps whose completions' lengths differ, the loss "
                          "beta x KL on every other step); reward_cliff at 158 (reward = the previous step's accuracy"
                          " from 150), kl_rising at 238 and lr_schedule at 254 (lr 0 from 250) left (issue 29, branch"
                          " h-quiet14); then every run's grad norm scanned for four steps in a row above the previous"
                          " 50's 95% quantile (grad_spike's new level-shift warning): its schedsteppedtwice healthy "
                          "run does it at 2.6x their median, under the 4x bar, nothing changed (issue 29, branch "
                          "h-grad14); then the early reward_divergence warning of lenientgrader (149, label 155) read"
                          " from its title: equal for 117 steps, then led: an early sign, left (issue 29, branch "
                          "h-early16); then its one-prompt ramp's entropy slow-fall state (its CUSUM alarmed from 55,"
                          " the mean 7% under its level at onset) was read; nothing changed for it (issue 29, branch "
                          "h-trlmiss16)"
                          "; then read by h-miss18: the onepromptramp entropy collapse's entropy, reward and eval reward; "
                          "nothing changed (issue 29, branch h-miss18)"
                          "; then the prefixgrader healthy run's and the lenientgrader run's reward minus "
                          "accuracy read (quiet; lenient 149 -> 148) (issue 29, branch h-grader18)",
    "rlcockpit_trainer_cpu15": "scored once held out (recall 2/8, 1 critical on healthy runs, 5 warnings on 11 "
                               "healthy runs at 39e3e17); then every run's outcome read (show.py, session 2026-12-07 "
                               "11:14); then its oldlogpfromref run's ppo_kl, pg_clipfrac, kl_loss, entropy, score "
                               "and grad norm over 120-200 were read, and every run's ppo_kl for a stretch of exact "
                               "zeros: rollout_mismatch's old-log-probs rule (ppo_kl exactly 0 on 30+ logged steps, "
                               "then past 1e-4 on 3 of the next 5) catches it at 152 (issue 29, branch h-mis15); then"
                               " its constlr2e-4 healthy run's clip ratio, length, score and entropy read step by "
                               "step (5, 7, 1, 4 of 12 answers cut at 123-126 under an 8-token limit, 1/12 on most "
                               "steps of 98-142, 0 after): truncation's critical needs the ratio not to have come "
                               "back to the warm-up level after a step above the critical bar, its critical at 126 "
                               "went, the creep warning at 103 stays; its gae healthy run's throughput and timing_s "
                               "at 120-175 read (0.04-0.15 s steps on a shared host; throughput_drop's warning at 147"
                               " left) (issue 29, branch h-quiet16); then its lastlayerredrawn, trainset24, "
                               "wrongfieldgrader and adameps1 runs' score, reward_extra acc, validation and entropy "
                               "around their onsets were read: held_out_drop's one-evaluation rule (the newest "
                               "evaluation under the range's floor by its width and 4 noise units under the median, "
                               "the training reward's last 10 steps under every 10-step stretch of the 150 before) "
                               "warns the redrawn layer at 180, detected (issue 29, branch h-slow16); then its GAE "
                               "runs' critic/values/mean and returns/mean 10-step spreads were surveyed "
                               "(value_divergence's swing rule: healthy ratios <= 1.31) (issue 29, branch h-cpu16r)"
                               "; then read (issue 29, branch h-quiet18): the klloss-mseplus healthy run's "
                               "machine memory and RSS (left)"
                               "; then weightsyncevery10's probs diff read: rollout_mismatch's leap-and-growth rule "
                               "finds it at 159 (was 160); the constlr2e-4 healthy run's response length read as the "
                               "twin of cpu16's length runs (issue 29, branch h-lag18)"
                               "; then read by h-miss18: the adameps1 and noisyjudge collapses' validation (frozen from 160 in "
                               "adameps1), reward, entropy and length; nothing changed (validation repeats are common in healthy "
                               "runs) (issue 29, branch h-miss18)"
                               "; then the wrongfieldgrader and trainset24 runs' score, acc and "
                               "validation read (both still missed) (issue 29, branch h-grader18)"
                               "; h-crit per-run diff: the oldlogpfromref rollout_mismatch run's update_size critical at 276 held as "
                               "a warning (found at 152 unchanged) (issue 29, branch h-crit)",
    "trl_cpu_settings15": "scored once held out (recall 5/9, 0 criticals on healthy runs, 6 warnings on 20 healthy "
                          "runs at 39e3e17); then every run's outcome read (show.py, session 2026-12-07 11:14); then "
                          "rmsnormplus1's entropy, kl, reward and completion length at 100-200 read (entropy ~1.65, "
                          "robust noise ~0.15, steps to 0.84-1.13 at the resume at 150 and holds: a third of its "
                          "level, ~4.5 noise units, under the sudden-fall rule's 8 and no halving; warned only by the"
                          " drift at 167): entropy_collapse's new held-step rule (4 of the last 5 values 4 noise "
                          "units and 30% under the 30-value median) warns at 154, detected (issue 29, branch "
                          "h-ent15); then the early alerts read: terminationpenalty05's kl at 1-40 (0.35, 0.24, 0.25 "
                          "at 11-13 against 0.04 over the ten logged before; 0.3-0.5 every few steps for the rest of "
                          "the run): kl_spike's held values must also clear the warm-up's bar (1.0) until its window "
                          "holds 20 batches, the critical at 13 is gone (early alerts 2 -> 1, detection unchanged: "
                          "reward_cliff at 102; the kl_spike warning at 64 of gradckpt-numiter2-log4, 16 logged steps"
                          " in, goes too); reftemperature05's kl at 60-160 (a burst to 0.1-0.42 at 123-133 against "
                          "0.017, back by 134; kl_rising's range warning at 136) left: no rule found that tells it "
                          "from the range warnings that detect (issue 29, branch h-early16); then its leaked-answer "
                          "ramp's kl per step (single batches 1.1-20 at 190-205 against a median near 0.1), its "
                          "weight-decay-50 and temperature-anneal runs' entropy slow-fall state and the ropetheta100 "
                          "healthy run's kl were read: kl_spike's new blow-ups-recurring rule warns the leaked-answer"
                          " ramp at 201, detected; the temperature anneal (a 10% fall of the 12-step mean by onset+15"
                          " that healthy runs of every trainer source also show) and weight decay 50 stay missed "
                          "(issue 29, branch h-trlmiss16)"
                          "; then read by h-miss18: the weightdecay50 collapse's and the temperatureanneal entropy collapse's "
                          "entropy, reward and kl; nothing changed (issue 29, branch h-miss18)",
    "rlcockpit_trainer_cpu16": "scored once held out at 955bb32 (recall 3/11, 1 critical and 12 warnings on 12 "
                               "healthy runs, 1 alert before onset-5; BENCHMARKS \"A fifteenth held-out batch\"); then "
                               "read run by run (session 2026-12-07 14:36); then the critic-lr-x1000 run's "
                               "critic/values/mean, returns/mean and vf_loss around 161, the rollout-lag run's probs "
                               "diff, the two grad-clip runs' validation and every run's validation repeats and "
                               "critic swing were read: value_divergence warns when the critic's mean prediction "
                               "swings 3x past its returns' spread and its own earlier spread (criticlr1000x found at"
                               " 166; nothing else moved) (issue 29, branch h-cpu16r); then its token-sum abs+ "
                               "KL-loss healthy run's actor/kl_loss and actor/entropy (steps 1-60) and the "
                               "perf/cpu_memory_used_gb, system/proc_rss_gb and system/memory_used_gb of its four "
                               "memory_growth runs were read: kl_spike's warm-up critical is not raised where every "
                               "entropy logged is above ln 262,144 (a token sum), 1 -> 0 healthy criticals; "
                               "memory_growth left (issue 29, branch h-quiet17)"
                               "; then read (issue 29, branch h-quiet18): the lora16 healthy run's "
                               "perf/cpu_memory_used_gb (4.74 -> 4.02 -> 4.76 GB, 1-350), the 700-step, cispo and"
                               " opo healthy runs' machine memory with their sparse system/proc_rss_gb, the remax"
                               " healthy run's actor/entropy: memory_growth's sign rule needs the climb "
                               "trend_growth_ratio above the warm-up level, 1 -> 0 warnings on the lora run; the "
                               "others left"
                               "; then rolloutlag0-8's probs diff (130-350: 2-5e-4 over 160-175, under the healthy "
                               "bf16 floor of cpu14, growing only from ~179) and the constlr2e-4 / zerogradskipped "
                               "length runs' response length and clip ratio read beside the healthy constlr2e-4 twins"
                               " of cpu13/cpu15 (the same 3 -> 3.4 shift with answers at 8); nothing changed (issue "
                               "29, branch h-lag18)"
                               "; then read by h-miss18: the 3digitshard collapse's reward and length (both sliding from ~185) and "
                               "the two gradclip1e-4 collapses' validation (frozen, as in healthy runs); length_collapse's slide "
                               "rule finds 3digitshard at 202 (issue 29, branch h-miss18)"
                               "; then the failopengrader run's score minus acc and the substringgrader "
                               "healthy runs' read: lead opened also counts 5 of 10 batches one scored "
                               "item up, never under (failopengrader found at 287) (issue 29, branch "
                               "h-grader18)"
                               "; h-crit per-run diff: the zerogradskipped length_explosion run's truncation critical 325 -> 334 "
                               "(found at 245 unchanged) (issue 29, branch h-crit)",
    "trl_cpu_settings16": "scored once held out at 955bb32 (recall 5/9, 0 criticals and 6 warnings on 16 healthy "
                          "runs; BENCHMARKS \"A fifteenth held-out batch\"); then read run by run (session 2026-12-07 "
                          "14:36); then the cosrestarts2 healthy run's learning_rate was read: lr_schedule's jump "
                          "rule leaves a restart from a trough under 1% of the peak back to that peak, 6 -> 5 healthy"
                          " warnings (issue 29, branch h-quiet17); then read: betaramp's loss, kl, grad norm and the "
                          "loss/KL multiple on equal-length steps 130-185, chattemplateramp's kl/reward/entropy/grad "
                          "norm 176-228, padmultiple16's first logged kl (beside every developed-on run's), the "
                          "grad_spike bar at 163-182 of betaramp; loss_spike warns when the loss/KL multiple on "
                          "equal-length steps grows x4: betaramp found at 157 (issue 29, branch h-trl16r)"
                          "; then read (issue 29, branch h-quiet18): the rewardsreversed healthy run's kl 1-110 "
                          "(left)"
                          "; then read by h-miss18: the chattemplateramp collapse's reward and completions/mean_length (both "
                          "sliding from ~171) and the decoderlost collapse's reward, reward_std and frac_reward_zero_std; "
                          "length_collapse's slide rule finds chattemplateramp at 186 (issue 29, branch h-miss18)",
    "rlcockpit_trainer_cpu17": "scored once held out at 955bb32 (recall 5/8, 0 criticals and 4 warnings on 10 healthy"
                               " runs; BENCHMARKS \"A fifteenth held-out batch\"); then read run by run (session "
                               "2026-12-07 14:36); then the partial-sync run's probs diff (140-200), the lr-warmup "
                               "run's validation, score, entropy and lr (100-162) and every run's validation repeats "
                               "were read; nothing changed here (issue 29, branch h-cpu16r); then the adameps healthy"
                               " run's and the hostleak oom_creep's perf/cpu_memory_used_gb were read (memory_growth "
                               "left: no RSS logged; issue 29, branch h-quiet17)"
                               "; then read (issue 29, branch h-quiet18): the adameps healthy and hostleak "
                               "oom_creep runs' machine memory (left)"
                               "; then the partial-sync run's probs diff 137-240 read again beside cpu14's bf16 "
                               "healthy run: rollout_mismatch warns of a leap off the early level that keeps growing "
                               "from where it landed, partialsync found at 156 (was 174) (issue 29, branch h-lag18)"
                               "; then read by h-miss18: the lrwarmup50x collapse's validation (one evaluation 5.6x its noise under "
                               "the median at 144, a shape a bad draw also takes), reward, entropy, grad norm; nothing changed "
                               "(issue 29, branch h-miss18)"
                               "; then the stuckloader run's score and validation read: a held-out "
                               "evaluation under its range while the reward, past its alarm, rose 3 "
                               "standard errors warns (found at 176) (issue 29, branch h-grader18)",
    "trl_cpu_settings17": "scored once held out at 955bb32 (recall 6/9, 0 criticals and 0 warnings on 12 healthy "
                          "runs; BENCHMARKS \"A fifteenth held-out batch\"); then read run by run (session 2026-12-07 "
                          "14:36); then read: replaytwoprompts' entropy/reward/kl/grad norm 195-242 and its slow-fall"
                          " drift state, graderfallback05's reward minus accuracy by 25-step windows; nothing changed"
                          " for them (issue 29, branch h-trl16r)"
                          "; then read by h-miss18: the losssignalternating collapse's reward, length and kl and "
                          "replaytwoprompts' entropy slow-fall state; nothing changed (issue 29, branch h-miss18)"
                          "; then the graderfallback run's reward minus accuracy read again (a sign test "
                          "fires 11 steps early or late by window: left, still missed) (issue 29, branch "
                          "h-grader18)",
    "rlcockpit_trainer_cpu18": "scored once held out at 14e3fda (recall 6/7, 0 criticals and 7 warnings on 13 healthy "
                               "runs; BENCHMARKS \"A sixteenth held-out batch\"); then opened to be read run by run "
                               "(session 2026-12-07 21:19); then read by h-read16c: every run's machine memory "
                               "(perf/cpu_memory_used_gb) beside its RSS (system/proc_rss_gb, 2-12 readings a run, "
                               "flat at 0.45-0.51 GB on every healthy run while the machine moved by up to 7 GB): "
                               "memory_growth now needs the machine's climb past the swing other processes showed "
                               "between two RSS readings (constlr1e-4 healthy quiet, was warned at 209; "
                               "bf16deltasync's early memory alert at 133 gone), and the trainer logs its RSS every "
                               "step; the other 4 healthy memory warnings left (they come between RSS readings that "
                               "cannot speak to them); klloss-k1's grad spike at 40 (25x its median, one step) and "
                               "constlr1e-4's entropy drift at 293 left; templatereapplied read: its clip ratio is 0 "
                               "at every step to 152 and the responses shrink first (2.2-2.8 vs 3.0 tokens, 131-152), "
                               "so no truncation or length_explosion rule can fire in [126, 146]; its onset (131) is "
                               "that of the shrinking, not of a growth (label left to the relabel helper) (issue 29, "
                               "branch h-read16c)",
    "trl_cpu_settings18": "scored once held out at 14e3fda (recall 4/6, 3 criticals and 5 warnings on 16 healthy runs, 2 "
                          "early alerts; BENCHMARKS \"A sixteenth held-out batch\"); then opened to be read run by run "
                          "(session 2026-12-07 21:19); read by h-read16t: the self-certainty runs' entropy slow-fall "
                          "state (selfcertainty1: the CUSUM alarmed by 114, the 12%/2-noise-unit bar crossed at 144), "
                          "the length-normalised and percent runs' reward against its accuracy (1/3 and 100 of it on "
                          "every step), the clip-epsilon-0 run's grad norms (each batch logged twice, num_iterations=2) "
                          "and the max_grad_norm 0.1 run's spike at 50 (11x, one logged step: left); changed: "
                          "entropy_collapse's smaller fall while only the paid reward gains (selfcertainty1 found at "
                          "115), reward_cliff's new units (lengthnormalisedreward quiet), grad_spike's level shift "
                          "counted in batches (clipeps0's warning at 30 gone): 5/6, 3 criticals and 3 warnings; the "
                          "self-certainty ramp stays missed (reward_divergence at 133, 25 steps before its onset 158: "
                          "the paid reward parts from the accuracy as the bonus weight ramps from 100, so the label's "
                          "onset, the certainty's own rise, is questioned, not changed; the relabel helper, reading blind, moved it to 112) (issue 29, branch h-read16t)"
                          "; then read by h-crit: the three healthy criticals' series (clip ratio of the clipeps0 run, reward "
                          "and accuracy of the percent run, kl and lr of the wsd run); all three now warnings through "
                          "Detector.critical_doubt (a level kept since a one-time change, a grid 100x coarser, the lr warm-up's "
                          "settling) (issue 29, branch h-crit)",
    "tinker_jsonl_public18": "scored once held out at 14e3fda (3/3 found; BENCHMARKS \"A sixteenth held-out batch\"); "
                             "then opened to be read run by run (session 2026-12-07 21:19); then read by h-read16c: "
                             "3/3 found by reward_divergence at delays 9, 1, 1; nothing changed (issue 29, branch "
                             "h-read16c)",
    "verl_file_public18": "scored once held out at 14e3fda (1 healthy run, quiet; BENCHMARKS \"A sixteenth held-out "
                          "batch\"); then opened to be read run by run (session 2026-12-07 21:19); then read by "
                          "h-read16c: 20 steps, its actor/perf/cpu_memory_used_gb too short to warm up; quiet, "
                          "nothing changed (issue 29, branch h-read16c)",
    "grpo_jsonl_public18": "scored once held out at 14e3fda (1 healthy run, quiet; BENCHMARKS \"A sixteenth held-out "
                           "batch\"); then opened to be read run by run (session 2026-12-07 21:19); then read by "
                           "h-read16c: no memory keys but epoch/vram_*; quiet, nothing changed (issue 29, branch "
                           "h-read16c)",
}
TARGETS = {"recall_min_per_class": 0.95, "healthy_criticals": 0, "healthy_warnings_per_trace_max": 1.0,
           "early_alerts_max": 10, "median_delay_max": 10}
# rlwatch takes named arguments; these are the same quantities under each naming in the corpus
RLWATCH_INPUTS = {
    "entropy": ("actor/entropy", "entropy", "train/entropy", "policy/entropy"),
    "kl_divergence": ("actor/kl_loss", "actor/reward_kl_penalty", "actor/ref_kl", "kl", "train/kl_div", "kl/divergence"),
    "reward_mean": ("critic/score/mean", "reward", "train/reward", "reward/mean", "train_reward"),
    "reward_std": ("critic/score/std", "reward_std", "reward/std", "train_reward_std"),
    "loss": ("actor/pg_loss", "loss", "train/loss", "policy/loss", "pg_loss"),
    "grad_norm": ("actor/grad_norm", "grad_norm"),
}
Finding = tuple[int, str, str]  # (step, detector, severity)


def _samples_by_step(trace: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    return sorted(trace["samples"], key=lambda x: x[0])


def run_ours(trace: dict[str, Any], timings: list[float] | None = None, cpu: list[float] | None = None) -> list[Finding]:
    """Every finding rlcockpit raises on the trace; samples are fed before the metrics of their step."""
    monitor = HealthMonitor(run_config=trace["config"])
    out: list[Finding] = []
    pending = _samples_by_step(trace)
    for step, metrics in trace["metrics"]:
        while pending and pending[0][0] <= step:
            s, rows = pending.pop(0)
            _m, found = monitor.observe_samples(s, rows)
            out += [(f.step, f.detector, f.severity) for f in found]
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        found = monitor.observe(step, metrics)
        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        if timings is not None:
            timings.append((t1 - t0) / 1000.0)
        if cpu is not None:
            cpu.append((c1 - c0) / 1000.0)
        out += [(f.step, f.detector, f.severity) for f in found]
    out += [(f.step, f.detector, f.severity) for f in monitor.close()]
    return out


def run_rlwatch(trace: dict[str, Any]) -> list[Finding]:
    """The same stream through rlwatch 0.5's ``DetectorSuite`` (default config)."""
    from rlwatch.config import RLWatchConfig
    from rlwatch.detectors import DetectorSuite

    suite = DetectorSuite(RLWatchConfig())
    samples = dict(trace["samples"])
    out: list[Finding] = []
    for step, m in trace["metrics"]:
        kw = {arg: next((m[k] for k in keys if k in m), None) for arg, keys in RLWATCH_INPUTS.items()}
        rows = samples.get(step)
        rewards = np.array([float(r["reward"]) for r in rows], dtype=float) if rows else None
        for a in suite.check_step(step, rewards=rewards, **kw):
            out.append((a.step, a.detector, a.severity))
    return out


def alert_starts(trace: dict[str, Any], findings: list[Finding], detectors: set[str] | None) -> list[int]:
    """Steps where an alert (warning/critical) of ``detectors`` (None: any) starts: that detector had no such
    finding at the logged step before (a detector still firing continues its alert; one that was quiet starts one)."""
    logged = [s for s, _m in trace["metrics"]]
    by_det: dict[str, set[int]] = defaultdict(set)
    for s, d, sev in findings:
        if sev in ("warning", "critical") and (detectors is None or d in detectors):
            by_det[d].add(s)
    starts = []
    for steps in by_det.values():
        for s in sorted(steps):
            i = bisect.bisect_left(logged, s)
            prev = logged[i - 1] if i > 0 else None
            if prev is None or prev not in steps:
                starts.append(s)
    return sorted(starts)


def score(trace: dict[str, Any], findings: list[Finding], responsible: dict[str, set[str]]) -> dict[str, Any]:
    """Per-trace outcome under the rule in the module docstring."""
    cls, onset = trace["class"], trace["onset"]
    crit = sum(1 for _s, _d, sev in findings if sev == "critical")
    warn = sum(1 for _s, _d, sev in findings if sev == "warning")
    if cls == "healthy":
        return {"criticals": crit, "warnings": warn, "alerts": sorted({(s, d, sev) for s, d, sev in findings})[:20],
                "by_detector": dict(sorted(_count(f"{d}:{sev}" for _s, d, sev in findings
                                                  if sev in ("warning", "critical")).items()))}
    mine = responsible.get(cls)
    if not mine:
        return {"covered": False}
    starts = alert_starts(trace, findings, mine)
    lo, hi = onset + WINDOW[0], onset + WINDOW[1]
    hits = [s for s in starts if lo <= s <= hi]
    early = [s for s in starts if s < lo]
    return {"covered": True, "detected": bool(hits), "delay": (hits[0] - onset) if hits else None,
            "early_alerts": len(early), "first_alert": starts[0] if starts else None,
            "criticals_before_onset": sum(1 for s, _d, sev in findings if sev == "critical" and s < lo),
            "responsible_fired": sorted({d for s, d, sev in findings if d in mine and sev != "info"})}


def aggregate(results: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """Per class and overall figures from (trace, outcome) pairs."""
    by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t, r in results:
        by_class[t["class"]].append(r)
    classes: dict[str, Any] = {}
    all_delays: list[float] = []
    early_total, detected, failures = 0, 0, 0
    for cls in CLASSES:
        items = by_class.get(cls, [])
        if not items:
            continue
        if cls == "healthy":
            crit, warn = sum(i["criticals"] for i in items), sum(i["warnings"] for i in items)
            classes[cls] = {"traces": len(items), "criticals": crit, "warnings": warn,
                            "criticals_per_trace": round(crit / len(items), 3), "warnings_per_trace": round(warn / len(items), 3),
                            "traces_with_alerts": sum(1 for i in items if i["criticals"] or i["warnings"])}
            continue
        if not items[0].get("covered", True):
            classes[cls] = {"traces": len(items), "covered": False}
            continue
        delays = [i["delay"] for i in items if i["delay"] is not None]
        n_det = sum(i["detected"] for i in items)
        early = sum(i["early_alerts"] for i in items)
        classes[cls] = {"traces": len(items), "detected": n_det, "recall": round(n_det / len(items), 3),
                        "early_alerts": early, "median_delay_steps": statistics.median(delays) if delays else None,
                        "criticals_before_onset": sum(i["criticals_before_onset"] for i in items)}
        all_delays += delays
        early_total += early
        detected += n_det
        failures += len(items)
    h = classes.get("healthy", {"traces": 0, "criticals": 0, "warnings": 0})
    overall = {"failure_traces": failures, "detected": detected, "recall": round(detected / failures, 3) if failures else None,
               "early_alerts": early_total, "median_delay_steps": statistics.median(all_delays) if all_delays else None,
               "healthy_traces": h["traces"], "healthy_criticals": h["criticals"], "healthy_warnings": h["warnings"],
               "healthy_warnings_per_trace": round(h["warnings"] / h["traces"], 3) if h["traces"] else None}
    return {"classes": classes, "overall": overall}


def check_targets(agg: dict[str, Any]) -> dict[str, Any]:
    """Pass/fail of each target on one split's aggregate."""
    c, o = agg["classes"], agg["overall"]
    low = {k: v["recall"] for k, v in c.items() if k != "healthy" and v.get("recall", 0) < TARGETS["recall_min_per_class"]}
    checks = {
        "recall_per_class": {"target": f">= {TARGETS['recall_min_per_class']} in every class", "failing": low, "pass": not low},
        "healthy_criticals": {"target": "0", "value": o["healthy_criticals"], "pass": o["healthy_criticals"] == 0},
        "healthy_warnings_per_trace": {"target": "<= 1", "value": o["healthy_warnings_per_trace"],
                                       "pass": (o["healthy_warnings_per_trace"] or 0) <= TARGETS["healthy_warnings_per_trace_max"]},
        "early_alerts": {"target": "<= 10", "value": o["early_alerts"], "pass": o["early_alerts"] <= TARGETS["early_alerts_max"]},
        "median_delay": {"target": "<= 10 steps", "value": o["median_delay_steps"],
                         "pass": o["median_delay_steps"] is not None and o["median_delay_steps"] <= TARGETS["median_delay_max"]},
    }
    return {"all_pass": all(v["pass"] for v in checks.values()), **checks}


def metric_names(traces: list[dict[str, Any]]) -> dict[str, Any]:
    """Every metric name in the traces and whether the metric guide resolves it."""
    from rlcockpit.metrics import lookup

    names: dict[str, set[str]] = defaultdict(set)
    for t in traces:
        for _s, m in t["metrics"]:
            for k in m:
                names[k].add(t["source"])
    missing = sorted(k for k in names if lookup(k) is None)
    return {"names": len(names), "resolved": len(names) - len(missing), "unresolved": len(missing),
            "unresolved_names": {k: sorted(names[k]) for k in missing}}


def _figures(agg: dict[str, Any]) -> dict[str, Any]:
    """The five target quantities of one aggregate (per-source table)."""
    o = agg["overall"]
    return {"recall": o["recall"], "detected": o["detected"], "failure_traces": o["failure_traces"],
            "healthy_traces": o["healthy_traces"], "healthy_criticals": o["healthy_criticals"],
            "healthy_warnings": o["healthy_warnings"], "healthy_warnings_per_trace": o["healthy_warnings_per_trace"],
            "early_alerts": o["early_alerts"], "median_delay_steps": o["median_delay_steps"]}


def per_source(scored: dict[str, list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]]],
               with_rlwatch: bool) -> dict[str, Any]:
    """Leave-one-source-out figures: for each source, the traces no detector was tuned on (the held-out split of
    the four corpus sources, whose tuning split WAS used for tuning; every trace of a real-run source), scored
    alone. ``scored[source]`` holds (trace, rlcockpit outcome, rlwatch outcome) of those traces."""
    out: dict[str, Any] = {}
    for src, items in scored.items():
        if not items:
            continue
        ours = aggregate([(t, r) for t, r, _w in items])
        entry: dict[str, Any] = {
            "tuned_on": src in SOURCES or src in DEVELOPED_ON,
            "scored": "held-out split (the tuning split of this source was used for tuning)" if src in SOURCES
                      else f"all traces (real runs; developed on: {DEVELOPED_ON[src]})" if src in DEVELOPED_ON
                      else "all traces (real runs, never used for tuning)",
            "traces": len(items), "classes": dict(sorted(_count(t["class"] for t, _r, _w in items).items())),
            "rlcockpit": {**_figures(ours), "targets": _source_targets(ours),
                          "recall_by_class": {c: v.get("recall") for c, v in ours["classes"].items() if c != "healthy"},
                          "healthy_alerts_by_detector": _healthy_detectors(items)}}
        if with_rlwatch:
            entry["rlwatch"] = _figures(aggregate([(t, w) for t, _r, w in items if w is not None]))
        out[src] = entry
    return out


def _source_targets(agg: dict[str, Any]) -> dict[str, Any]:
    """Each target's pass/fail on one source; ``None`` where the source has no trace it applies to (a source of
    healthy runs only has no recall or delay)."""
    checks = check_targets(agg)
    o = agg["overall"]
    out = {k: v["pass"] for k, v in checks.items() if k != "all_pass"}
    if not o["failure_traces"]:
        out.update(recall_per_class=None, early_alerts=None, median_delay=None)
    if not o["healthy_traces"]:
        out.update(healthy_criticals=None, healthy_warnings_per_trace=None)
    out["all_pass"] = all(v for v in out.values() if v is not None)
    return out


def _healthy_detectors(items: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]]) -> dict[str, int]:
    """Warnings/criticals on the source's healthy traces, counted per ``detector:severity`` (which detectors to
    fix; no per-trace detail, so a held-out source stays unseen trace by trace)."""
    total: dict[str, int] = defaultdict(int)
    for t, r, _w in items:
        if t["class"] == "healthy":
            for k, n in r.get("by_detector", {}).items():
                total[k] += n
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def _count(items: Any) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for i in items:
        counts[i] += 1
    return counts


def import_checks(real: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per real run: steps rlcockpit's importer read vs steps a clean parse counts (they must be equal), and the
    values left out of kept steps (the pair a line cut at 4096 characters was cut in)."""
    return [{"id": t["id"], "source": t["source"], "imported_steps": t["meta"]["imported_steps"],
             "clean_steps": t["meta"]["clean_steps"], "equal": t["meta"]["imported_steps"] == t["meta"]["clean_steps"],
             "import_problems": t["meta"]["import_problems"], "values_lost": len(t["meta"]["values_lost"])}
            for t in real]


def evaluate(splits: list[str], with_rlwatch: bool = True, responsible: dict[str, set[str]] | None = None,
             detail: bool = False, with_real: bool = True) -> dict[str, Any]:
    ours_map = responsible or OURS
    traces = load_corpus(splits)
    timings: list[float] = []
    cpu: list[float] = []
    report: dict[str, Any] = {"rule": {"window": list(WINDOW), "responsible": {k: sorted(v) for k, v in ours_map.items()},
                                       "rlwatch_responsible": {k: sorted(v) for k, v in RLWATCH.items()}},
                              "targets": TARGETS, "splits": {}}
    held_out: dict[str, list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]]] = {
        src: [] for src in SOURCES + REAL_SOURCES}
    for split in splits:
        mine = [t for t in traces if t["split"] == split]
        ours, theirs = [], []
        for t in mine:
            ours.append((t, score(t, run_ours(t, timings, cpu), ours_map)))
            if with_rlwatch:
                theirs.append((t, score(t, run_rlwatch(t), RLWATCH)))
            if split == "heldout":
                held_out[t["source"]].append((t, ours[-1][1], theirs[-1][1] if with_rlwatch else None))
        entry: dict[str, Any] = {"traces": len(mine), "corpus": _sizes(mine), "rlcockpit": aggregate(ours)}
        entry["rlcockpit"]["targets"] = check_targets(entry["rlcockpit"])
        if with_rlwatch:
            entry["rlwatch"] = aggregate(theirs)
        if detail:
            entry["per_trace"] = [_detail(t, r) for t, r in ours]
        report["splits"][split] = entry
    if with_real and "heldout" in splits:  # real runs are held out: never scored with the tuning split alone
        real = load_real()
        for t in real:
            held_out[t["source"]].append((t, score(t, run_ours(t), ours_map),
                                          score(t, run_rlwatch(t), RLWATCH) if with_rlwatch else None))
        report["real_runs"] = {"traces": len(real), "corpus": _sizes(real), "import": import_checks(real),
                               "metric_guide": metric_names(real)}
    report["per_source"] = per_source(held_out, with_rlwatch)
    arr, carr = np.array(timings), np.array(cpu)
    report["overhead_us_per_step"] = {"steps": int(arr.size), "p50": round(float(np.percentile(arr, 50)), 2),
                                      "p99": round(float(np.percentile(arr, 99)), 2), "mean": round(float(arr.mean()), 2),
                                      "cpu_p50": round(float(np.percentile(carr, 50)), 2),
                                      "cpu_p99": round(float(np.percentile(carr, 99)), 2)}
    report["metric_guide"] = metric_names(traces)
    return report


def _sizes(traces: list[dict[str, Any]]) -> dict[str, Any]:
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for t in traces:
        table[t["source"]][t["class"]] += 1
    return {src: dict(sorted(c.items())) for src, c in sorted(table.items())}


def _detail(t: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    ok = r.get("detected") if t["class"] != "healthy" else not (r["criticals"] or r["warnings"])
    return {"id": t["id"], "class": t["class"], "onset": t["onset"], "ok": ok, **{k: v for k, v in r.items() if k != "covered"}}


def markdown(report: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return "—" if v is None else (f"{v:.2f}" if isinstance(v, float) and not float(v).is_integer() else str(int(v) if isinstance(v, float) else v))

    lines = ["| source | " + " | ".join(report["splits"]) + " | classes |", "|---|" + "---|" * (len(report["splits"]) + 1)]
    sources = sorted({src for e in report["splits"].values() for src in e["corpus"]})
    for src in sources:
        counts = [sum(e["corpus"].get(src, {}).values()) for e in report["splits"].values()]
        classes: dict[str, int] = defaultdict(int)
        for e in report["splits"].values():
            for cls, n in e["corpus"].get(src, {}).items():
                classes[cls] += n
        lines.append(f"| {src} | " + " | ".join(map(str, counts)) + " | " + ", ".join(f"{c} {n}" for c, n in classes.items()) + " |")
    lines.append("| **all** | " + " | ".join(str(e["traces"]) for e in report["splits"].values()) + " | |")
    lines.append("")
    for split, e in report["splits"].items():
        lines += [f"**{split}** ({e['traces']} traces)", "",
                  "| class | traces | rlcockpit recall | early alerts | median delay | rlwatch recall | rlwatch early | rlwatch median delay |",
                  "|---|---|---|---|---|---|---|---|"]
        theirs = e.get("rlwatch", {}).get("classes", {})
        for cls, d in e["rlcockpit"]["classes"].items():
            t = theirs.get(cls, {})
            if cls == "healthy":
                lines.append(f"| healthy | {d['traces']} | criticals {d['criticals']}, warnings {d['warnings']} "
                             f"({f(d['warnings_per_trace'])}/trace) | | | criticals {t.get('criticals', '—')}, warnings "
                             f"{t.get('warnings', '—')} | | |")
                continue
            cov = t.get("covered", True)
            lines.append(f"| {cls} | {d['traces']} | {f(d['recall'])} | {d['early_alerts']} | {f(d['median_delay_steps'])} | "
                         f"{f(t.get('recall')) if cov else 'no detector'} | {f(t.get('early_alerts')) if cov else ''} | "
                         f"{f(t.get('median_delay_steps')) if cov else ''} |")
        o, tg = e["rlcockpit"]["overall"], e["rlcockpit"]["targets"]
        lines += ["", f"Overall: recall {f(o['recall'])} ({o['detected']}/{o['failure_traces']}), early alerts "
                  f"{o['early_alerts']}, median delay {f(o['median_delay_steps'])}; healthy: {o['healthy_criticals']} "
                  f"criticals, {f(o['healthy_warnings_per_trace'])} warnings per trace. Targets: "
                  + ", ".join(f"{k} {'PASS' if v['pass'] else 'FAIL'}" for k, v in tg.items() if k != "all_pass"), ""]
    lines += per_source_markdown(report)
    oh = report["overhead_us_per_step"]
    lines.append(f"Detector cost per step ({oh['steps']} steps): wall p50 {oh['p50']} µs, p99 {oh['p99']} µs; "
                 f"thread CPU p50 {oh['cpu_p50']} µs, p99 {oh['cpu_p99']} µs.")
    mg = report["metric_guide"]
    shapes = sorted({re.sub(r"gpu\.\d+\.", "gpu.N.", k) for k in mg["unresolved_names"]})  # one line per GPU key
    lines.append(f"Metric names: {mg['resolved']}/{mg['names']} resolve through the metric guide"
                 + (f"; unresolved: {', '.join('`' + k + '`' for k in shapes)}." if mg["unresolved"] else "."))
    return "\n".join(lines)


def per_source_markdown(report: dict[str, Any]) -> list[str]:
    """One row per source: rlcockpit and rlwatch figures on the traces nothing was tuned on."""
    rows = report.get("per_source") or {}
    if not rows:
        return []

    def cells(fig: dict[str, Any] | None) -> str:
        if not fig:
            return "— | — | — | — | —"
        rec = "—" if fig["recall"] is None else f"{fig['recall']:.2f} ({fig['detected']}/{fig['failure_traces']})"
        wpt = "—" if fig["healthy_warnings_per_trace"] is None else f"{fig['healthy_warnings_per_trace']:.2f}"
        delay = "—" if fig["median_delay_steps"] is None else f"{fig['median_delay_steps']:g}"
        return f"{rec} | {fig['healthy_criticals']} | {wpt} | {fig['early_alerts']} | {delay}"

    out = ["", "**Per source** (leave-one-source-out: traces no detector was tuned on)", "",
           "| source | tuned on | traces (healthy/failing) | rlcockpit recall | criticals on healthy | warnings per "
           "healthy run | alerts before onset−5 | median delay | rlwatch recall | rlwatch criticals | rlwatch warnings "
           "per healthy | rlwatch early | rlwatch median delay |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for src, e in rows.items():
        f = e["rlcockpit"]
        n = f"{e['traces']} ({f['healthy_traces']}/{f['failure_traces']})"
        tuned = "yes (developed on)" if src in DEVELOPED_ON else "yes (its tuning split)" if e["tuned_on"] else "no"
        out.append(f"| {src} | {tuned} | {n} | {cells(f)} | "
                   f"{cells(e.get('rlwatch'))} |")
    imp = report.get("real_runs", {}).get("import", [])
    if imp:
        bad = [i for i in imp if not i["equal"]]
        out += ["", f"Real-run imports: {len(imp) - len(bad)}/{len(imp)} files import with the step count of a clean "
                    "parse" + ("; mismatches: " + ", ".join(f"{i['id']} {i['imported_steps']} vs {i['clean_steps']}"
                                                               for i in bad) if bad else "") + "."]
    mg = report.get("real_runs", {}).get("metric_guide")
    if mg:
        names = list(mg["unresolved_names"])
        evals = [k for k in names if k.startswith("eval_")]  # TRL's evaluation copies of its training keys
        shown = [f"`{k}`" for k in sorted(set(names) - set(evals))] + ([f"{len(evals)} `eval_<key>` names"] if evals else [])
        out.append(f"Real-run metric names: {mg['resolved']}/{mg['names']} resolve through the metric guide"
                   + (f"; unresolved: {', '.join(shown)}." if shown else "."))
    return out


def _parse_responsible(items: list[str]) -> dict[str, set[str]]:
    out = {k: set(v) for k, v in OURS.items()}
    for item in items:
        cls, _, names = item.partition("=")
        if cls not in CLASSES or cls == "healthy" or not names:
            raise SystemExit(f"--responsible {item!r}: expected CLASS=DETECTOR[,DETECTOR], CLASS one of {CLASSES[1:]}")
        out.setdefault(cls, set()).update(n.strip() for n in names.split(",") if n.strip())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables (BENCHMARKS.md)")
    ap.add_argument("--split", choices=[*SPLITS, "all"], default="all", help="which split(s) to score (default all)")
    ap.add_argument("--list-misses", action="store_true", help="per-trace outcomes and misses (tuning split only)")
    ap.add_argument("--no-rlwatch", action="store_true", help="skip the rlwatch comparison")
    ap.add_argument("--no-real", action="store_true", help="skip the real-run files (real/manifest.json)")
    ap.add_argument("--responsible", action="append", default=[], metavar="CLASS=DET[,DET]",
                    help="also credit these detectors for CLASS (repeatable)")
    args = ap.parse_args(argv)
    splits = list(SPLITS) if args.split == "all" else [args.split]
    if args.list_misses and splits != ["tuning"]:
        ap.error("--list-misses shows per-trace detail and is only allowed with --split tuning (held-out stays unseen)")
    report = evaluate(splits, with_rlwatch=not args.no_rlwatch, responsible=_parse_responsible(args.responsible),
                      detail=args.list_misses, with_real=not args.no_real)
    if args.list_misses:
        for row in report["splits"]["tuning"]["per_trace"]:
            if not row["ok"]:
                print(json.dumps(row, default=str))
    if args.markdown:
        print(markdown(report))
    if args.json or not (args.markdown or args.list_misses):
        print(json.dumps(report, indent=2, default=lambda v: None if isinstance(v, float) and math.isnan(v) else str(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
