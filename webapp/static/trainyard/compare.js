// The compare page: one metric of every run overlaid, a stable colour per run, smoothing, x axis, zoom.
(function () {
  "use strict";
  const boot = JSON.parse(document.getElementById("compare-boot").textContent);
  const PALETTE = ["#3556d8", "#d8553a", "#12805c", "#9b51e0", "#b54708", "#0e7490", "#be185d", "#4d7c0f"];
  const colour = (id) => PALETTE[id % PALETTE.length];  // stable: a run keeps its colour on every page
  document.querySelectorAll(".run-colour").forEach((el) => { el.style.background = colour(Number(el.dataset.run)); el.style.color = "#fff"; });
  const ids = boot.runs.map((r) => r.id).join(",");
  let data = {}, plot = null, range = null;

  function ema(values, w) { if (!w) return values; let last = null; return values.map((v) => (v == null ? null : (last = last == null ? v : last * w + (1 - w) * v))); }

  function build() {
    const name = document.getElementById("metric").value, w = Number(document.getElementById("smoothing").value);
    const byWall = document.getElementById("xaxis").value === "wall_time";
    const xs = new Set();
    const per = boot.runs.map((r) => {
      const s = (data[r.id] || {})[name] || { step: [], value: [], wall_time: [] };
      const start = s.wall_time.length ? s.wall_time[0] : 0;
      const x = byWall ? s.wall_time.map((t) => t - start) : s.step;
      x.forEach((v) => xs.add(v));
      return { x, y: ema(s.value, w) };
    });
    const xAll = [...xs].sort((a, b) => a - b);
    const ys = per.map(({ x, y }) => { const m = new Map(x.map((v, i) => [v, y[i]])); return xAll.map((v) => (m.has(v) ? m.get(v) : null)); });
    return [xAll, ...ys];
  }
  function draw() {
    const el = document.getElementById("compare-chart"); el.innerHTML = "";
    const byWall = document.getElementById("xaxis").value === "wall_time";
    // x is a step, or seconds since each run's start: never a date (uPlot's default time scale would show 1970).
    const opts = { width: el.clientWidth || 900, height: 320, scales: { x: { time: false } },
      axes: [{ label: byWall ? "seconds since start" : "step" }, {}],
      series: [{ label: byWall ? "seconds" : "step" }].concat(boot.runs.map((r) => ({ label: r.name, stroke: colour(r.id), width: 1.5, spanGaps: true }))),
      hooks: { setSelect: [async (u) => {
        if (u.select.width < 5 || document.getElementById("xaxis").value !== "step") return;
        range = [Math.floor(u.posToVal(u.select.left, "x")), Math.ceil(u.posToVal(u.select.left + u.select.width, "x"))];
        await load(); } ] } };
    plot = new uPlot(opts, build(), el);
  }
  async function load() {
    const q = new URLSearchParams({ runs: ids, names: document.getElementById("metric").value });
    if (range) { q.set("lo", range[0]); q.set("hi", range[1]); }
    const body = await (await fetch(`/runs/compare/metrics.json?${q}`)).json();
    data = body.runs; draw();
  }
  document.getElementById("metric").addEventListener("change", () => { range = null; load(); });
  document.getElementById("smoothing").addEventListener("input", draw);
  document.getElementById("xaxis").addEventListener("change", draw);
  document.getElementById("compare-chart").addEventListener("dblclick", () => { range = null; load(); });
  load();
})();
