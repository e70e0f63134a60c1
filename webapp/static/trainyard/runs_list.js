// The runs list, live over the runs socket: status chips, step counts and reward sparklines.
(function () {
  "use strict";
  const SPARK_POINTS = 40;

  function drawSpark(svg, points) {
    const line = svg.querySelector("polyline");
    if (points.length < 2) { line.setAttribute("points", ""); return; }
    const width = svg.width.baseVal.value, height = svg.height.baseVal.value;
    const values = points.map((p) => p[1]);
    const low = Math.min(...values), span = (Math.max(...values) - low) || 1;
    const dx = width / (points.length - 1);
    line.setAttribute("points", values.map((v, i) =>
      `${(i * dx).toFixed(1)},${(height - ((v - low) / span) * height).toFixed(1)}`).join(" "));
  }

  function sparkPoints(svg) { return JSON.parse(svg.dataset.spark || "[]"); }

  function addRewards(row, rewards) {
    const svg = row.querySelector("[data-spark]");
    const byStep = new Map(sparkPoints(svg));  // a resumed run logs a step again: the newer value wins
    rewards.forEach(([step, value]) => byStep.set(step, value));
    const points = [...byStep.entries()].sort((a, b) => a[0] - b[0]).slice(-SPARK_POINTS);
    svg.dataset.spark = JSON.stringify(points);
    drawSpark(svg, points);
    row.querySelector("[data-reward]").textContent = points[points.length - 1][1].toFixed(3);
  }

  function apply(row, msg) {
    if (msg.type === "run.status") {
      const chip = row.querySelector("[data-status]");
      chip.textContent = msg.status; chip.className = "chip " + msg.status;
    }
    if (msg.type === "run.alert") {  // a chip per run, counting its alerts, live
      const chip = row.querySelector("[data-alerts]");
      const n = Number(chip.dataset.alerts || 0) + 1;
      chip.dataset.alerts = String(n); chip.hidden = false; chip.textContent = `${n} alert${n > 1 ? "s" : ""}`;
      chip.title = msg.alert.title + ": " + msg.alert.message;
    }
    if (msg.max_steps) row.querySelector("[data-progress]").textContent = `${msg.step}/${msg.max_steps}`;
    if (msg.rewards && msg.rewards.length) addRewards(row, msg.rewards);
  }

  function drawAll(root) { root.querySelectorAll("[data-spark]").forEach((svg) => drawSpark(svg, sparkPoints(svg))); }
  drawAll(document);
  document.body.addEventListener("htmx:afterSwap", (event) => drawAll(event.detail.target));  // filtered rows

  let retry = 500;
  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${proto}://${location.host}/ws/runs/`);
    socket.onopen = () => { retry = 500; };
    socket.onmessage = (event) => {
      const data = JSON.parse(event.data);
      const row = document.querySelector(`tr[data-run="${data.run_id}"]`);
      if (row) data.messages.forEach((msg) => apply(row, msg));
    };
    socket.onclose = () => { setTimeout(connect, retry); retry = Math.min(10000, retry * 2); };
  }
  connect();
})();
