"""Screenshots of the dashboard for docs/ui.md, taken in real Chromium on a generated store.

    python scripts/ui_screenshots.py [--out docs/img]      (or: make ui-screenshots)

The store is written through the tracking API as a GRPO sweep would (three learning rates, one of them
unstable), with verl's metric names, timings, rollout-correction metrics, GRPO samples and a probe set;
the PNGs are reduced to a 256-colour palette so they stay small in the repository.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
PROMPTS = ["Natalia sold clips to 48 of her friends in April, and then half as many in May. How many in total?",
           "Weng earns $12 an hour for babysitting. Yesterday she did 50 minutes. How much did she earn?",
           "Betty needs $100 for a wallet. She has half of it; her parents give $15 and grandparents twice that. "
           "How much more does she need?", "James writes a 3-page letter to 2 friends twice a week. Pages per year?"]


def metrics(step: int, lr: float, unstable: bool, seed: int) -> dict[str, float]:
    t = step / 200
    wobble = 0.04 * math.sin(step / 6 + 2 * seed) * (1 + seed)
    blow = unstable and step > 120
    kl = 0.002 * step * lr * (4 if blow else 1) + (0.4 if unstable and step == 131 else 0.0)
    return {
        "critic/score/mean": 0.25 + 0.55 * (1 - math.exp(-4 * t * lr)) - (0.3 * (step - 120) / 80 if blow else 0) + wobble,
        "critic/score/max": 1.0, "critic/advantages/mean": 0.0, "critic/advantages/max": 2.1 + 0.1 * math.sin(step),
        "actor/kl_loss": kl, "actor/entropy": 1.3 * math.exp(-t * lr * (3 if blow else 1)) + 0.05,
        "actor/pg_loss": 0.05 * math.cos(step / 9), "actor/pg_clipfrac": 0.02 + 0.01 * lr * t,
        "actor/grad_norm": 0.8 + 0.2 * math.sin(step / 5) + (9.0 if blow and step % 17 == 0 else 0.0),
        "actor/ppo_kl": 0.001 * lr, "actor/lr": 1e-6 * lr,
        "response_length/mean": 210 + 90 * t + (120 if blow else 0), "response_length/clip_ratio": 0.01 + (0.1 if blow else 0),
        "val-core/openai/gsm8k/acc/mean@1": 0.3 + 0.35 * (1 - math.exp(-3 * t * lr)) - (0.15 if blow else 0),
        "timing_s/gen": 4.0 + 0.3 * math.sin(step / 4) + t, "timing_s/old_log_prob": 0.9, "timing_s/ref": 0.7,
        "timing_s/adv": 0.05, "timing_s/update_actor": 2.4, "timing_s/update_weights": 0.35,
        "timing_s/step": 4.0 + 0.3 * math.sin(step / 4) + t + 0.9 + 0.7 + 0.05 + 2.4 + 0.35 + 0.3,
        "perf/mfu/actor": 0.34 + 0.01 * math.cos(step), "perf/throughput": 2300 - 300 * t,
        "training/rollout_probs_diff_mean": 0.003 + (0.012 if blow else 0.0), "training/rollout_probs_diff_max": 0.25,
        "rollout_corr/rollout_is_mean": 1.0 + (0.9 if blow else 0.02 * math.sin(step)), "rollout_corr/kl": 0.004 + (0.08 if blow else 0),
        "rollout_corr/rollout_is_eff_sample_size": 0.85 - (0.5 if blow else 0),
    }


def build(dir: Path) -> dict[str, str]:
    import rlcockpit
    from rlcockpit.health import Action, Cause, Finding

    ids = {}
    sweep = [(f"grpo-lr{lr_text}-s{seed}", lr_value, scale, scale > 5, seed)
             for lr_text, lr_value, scale in (("1e-6", 1e-6, 1.0), ("3e-6", 3e-6, 3.0), ("1e-5", 1e-5, 10.0)) for seed in (0, 1)]
    for name, lr_value, lr, unstable, seed in sweep:
        run = rlcockpit.init(project="gsm8k", name=name, group="lr-sweep", tags=["grpo", "qwen2.5-0.5b"], dir=dir,
                             config={"actor_rollout_ref": {"actor": {"optim": {"lr": lr_value}, "ppo_mini_batch_size": 64},
                                                           "rollout": {"n": 4, "temperature": 1.0}},
                                     "algorithm": {"adv_estimator": "grpo", "kl_ctrl": {"kl_coef": 0.001}}, "seed": seed},
                             system_interval=None, health=False, capture_meta=True)
        for step in range(200):
            run.log(metrics(step, lr, unstable, seed), step=step)
            if step % 20 == 0:
                rows = []
                for g, prompt in enumerate(PROMPTS):
                    for j in range(4):
                        ok = (g + j + step // 20) % 3 != 0 if g else True
                        rows.append({"prompt": prompt, "response": f"Let's think step by step. ... The answer is {g * 10 + j}.",
                                     "reward": float(ok), "uid": f"q{g}", "acc": float(ok), "format": 1.0 if j else 0.5,
                                     "response_length": 180 + 20 * j})
                run.log_samples(rows, step=step)
                run.log_samples([{"prompt": p, "response": f"... so the answer is {k + step // 20}", "reward": float(k % 2),
                                  "kind": "probe", "split": "val", "probe_id": k} for k, p in enumerate(PROMPTS[:2])], step=step)
        if unstable and seed == 0:
            run.log_finding(Finding(
                detector="kl_spike", severity="critical", step=131, title="KL to the reference jumped 40x",
                metric="actor/kl_loss", summary="actor/kl_loss went from 0.03 to 1.3 in one step; entropy and "
                "response length follow", causes=[Cause("learning rate too high for this batch size", 0.7,
                                                        "grad_norm spikes every ~17 steps after step 120")],
                actions=[Action("Lower the actor learning rate", ["actor.optim.lr=3e-6"],
                                ["actor_rollout_ref.actor.optim.lr=3e-6"], "the stable runs of the sweep use 1e-6 and 3e-6")]))
            run.log_finding(Finding(detector="entropy_collapse", severity="warning", step=150, title="Entropy falling fast",
                                    metric="actor/entropy"))
        run.finish()
        ids[name] = run.id
    return ids


def shrink(path: Path) -> None:
    from PIL import Image

    img = Image.open(path).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    from rlcockpit.ui.server import make_server, serve_in_thread

    with tempfile.TemporaryDirectory(prefix="rlc-shots-") as tmp:
        ids = build(Path(tmp))
        server = make_server(tmp, port=0)
        serve_in_thread(server)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        bad = ids["grpo-lr1e-5-s0"]
        shots = [
            ("ui-run.png", f"/run/{bad}?smooth=ema&sw=0.6", "[data-loaded='1']", "en", 1440, 900),
            ("ui-compare.png", f"/compare?runs={','.join(ids.values())}&by=actor_rollout_ref.actor.optim.lr"
                               "&keys=critic/score/mean,actor/kl_loss,actor/entropy,response_length/mean", "#compare-charts[data-loaded]", "en", 1440, 900),
            ("ui-samples-groups.png", f"/run/{bad}/samples?view=groups", "#groups-out .grpo-group", "en", 1280, 900),
            ("ui-diagnosis.png", f"/run/{bad}/diagnosis", "#root-cause", "en", 1280, 800),
            ("ui-phases.png", f"/run/{bad}/phases", "#phase-table", "en", 1280, 800),
            ("ui-run-zh.png", f"/run/{bad}", "[data-loaded='1']", "zh", 1280, 800),
        ]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for name, hash_, ready, lang, w, h in shots:
                page = browser.new_page(viewport={"width": w, "height": h})
                page.goto(base + "/")
                page.evaluate(f"() => {{ localStorage.clear(); localStorage.setItem('rlcockpit-lang', '{lang}'); }}")
                page.goto(base + "/#" + hash_)
                page.reload()
                page.wait_for_selector(ready, timeout=30_000)
                page.wait_for_timeout(600)
                page.screenshot(path=str(out / name))
                shrink(out / name)
                print(f"{out / name}: {(out / name).stat().st_size // 1024} KiB")
                page.close()
            browser.close()
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
