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
