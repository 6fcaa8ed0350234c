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

// A form (or a submit button) with data-confirm asks before it is sent. In its text,
// {selected} is the number of rows checked in the form and {posture} the duplicate risk chosen
// (its name: idempotent or operator_accepted). A button disabled asks nothing.
function confirmSubmit(event) {
  const button = event.submitter;
  const form = event.target;
  let text = (button && button.dataset.confirm) || form.dataset.confirm;
  if (button && button.disabled) {
    event.preventDefault();
    return;
  }
  if (!text) {
    return;
  }
  // The form's own controls (a row's controls inside its table belong to that row's form).
  const own = Array.from(form.elements);
  const checked = own.filter((el) => el.name === "task" && el.type === "checkbox" && el.checked);
  const posture = own.find((el) => el.name === "duplicate_risk" && el.tagName === "SELECT");
  text = text.replace("{selected}", String(checked.length));
  if (posture) {
    text = text.replace("{posture}", posture.value);
  }
  if (!window.confirm(text)) {
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

// An element with data-selected-count="NAME" says how many checkboxes named NAME are checked.
function countSelected(el) {
  const name = el.dataset.selectedCount;
  const show = () => {
    const n = document.querySelectorAll(`input[type=checkbox][name="${name}"]:checked`).length;
    el.textContent = `${n} selected`;
  };
  document.addEventListener("change", show);
  show();
}

// A button with data-needs-selection is enabled only while a row is selected, and one with
// data-needs-message="ID" only while the box ID holds a message; one with data-lacks (the
// token lacks its capability) stays disabled.
function guardButtons() {
  const buttons = document.querySelectorAll("button[data-needs-selection], button[data-needs-message]");
  if (!buttons.length) {
    return;
  }
  const update = () => {
    const selected = document.querySelectorAll('input[type=checkbox][name="task"]:checked').length;
    buttons.forEach((b) => {
      const box = b.dataset.needsMessage && document.getElementById(b.dataset.needsMessage);
      const empty = box && box.value.trim() === "";
      const none = b.hasAttribute("data-needs-selection") && selected === 0;
      b.disabled = b.hasAttribute("data-lacks") || none || Boolean(empty);
    });
  };
  document.addEventListener("change", update);
  document.addEventListener("input", update);
  update();
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live]").forEach(startLive);
  document.querySelectorAll("form").forEach((f) => f.addEventListener("submit", confirmSubmit));
  document.querySelectorAll("[data-select-all]").forEach(selectAll);
  document.querySelectorAll("[data-selected-count]").forEach(countSelected);
  guardButtons();
});
