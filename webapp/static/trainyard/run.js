// The run page: charts (uPlot), live episodes and status over the run's WebSocket, with replay on reconnect.
(function () {
  "use strict";
  const boot = JSON.parse(document.getElementById("run-boot").textContent);
  const base = `/runs/${boot.run}/`;
  const state = (window.trainyardRun = { series: {}, charts: {}, lastSeq: 0, episodes: new Map(), status: boot.status, startedAt: null,
                  smoothing: 0, xaxis: "step", pendingDraw: false });

  const KEY_CHARTS = [
    { title: "reward (mean ± std)", names: ["reward"], band: "reward_std", key: "reward" },
    { title: "loss", names: ["loss"] },
    { title: "KL", names: ["kl"] },
    { title: "entropy", names: ["entropy"] },
    { title: "completion length", names: ["completions/mean_length", "completions/max_length"] },
    { title: "tool calls / failures", names: ["tools/call_frequency", "tools/failure_frequency"] },
  ];
  const COLORS = ["#3556d8", "#d8553a", "#12805c", "#9b51e0", "#b54708", "#0e7490"];

  function ema(values, weight) {
    if (!weight) return values;
    const out = []; let last = null;
    for (const v of values) { last = last === null ? v : last * weight + (1 - weight) * v; out.push(last); }
    return out;
  }

  function chartData(def) {
    const xs = new Map();
    for (const name of def.names) {
      const s = state.series[name]; if (!s) continue;
      s.step.forEach((step, i) => xs.set(step, state.xaxis === "step" ? step : s.wall_time[i]));
    }
    const steps = [...xs.keys()].sort((a, b) => a - b);
    const x = steps.map((s) => xs.get(s));
    const ys = def.names.map((name) => {
      const s = state.series[name]; const byStep = new Map();
      if (s) s.step.forEach((step, i) => byStep.set(step, s.value[i]));
      return ema(steps.map((st) => (byStep.has(st) ? byStep.get(st) : null)), state.smoothing);
    });
    if (def.band && state.series[def.band]) {
      const sd = new Map(); const s = state.series[def.band];
      s.step.forEach((step, i) => sd.set(step, s.value[i]));
      const mean = ys[0];
      ys.push(steps.map((st, i) => (mean[i] === null ? null : mean[i] + (sd.get(st) || 0))));
      ys.push(steps.map((st, i) => (mean[i] === null ? null : mean[i] - (sd.get(st) || 0))));
    }
    return { steps, data: [x, ...ys] };
  }

  function makeChart(def, container) {
    const wrap = document.createElement("div"); wrap.className = "chart"; wrap.dataset.metric = def.names[0];
    wrap.innerHTML = `<h3>${def.title}</h3>`; container.appendChild(wrap);
    const seriesOpts = [{ label: state.xaxis }].concat(def.names.map((n, i) => ({ label: n, stroke: COLORS[i % 6], width: 1.5, spanGaps: true })));
    if (def.band) seriesOpts.push({ label: "+std", stroke: "#a9b8f0", dash: [4, 4] }, { label: "-std", stroke: "#a9b8f0", dash: [4, 4] });
    const opts = { width: Math.max(380, wrap.clientWidth - 10), height: 200, series: seriesOpts,
      scales: { x: { time: state.xaxis === "wall_time" } }, legend: { live: true },
      hooks: { setSelect: [(u) => zoom(def, u)] } };
    const built = chartData(def);
    const plot = new uPlot(opts, built.data, wrap);
    plot.steps = built.steps;
    if (def.key === "reward") {
      plot.over.addEventListener("click", () => {
        const idx = plot.cursor.idx; if (idx == null) return;
        const step = plot.steps[idx];
        document.getElementById("filter-step").value = step;
        loadEpisodes();
      });
      plot.over.style.cursor = "pointer";
    }
    state.charts[def.title] = { plot, def, wrap };
  }

  // Zooming (drag to select) re-fetches that range at full resolution (the server downsamples to ~2,000 points);
  // a double click goes back to the whole run.
  async function zoom(def, u) {
    if (u.select.width < 5 || state.xaxis !== "step") return;
    const lo = Math.floor(u.posToVal(u.select.left, "x")), hi = Math.ceil(u.posToVal(u.select.left + u.select.width, "x"));
    const q = new URLSearchParams({ names: def.names.concat(def.band ? [def.band] : []).join(","), lo, hi });
    const body = await (await fetch(`${base}metrics.json?${q}`)).json();
    const chart = state.charts[def.title];
    chart.zoomed = { series: body.series };
    const saved = state.series; state.series = { ...saved, ...body.series };
    const built = chartData(def); state.series = saved;
    chart.plot.steps = built.steps; chart.plot.setData(built.data); u.setSelect({ width: 0, height: 0 }, false);
  }
  document.addEventListener("dblclick", (e) => {
    const wrap = e.target.closest(".chart"); if (!wrap) return;
    for (const c of Object.values(state.charts)) if (c.wrap === wrap) c.zoomed = null;
    scheduleDraw();
  });

  function allDefs() {
    const defs = KEY_CHARTS.filter((d) => d.names.some((n) => state.series[n]));
    const shown = new Set(defs.flatMap((d) => d.names.concat(d.band ? [d.band] : [])));
    const groups = {};
    for (const name of Object.keys(state.series).sort()) {
      if (shown.has(name)) continue;
      const prefix = name.includes("/") ? name.split("/")[0] : "train";
      (groups[prefix] = groups[prefix] || []).push(name);
    }
    // Series of very different scales (num_tokens in tens of thousands beside a learning rate) get their own
    // panel: one chart per prefix and order of magnitude, so no axis reads "0,000".
    for (const [prefix, names] of Object.entries(groups)) {
      const byScale = {};
      for (const name of names) (byScale[magnitude(name)] = byScale[magnitude(name)] || []).push(name);
      const scales = Object.keys(byScale);
      for (const scale of scales) {
        const members = byScale[scale];
        for (let i = 0; i < members.length; i += 6) {
          const title = scales.length === 1 ? prefix : `${prefix}: ${members.slice(i, i + 6).join(", ")}`;
          defs.push({ title, names: members.slice(i, i + 6) });
        }
      }
    }
    return defs;
  }

  function magnitude(name) {
    const values = (state.series[name] || { value: [] }).value.filter((v) => v !== null && isFinite(v) && v !== 0);
    if (!values.length) return 0;
    const largest = Math.max(...values.map((v) => Math.abs(v)));
    return Math.floor(Math.log10(largest) / 2);  // buckets two decades wide
  }

  function rebuildCharts() {
    const container = document.getElementById("charts");
    container.innerHTML = ""; state.charts = {};
    for (const def of allDefs()) makeChart(def, container);
  }

  function redraw() {
    state.pendingDraw = false;
    const defs = allDefs();
    if (defs.length !== Object.keys(state.charts).length) return rebuildCharts();
    for (const { plot, def, zoomed } of Object.values(state.charts)) {
      if (zoomed) continue;  // a zoomed chart keeps its range until a double click
      const built = chartData(def); plot.steps = built.steps; plot.setData(built.data);
    }
  }
  function scheduleDraw() { if (!state.pendingDraw) { state.pendingDraw = true; requestAnimationFrame(redraw); } }

  function addMetrics(msg) {
    for (const [name, value] of Object.entries(msg.values)) {
      const s = (state.series[name] = state.series[name] || { step: [], value: [], wall_time: [] });
      const at = s.step.indexOf(msg.step);
      if (at >= 0) { s.value[at] = value; continue; }
      s.step.push(msg.step); s.value.push(value); s.wall_time.push(msg.wall_time);
    }
    scheduleDraw();
  }

  // -- episodes -------------------------------------------------------------------------------------------
  function filters() {
    return { step: document.getElementById("filter-step").value, min: document.getElementById("filter-min").value,
             max: document.getElementById("filter-max").value, errors: document.getElementById("filter-errors").checked,
             env: (document.getElementById("filter-env") || {}).value || "" };
  }
  function matches(ep) {
    const f = filters();
    if (f.step !== "" && ep.step !== Number(f.step)) return false;
    if (f.min !== "" && ep.reward < Number(f.min)) return false;
    if (f.max !== "" && ep.reward > Number(f.max)) return false;
    if (f.errors && !(ep.num_tool_errors > 0 || ep.error)) return false;
    if (f.env && ep.environment !== f.env) return false;
    return true;
  }
  function esc(text) { const d = document.createElement("div"); d.textContent = text == null ? "" : String(text); return d.innerHTML; }
  function renderTurns(ep) {
    return ep.turns.map((t) => {
      if (t.role === "assistant") {
        const calls = (t.tool_calls || []).map((c) => `<div class="turn assistant">→ <code>${esc(c.name)}(${esc(JSON.stringify(c.arguments))})</code></div>`).join("");
        return (t.content ? `<div class="turn assistant">${esc(t.content)}</div>` : "") + calls;
      }
      const reward = t.reward != null ? ` <span class="muted">[reward ${t.reward}]</span>` : "";
      const err = t.error ? ` <span class="err">${esc(t.error)}</span>` : "";
      return `<div class="turn tool">← ${esc(t.content)}${reward}${err}</div>`;
    }).join("");
  }
  function episodeNode(ep) {
    const node = document.createElement("div");
    node.className = "episode" + (ep.num_tool_errors > 0 || ep.error ? " error" : "");
    node.dataset.episode = ep.id; node.dataset.step = ep.step;
    const adv = ep.advantage == null ? "" : ` · advantage ${ep.advantage.toFixed(2)}`;
    const where = (ep.environment ? ` · ${esc(ep.environment)}` : "") + (ep.rank ? ` · rank ${ep.rank}` : "");
    node.innerHTML = `<div class="meta">step ${ep.step}${where} · group ${ep.group}.${ep.index} · reward <strong>${ep.reward.toFixed(3)}</strong>${adv} · ${ep.num_tool_calls} tool call(s)${ep.error ? " · " + esc(ep.error) : ""}</div>${renderTurns(ep)}`;
    node.addEventListener("click", () => showGroup(ep));
    return node;
  }
  function addEpisode(ep, live) {
    if (state.episodes.has(ep.id)) return;
    state.episodes.set(ep.id, ep);
    if (!matches(ep)) return;
    const list = document.getElementById("episodes");
    list.appendChild(episodeNode(ep));
    while (list.children.length > 300) list.removeChild(list.firstChild);
    document.getElementById("episode-count").textContent = `(${list.children.length} shown)`;
    if (live && document.getElementById("autoscroll").checked) list.scrollTop = list.scrollHeight;
  }
  async function loadEpisodes() {
    const f = filters(); const q = new URLSearchParams({ limit: "100" });
    if (f.step !== "") q.set("step", f.step); if (f.min !== "") q.set("min_reward", f.min);
    if (f.max !== "") q.set("max_reward", f.max); if (f.errors) q.set("errors", "1");
    if (f.env) q.set("environment", f.env);
    const body = await (await fetch(`${base}episodes.json?${q}`)).json();
    document.getElementById("episodes").innerHTML = "";
    state.episodes.clear();
    body.episodes.reverse().forEach((ep) => addEpisode(ep, false));
    const list = document.getElementById("episodes"); list.scrollTop = list.scrollHeight;
  }
  async function showGroup(ep) {
    const body = await (await fetch(`${base}episodes.json?step=${ep.step}&limit=500`)).json();
    const members = body.episodes.filter((e) => e.group === ep.group).sort((a, b) => a.index - b.index);
    const rewards = members.map((e) => e.reward);
    const zero = rewards.length > 1 && rewards.every((r) => r === rewards[0]);
    document.getElementById("group-title").textContent = `step ${ep.step}, group ${ep.group}` + (zero ? " — zero variance: no learning signal" : "");
    const view = document.getElementById("group-view"); view.innerHTML = "";
    for (const m of members) { const n = episodeNode(m); if (zero) n.classList.add("zero"); view.appendChild(n); }
  }

  // -- status ---------------------------------------------------------------------------------------------
  function setStatus(msg) {
    state.status = msg.status;
    const chip = document.getElementById("run-status"); chip.textContent = msg.status; chip.className = "chip " + msg.status;
    const reason = document.getElementById("run-reason");
    if (msg.reason) { reason.textContent = msg.reason; reason.hidden = false; }
    else if (msg.status === "running") reason.hidden = true;  // a crashed external run whose script came back
    if (msg.status === "running" && !state.startedAt) state.startedAt = Date.now();
    if (msg.max_steps) setProgress(msg);
    // The buttons follow the live status: Cancel while it can be cancelled, Resume once it has ended.
    const active = ["queued", "provisioning", "running", "cancelling"].includes(msg.status);
    const cancel = document.getElementById("cancel-form"), resume = document.getElementById("resume-form");
    if (cancel) cancel.hidden = !active || msg.status === "cancelling";
    if (resume) resume.hidden = active;
  }
  function setProgress(msg) {
    const pct = msg.max_steps ? Math.min(100, (100 * msg.step) / msg.max_steps) : 0;
    document.getElementById("run-bar").style.width = pct + "%";
    document.getElementById("run-progress").textContent = `${msg.step}/${msg.max_steps} steps (${pct.toFixed(0)}%)`;
    const reward = state.series["reward"];
    if (state.startedAt && msg.step > 0 && state.status === "running") {
      const perStep = (Date.now() - state.startedAt) / msg.step;
      document.getElementById("run-eta").textContent = `ETA ${Math.round((perStep * (msg.max_steps - msg.step)) / 1000)} s`;
    } else if (reward && reward.wall_time.length > 1 && state.status === "running") {
      const w = reward.wall_time; const perStep = (w[w.length - 1] - w[0]) / (w.length - 1);
      document.getElementById("run-eta").textContent = `ETA ${Math.round(perStep * (msg.max_steps - msg.step))} s`;
    } else document.getElementById("run-eta").textContent = "";
    document.getElementById("run-eta-item").hidden = !document.getElementById("run-eta").textContent;
  }

  function handle(msg) {
    if (msg.seq && msg.seq <= state.lastSeq) return;
    if (msg.seq) state.lastSeq = msg.seq;
    if (msg.type === "run.metrics") addMetrics(msg);
    else if (msg.type === "run.episode") addEpisode({ ...msg.episode, step: msg.step }, true);
    else if (msg.type === "run.status") setStatus(msg);
    else if (msg.type === "run.progress") setProgress(msg);
    else if (msg.type === "run.log") { const pre = document.getElementById("log-tail"); pre.textContent += msg.line + "\n"; }
  }

  let retry = 500;
  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${proto}://${location.host}/ws/runs/${boot.run}/?after=${state.lastSeq}`);
    socket.onopen = () => { retry = 500; document.body.dataset.live = "connected"; };
    socket.onmessage = (event) => { const data = JSON.parse(event.data); (data.messages || []).forEach(handle); };
    socket.onclose = () => { document.body.dataset.live = "reconnecting"; setTimeout(connect, retry); retry = Math.min(10000, retry * 2); };
  }

  async function tailLog() {
    const pre = document.getElementById("log-tail");
    try { pre.textContent = await (await fetch(pre.dataset.src)).text(); pre.scrollTop = pre.scrollHeight; } catch (e) { /* next time */ }
    if (["queued", "provisioning", "running", "cancelling"].includes(state.status)) setTimeout(tailLog, 5000);
  }

  async function start() {
    // A snapshot from the database, then the socket from the snapshot's sequence number: the server replays
    // whatever happened in between, so nothing is missed and nothing is drawn twice.
    const body = await (await fetch(`${base}metrics.json`)).json();
    state.series = body.series;
    state.lastSeq = body.last_seq;
    rebuildCharts();
    setProgress({ step: boot.step, max_steps: boot.maxSteps });
    await loadEpisodes();
    connect();
    tailLog();
  }

  document.getElementById("smoothing").addEventListener("input", (e) => { state.smoothing = Number(e.target.value); scheduleDraw(); });
  document.getElementById("xaxis").addEventListener("change", (e) => { state.xaxis = e.target.value; rebuildCharts(); });
  for (const id of ["filter-step", "filter-min", "filter-max", "filter-errors", "filter-env"]) {
    const input = document.getElementById(id);
    if (input) input.addEventListener("change", loadEpisodes);
  }
  const list = document.getElementById("episodes");
  list.addEventListener("scroll", () => {
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 30;
    document.getElementById("autoscroll").checked = atBottom;
  });
  start();
})();
