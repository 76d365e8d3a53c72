// Drag and drop onto the upload form: dropped files go into the form's own file
// input and the form is submitted as if they had been chosen with it, so the
// page works the same with or without this script.
document.addEventListener("DOMContentLoaded", () => {
  for (const form of document.querySelectorAll("form[data-dropzone]")) {
    const zone = form.querySelector("[data-dropzone-target]");
    const input = form.querySelector("input[type=file]");
    if (!zone || !input) continue;
    for (const name of ["dragenter", "dragover"]) {
      zone.addEventListener(name, (event) => { event.preventDefault(); zone.classList.add("dragging"); });
    }
    for (const name of ["dragleave", "drop"]) {
      zone.addEventListener(name, () => zone.classList.remove("dragging"));
    }
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      if (!event.dataTransfer.files.length) return;
      input.files = event.dataTransfer.files;
      form.requestSubmit();
    });
  }
});

// Forms that destroy something ask first (data-confirm holds the question).
document.addEventListener("submit", (event) => {
  const question = event.target.dataset ? event.target.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});

// Choosing a claim shows its passage with the quote highlighted. The claims are submit
// buttons of a GET form (?claim=N), so without this script the page reloads with that
// claim chosen; with it the passage switches in place. Buttons answer Enter and Space.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-claim]");
  if (!button) return;
  const list = button.closest("[data-claims]");
  const panel = list && document.getElementById(list.dataset.claims);
  if (!panel) return;
  event.preventDefault();
  for (const other of list.querySelectorAll("button[data-claim]")) {
    other.setAttribute("aria-pressed", String(other === button));
  }
  for (const passage of panel.querySelectorAll("[data-passage]")) {
    passage.hidden = passage.dataset.passage !== button.dataset.claim;
  }
  const mark = panel.querySelector(`[data-passage="${button.dataset.claim}"] mark`);
  if (mark) mark.scrollIntoView({ block: "nearest" });
});

// A citation mark in the answer text ([1]) selects its claim: the same as choosing the claim
// (without this script the link reloads the page with ?claim=N).
document.addEventListener("click", (event) => {
  const mark = event.target.closest("a.cite[data-claim]");
  if (!mark) return;
  const button = document.querySelector(`button.claim-select[data-claim="${mark.dataset.claim}"]`);
  if (!button) return;
  event.preventDefault();
  button.click();
  button.scrollIntoView({ block: "nearest" });
  button.focus({ preventScroll: true });
});

// Score bars carry their values in data attributes (the Content-Security-Policy allows no
// inline styles) and get them as CSS variables here, on load and in every htmx swap.
function fillScorebars(root) {
  for (const bar of root.querySelectorAll("[data-score][data-threshold]")) {
    bar.style.setProperty("--score", bar.dataset.score);
    bar.style.setProperty("--threshold", bar.dataset.threshold);
  }
}
document.addEventListener("DOMContentLoaded", () => fillScorebars(document));
document.addEventListener("htmx:load", (event) => fillScorebars(event.detail.elt.parentNode || document));
