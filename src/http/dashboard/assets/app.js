// a2a-mailbox dashboard: live regions, confirmations and row selection. No dependencies.
"use strict";

// An element with data-live="URL" is replaced every 5 s by the HTML fragment at URL.
function startLive(el) {
  const refresh = async () => {
    try {
      const res = await fetch(el.dataset.live, { credentials: "same-origin", cache: "no-store" });
      if (res.redirected || res.status === 401 || res.status === 403) {
        window.location.reload();
        return;
      }
      if (res.ok) {
        el.innerHTML = await res.text();
        el.dataset.refreshed = String(Date.now());
      }
    } catch (e) {
      // The next round tries again.
    }
  };
  setInterval(refresh, 5000);
}

// A form (or a submit button) with data-confirm asks before it is sent.
function confirmSubmit(event) {
  const button = event.submitter;
  const text = (button && button.dataset.confirm) || event.target.dataset.confirm;
  if (text && !window.confirm(text)) {
    event.preventDefault();
  }
}

// A checkbox with data-select-all="NAME" checks every checkbox named NAME.
function selectAll(box) {
  box.addEventListener("change", () => {
    document.querySelectorAll(`input[type=checkbox][name="${box.dataset.selectAll}"]`)
      .forEach((b) => { b.checked = box.checked; });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live]").forEach(startLive);
  document.querySelectorAll("form").forEach((f) => f.addEventListener("submit", confirmSubmit));
  document.querySelectorAll("[data-select-all]").forEach(selectAll);
});
