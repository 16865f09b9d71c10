// Logged images (W&B's "image-file" references in sample cells) as thumbnails; a click opens the image
// full size in a lightbox (click or Escape closes it). The image bytes come from /api/runs/<id>/media/<sha256>.

import { el, runPath } from "./core.js";

export function isImageRef(v) {
  return !!v && typeof v === "object" && v._type === "image-file" && /^[0-9a-f]{64}$/.test(String(v.sha256));
}

/** The image references in a cell: one reference, or a list holding some. */
export function imageRefs(v) {
  if (isImageRef(v)) return [v];
  return Array.isArray(v) ? v.filter(isImageRef) : [];
}

export function mediaUrl(runId, ref) { return runPath(runId) + "/media/" + ref.sha256; }

function closeLightbox() {
  const box = document.getElementById("lightbox");
  if (box) box.remove();
  document.removeEventListener("keydown", onKey);
}

function onKey(e) { if (e.key === "Escape") closeLightbox(); }

export function openLightbox(src, caption) {
  closeLightbox();
  const img = el("img", { class: "lightbox-img", alt: caption || "" });
  img.src = src;
  const box = el("div", { id: "lightbox", class: "lightbox", role: "dialog" }, img,
    caption ? el("div", { class: "lightbox-caption", text: caption }) : null);
  box.addEventListener("click", closeLightbox);
  document.addEventListener("keydown", onKey);
  document.body.appendChild(box);
}

/** Thumbnails of ``refs`` (a click enlarges one). */
export function thumbs(runId, refs) {
  return el("div", { class: "thumbs" }, refs.map((ref) => {
    const src = mediaUrl(runId, ref);
    const img = el("img", { class: "thumb", alt: ref.caption || "", title: ref.caption || `${ref.width}×${ref.height}`, loading: "lazy" });
    img.src = src;
    img.addEventListener("click", (e) => { e.stopPropagation(); openLightbox(src, ref.caption); });
    return img;
  }));
}
