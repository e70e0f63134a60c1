// A job's box: poll its status every second, show the phase and progress, and when it is done follow it (to the
// run it queued) or reload the page that shows its result (a test drive). Errors stay on the page, by field.
(function () {
  "use strict";
  const box = document.getElementById("job");
  if (!box) return;
  const status = document.getElementById("job-status"), phase = document.getElementById("job-phase");
  const bar = document.getElementById("job-bar"), errors = document.getElementById("job-errors");
  async function poll() {
    let job;
    try { job = await (await fetch(box.dataset.url, { headers: { Accept: "application/json" } })).json(); }
    catch (e) { return setTimeout(poll, 2000); }
    status.textContent = job.status; status.className = "chip " + job.status;
    phase.textContent = job.phase; bar.style.width = Math.round(job.progress * 100) + "%";
    if (!job.finished) return setTimeout(poll, 1000);
    if (job.status === "succeeded") {
      if (box.dataset.then === "reload") return location.reload();
      if (job.next) return location.assign(job.next);
      return;
    }
    errors.innerHTML = "";
    for (const [field, messages] of Object.entries(job.errors)) {
      const li = document.createElement("li");
      if (field !== "__all__") { const b = document.createElement("strong"); b.textContent = field + ": "; li.appendChild(b); }
      li.appendChild(document.createTextNode(messages.join(" ")));
      errors.appendChild(li);
    }
    errors.hidden = false;
    const back = document.getElementById("job-back"); if (back) back.hidden = false;
  }
  if (!["succeeded", "failed"].includes(status.textContent.trim())) poll();
})();
