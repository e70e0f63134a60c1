// The compare page: the run page's panels (same sections, same arrangement of the user's), each overlaying every
// run in a stable colour per run; smoothing, x axis (step or seconds since each run's start), zoom per panel.
(function () {
  "use strict";
  const boot = JSON.parse(document.getElementById("compare-boot").textContent);
  const P = window.TrainyardPanels;
  const PALETTE = ["#3556d8", "#d8553a", "#12805c", "#9b51e0", "#b54708", "#0e7490", "#be185d", "#4d7c0f"];
  const colour = (id) => PALETTE[id % PALETTE.length];  // stable: a run keeps its colour on every page
  document.querySelectorAll(".run-colour").forEach((el) => { el.style.background = colour(Number(el.dataset.run)); el.style.color = "#fff"; });
  const ids = boot.runs.map((r) => r.id).join(",");
  const maxSteps = Math.max(1, ...boot.runs.map((r) => r.maxSteps || 0));
  const state = (window.trainyardCompare = { data: {}, charts: {} });

  function ema(values, w) { if (!w) return values; let last = null; return values.map((v) => (v == null ? null : (last = last == null ? v : last * w + (1 - w) * v))); }
  const byWall = () => document.getElementById("xaxis").value === "wall_time";

  function build(name, data) {
    const w = Number(document.getElementById("smoothing").value);
    const xs = new Set();
    const per = boot.runs.map((r) => {
      const s = (data[r.id] || {})[name] || { step: [], value: [], wall_time: [] };
      const start = s.wall_time.length ? s.wall_time[0] : 0;
      const x = byWall() ? s.wall_time.map((t) => t - start) : s.step;
      x.forEach((v) => xs.add(v));
      return { x, y: ema(s.value, w) };
    });
    const xAll = [...xs].sort((a, b) => a - b);
    const ys = per.map(({ x, y }) => { const m = new Map(x.map((v, i) => [v, y[i]])); return xAll.map((v) => (m.has(v) ? m.get(v) : null)); });
    return [xAll, ...ys];
  }

  function makePanel(def, body, el) {
    const name = def.names[0];
    const chart = { def, zoomed: null };
    const value = (u, v) => P.valueText(v, def.unit);
    // x is a step, or seconds since each run's start: never a date (uPlot's default time scale would show 1970).
    const opts = { width: Math.max(280, body.clientWidth || 320), height: 170,
      scales: { x: { time: false, range: (u, min, max) => (chart.zoomed || byWall() ? [min, max] : [0, Math.max(maxSteps, max || 0)]) },
                y: { range: P.yRange(def.unit) } },
      axes: [{ label: byWall() ? "seconds since start" : "step", values: P.axisValues("", el, "xTicks") }, { values: P.axisValues(def.unit, el), size: 60 }],
      series: [{ label: byWall() ? "seconds" : "step" }].concat(boot.runs.map((r) => ({ label: r.name, stroke: colour(r.id), width: 1.5, spanGaps: true, value }))),
      hooks: { setSelect: [async (u) => {
        if (u.select.width < 5 || byWall()) return;
        const lo = Math.floor(u.posToVal(u.select.left, "x")), hi = Math.ceil(u.posToVal(u.select.left + u.select.width, "x"));
        const q = new URLSearchParams({ runs: ids, names: name, lo, hi });
        const body = await (await fetch(`/runs/compare/metrics.json?${q}`)).json();
        chart.zoomed = true; chart.plot.setData(build(name, body.runs)); u.setSelect({ width: 0, height: 0 }, false);
      }] } };
    chart.plot = new uPlot(opts, build(name, state.data), body);
    chart.update = () => { if (!chart.zoomed) chart.plot.setData(build(name, state.data)); };
    body.addEventListener("dblclick", () => { chart.zoomed = null; chart.update(); });
    state.charts[def.key] = chart;
    return chart;
  }

  const workspace = new P.Workspace({ container: document.getElementById("charts"), search: document.getElementById("chart-search"),
                                      hiddenBar: document.getElementById("charts-hidden"), makePanel });
  async function load() {
    const body = await (await fetch(`/runs/compare/metrics.json?runs=${ids}`)).json();
    state.data = body.runs;
    const names = new Set(Object.values(body.runs).flatMap((series) => Object.keys(series)));
    if (!(await workspace.setNames([...names]))) workspace.update();
  }
  document.getElementById("smoothing").addEventListener("input", () => workspace.update());
  document.getElementById("xaxis").addEventListener("change", () => workspace.render());
  load();
})();
