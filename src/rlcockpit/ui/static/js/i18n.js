// UI language: every visible text goes through t(key, vars); strings live in /static/i18n/<lang>.json.
// The choice is kept in localStorage ("rlcockpit-lang"); ?lang= in the hash overrides it once.

export const LANGS = ["en", "zh"];
let lang = "en";
let strings = {};
let fallback = {};

async function fetchStrings(l) {
  const resp = await fetch(`/static/i18n/${l}.json`, { credentials: "same-origin", cache: "no-cache" });
  if (!resp.ok) throw new Error(`cannot load /static/i18n/${l}.json (${resp.status})`);
  return resp.json();
}

export async function initLang(wanted) {
  const saved = localStorage.getItem("rlcockpit-lang");
  lang = LANGS.includes(wanted) ? wanted : LANGS.includes(saved) ? saved : (navigator.language || "").startsWith("zh") ? "zh" : "en";
  fallback = await fetchStrings("en");
  strings = lang === "en" ? fallback : await fetchStrings(lang);
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
}

export async function setLang(l) {
  localStorage.setItem("rlcockpit-lang", l);
  await initLang(l);
}

export function getLang() { return lang; }

/** The text for key in the current language; {name} placeholders are replaced from vars. */
export function t(key, vars) {
  let s = strings[key] ?? fallback[key] ?? key;
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v));
  return s;
}
