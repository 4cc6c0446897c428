// Progressive enhancement only: every page reads and every form posts without this file.
"use strict";
document.addEventListener("submit", (event) => {
  const button = event.submitter;
  const message = button && button.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLElement && target.closest("input, textarea, select")) return;
  const field = document.querySelector("[data-shortcut='/']");
  if (field) { event.preventDefault(); field.focus(); }
});
function count(area) {
  const counter = area.form && area.form.querySelector(".counter");
  if (!counter) return;
  const limit = Number(area.dataset.limit);
  const used = area.value.trim().length;
  counter.textContent = `${used.toLocaleString()} / ${limit.toLocaleString()} chars`;
  counter.classList.toggle("bad", used > limit);
}
document.querySelectorAll("textarea[data-limit]").forEach((area) => {
  count(area);
  area.addEventListener("input", () => count(area));
});
