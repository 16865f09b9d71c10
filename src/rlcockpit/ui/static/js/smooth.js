// Smoothing of a series (xs ascending, ys may hold null). Pure functions; null stays null.
//
// ema:   exponential moving average with TensorBoard's debiasing (the first points are not pulled to 0).
// twema: time-weighted EMA (as in W&B): each step's decay is weight^(dx / mean dx), so irregularly
//        spaced points (validation every 25 steps next to every step) are smoothed by distance, not count.
// mean:  centred running average over a window of 2k+1 points, k = round(weight * 50).

export const SMOOTHERS = ["none", "ema", "twema", "mean"];

export function ema(ys, w) {
  const out = new Array(ys.length);
  let last = 0, n = 0;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || !Number.isFinite(y)) { out[i] = null; continue; }
    last = last * w + (1 - w) * y;
    n++;
    out[i] = last / (1 - Math.pow(w, n));
  }
  return out;
}

export function twema(xs, ys, w) {
  const out = new Array(ys.length);
  let first = null, lastX = null, count = 0;
  for (let i = 0; i < xs.length; i++) if (ys[i] !== null && Number.isFinite(ys[i])) { if (first === null) first = xs[i]; lastX = xs[i]; count++; }
  const ref = count > 1 ? (lastX - first) / (count - 1) : 1;
  let num = 0, den = 0, prev = null;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || !Number.isFinite(y)) { out[i] = null; continue; }
    const decay = prev === null || ref <= 0 ? 0 : Math.pow(w, (xs[i] - prev) / ref);
    num = num * decay + y;
    den = den * decay + 1;
    prev = xs[i];
    out[i] = num / den;
  }
  return out;
}

export function runningMean(ys, w) {
  const k = Math.max(1, Math.round(w * 50));
  const out = new Array(ys.length);
  const idx = [];
  for (let i = 0; i < ys.length; i++) if (ys[i] !== null && Number.isFinite(ys[i])) idx.push(i);
  const pre = [0];
  for (const i of idx) pre.push(pre[pre.length - 1] + ys[i]);
  for (let i = 0; i < ys.length; i++) out[i] = null;
  for (let j = 0; j < idx.length; j++) {
    const lo = Math.max(0, j - k), hi = Math.min(idx.length - 1, j + k);
    out[idx[j]] = (pre[hi + 1] - pre[lo]) / (hi - lo + 1);
  }
  return out;
}

export function smooth(kind, weight, xs, ys) {
  if (!kind || kind === "none" || !(weight > 0)) return ys;
  if (kind === "ema") return ema(ys, weight);
  if (kind === "twema") return twema(xs, ys, weight);
  if (kind === "mean") return runningMean(ys, weight);
  return ys;
}
