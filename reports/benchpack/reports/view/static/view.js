// bench view: small conveniences; every page works without this file.
"use strict";
document.addEventListener("change", (e) => {
  const el = e.target;
  if (el.matches("[data-autosubmit]") && el.form) el.form.requestSubmit();
});
document.addEventListener("click", (e) => {
  const el = e.target.closest("[data-fold]");
  if (!el) return;
  const open = el.dataset.fold === "open";
  document.querySelectorAll("details").forEach((d) => { d.open = open; });
});
// live: refetch this page and swap in its #live part (sessions appear as a run finishes them)
let timer = null;
async function refresh() {
  const res = await fetch(location.href, { headers: { "Accept": "text/html" } });
  if (!res.ok) return;
  const doc = new DOMParser().parseFromString(await res.text(), "text/html");
  const fresh = doc.getElementById("live"), here = document.getElementById("live");
  if (fresh && here) here.replaceWith(fresh);
  const count = doc.getElementById("count"), mine = document.getElementById("count");
  if (count && mine) mine.firstChild.textContent = count.firstChild.textContent;
  fragments();
  pickable();
}
// parts slower than the page (the runs' headline intervals): fetched once it is shown
function fragments() {
  document.querySelectorAll("[data-fragment]").forEach(async (el) => {
    if (el.dataset.loaded) return;
    el.dataset.loaded = "1";
    const res = await fetch(el.dataset.fragment, { headers: { "X-Fragment": "1" } });
    el.innerHTML = res.ok ? await res.text() : `<p class="error">✗ ${res.status}</p>`;
  });
}
document.addEventListener("DOMContentLoaded", fragments);
document.addEventListener("change", (e) => {
  if (!e.target.matches("[data-live]")) return;
  if (timer) { clearInterval(timer); timer = null; }
  if (e.target.checked) timer = setInterval(() => { refresh().catch(() => {}); }, 5000);
  sessionStorage.setItem("bench-view-live", e.target.checked ? "1" : "");
});
document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector("[data-live]");
  if (box && sessionStorage.getItem("bench-view-live") === "1") {
    box.checked = true;
    box.dispatchEvent(new Event("change", { bubbles: true }));
  }
});
// a model call's prompt and reply: fetched when its fold first opens (a long session's calls
// would repeat its transcript hundreds of times in the page)
document.addEventListener("toggle", async (e) => {
  const d = e.target;
  if (!(d instanceof HTMLDetailsElement) || !d.open || !d.dataset.src || d.dataset.loaded) return;
  d.dataset.loaded = "1";
  const res = await fetch(d.dataset.src, { headers: { "X-Fragment": "1" } });
  const box = document.createElement("div");
  box.innerHTML = res.ok ? await res.text() : `<p class="error">✗ ${res.status}</p>`;
  d.querySelector(":scope > a")?.remove();
  d.append(box);
}, true);
// the runs page: "compare" once exactly two runs are ticked (the server says so otherwise)
function pickable() {
  const button = document.querySelector("[data-pick]");
  if (!button) return;
  const n = document.querySelectorAll("form.pick input[name=run]:checked").length;
  button.disabled = n !== 2;
  button.title = n === 2 ? "" : `tick two runs (${n} ticked)`;
}
document.addEventListener("DOMContentLoaded", pickable);
document.addEventListener("change", (e) => {
  if (e.target.matches("form.pick input[name=run]")) pickable();
});
