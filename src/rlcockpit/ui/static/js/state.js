// Page settings kept in the URL (shareable, back button) and in localStorage (defaults for next time).
// The hash is "#/<route>?<params>"; updating it uses history.replaceState, which does not re-render.

export function hashParts() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const i = raw.indexOf("?");
  const path = i < 0 ? raw : raw.slice(0, i);
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(i < 0 ? "" : raw.slice(i + 1)) };
}

/** Write params (null/""/undefined removes) into the current hash without navigating. */
export function setHashParams(values) {
  const raw = location.hash.replace(/^#/, "") || "/";
  const i = raw.indexOf("?");
  const path = i < 0 ? raw : raw.slice(0, i);
  const params = new URLSearchParams(i < 0 ? "" : raw.slice(i + 1));
  for (const [k, v] of Object.entries(values)) {
    if (v === null || v === undefined || v === "" || v === false) params.delete(k);
    else params.set(k, v === true ? "1" : String(v));
  }
  const qs = params.toString();
  history.replaceState(null, "", "#" + path + (qs ? "?" + qs : ""));
}

/** Settings for a page: URL value, else localStorage, else default. Returns {get, set}. */
export function settings(scope, defaults) {
  const { params } = hashParts();
  let stored = {};
  try { stored = JSON.parse(localStorage.getItem("rlcockpit-" + scope) || "{}"); } catch (e) { stored = {}; }
  const values = {};
  for (const [k, d] of Object.entries(defaults)) {
    const fromUrl = params.get(k);
    const raw = fromUrl !== null ? fromUrl : stored[k] !== undefined ? stored[k] : d;
    values[k] = typeof d === "number" ? Number(raw) : typeof d === "boolean" ? raw === true || raw === "1" || raw === "true" : raw;
  }
  return {
    values,
    set(k, v) {
      values[k] = v;
      const keep = {};
      for (const [key, d] of Object.entries(defaults)) keep[key] = values[key] === d ? undefined : values[key];
      localStorage.setItem("rlcockpit-" + scope, JSON.stringify(keep));
      setHashParams({ [k]: v === defaults[k] ? null : v });
    },
  };
}
