// The run page: charts (uPlot), live episodes and status over the run's WebSocket, with replay on reconnect.
(function () {
  "use strict";
  const boot = JSON.parse(document.getElementById("run-boot").textContent);
  const base = `/runs/${boot.run}/`;
  const state = (window.trainyardRun = { series: {}, charts: {}, lastSeq: 0, episodes: new Map(), status: boot.status, startedAt: null,
                  smoothing: 0, xaxis: "step", pendingDraw: false });

  const COLORS = ["#3556d8", "#d8553a", "#12805c", "#9b51e0", "#b54708", "#0e7490"];
  const P = window.TrainyardPanels;
  const heldout = new Map((boot.evaluations || []).map((e) => [e.step, e]));

  function ema(values, weight) {
    if (!weight) return values;
    const out = []; let last = null;
    for (const v of values) { last = v === null ? last : last === null ? v : last * weight + (1 - weight) * v; out.push(v === null ? null : last); }
    return out;
  }

  function byStep(name, series) {
    const s = (series || state.series)[name]; const m = new Map();
    if (s) s.step.forEach((step, i) => m.set(step, s.value[i]));
    return m;
  }

  // The columns a panel draws: x, its metric (smoothed), and its band (±std or an eval's interval).
  function chartData(def, series) {
    series = series || state.series;
    const names = def.names.concat(def.band ? def.band.names : []);
    const xs = new Map();
    for (const name of names) {
      const s = series[name]; if (!s) continue;
      s.step.forEach((step, i) => xs.set(step, state.xaxis === "step" ? step : s.wall_time[i]));
    }
    const steps = [...xs.keys()].sort((a, b) => a - b);
    const x = steps.map((s) => xs.get(s));
    const main = byStep(def.names[0], series);
    const y = steps.map((st) => (main.has(st) ? main.get(st) : null));
    const cols = [x, def.heldout ? y : ema(y, state.smoothing)];
    if (def.band && def.band.kind === "std") {
      const sd = byStep(def.band.names[0], series);
      cols.push(steps.map((st, i) => (cols[1][i] === null ? null : cols[1][i] + (sd.get(st) || 0))));
      cols.push(steps.map((st, i) => (cols[1][i] === null ? null : cols[1][i] - (sd.get(st) || 0))));
    } else if (def.band) {
      for (const n of def.band.names) { const m = byStep(n, series); cols.push(steps.map((st) => (m.has(st) ? m.get(st) : null))); }
    }
    if (def.heldout) {  // the baseline (the first eval) as a line across the run
      const first = y.find((v) => v !== null);
      cols.push(steps.map(() => (first === undefined ? null : first)));
    }
    return { steps, data: cols };
  }

  function xRange(chart) {
    return (u, min, max) => {
      if (chart.zoomed || state.xaxis !== "step") return [min, max];
      return [0, Math.max(boot.maxSteps || 0, max || 0, 1)];
    };
  }

  // The x axis spans the run's steps (uPlot leaves a one-point series' own range otherwise).
  function spanRun(chart) {
    if (chart.zoomed || state.xaxis !== "step") return;
    const last = chart.plot.steps.length ? chart.plot.steps[chart.plot.steps.length - 1] : 0;
    chart.plot.setScale("x", { min: 0, max: Math.max(boot.maxSteps || 0, last, 1) });
  }

  function makeChart(def, body, el) {
    if (def.kind === "distribution") return (state.charts[def.key] = distributionPanel(body, el));
    const chart = { def, el, zoomed: null };
    const series = [{ label: state.xaxis, value: (u, v) => (v == null ? "" : state.xaxis === "step" ? `step ${v}` : new Date(v * 1000).toLocaleTimeString()) }];
    const unit = def.unit;
    const value = (u, v) => P.valueText(v, unit);
    series.push({ label: def.heldout ? "mean" : def.title.split(" (")[0], stroke: COLORS[0], width: 1.5, spanGaps: true, value,
                  points: { show: def.heldout ? true : undefined, size: def.heldout ? 8 : undefined } });
    const bands = [];
    if (def.band) {
      const fill = "rgba(53, 86, 216, 0.14)";
      const labels = def.band.kind === "std" ? ["+std", "-std"] : ["high (95 %)", "low (95 %)"];
      if (def.band.kind === "std") series.push({ label: labels[0], stroke: "#a9b8f0", width: 1, value }, { label: labels[1], stroke: "#a9b8f0", width: 1, value });
      else series.push({ label: labels[1], stroke: "#a9b8f0", width: 1, value, spanGaps: true }, { label: labels[0], stroke: "#a9b8f0", width: 1, value, spanGaps: true });
      bands.push(def.band.kind === "std" ? { series: [2, 3], fill } : { series: [3, 2], fill });
    }
    if (def.heldout) series.push({ label: "baseline", stroke: "#98a2b3", dash: [6, 4], width: 1.2, value, points: { show: false } });
    // One line: no legend, the value under the cursor in the panel's title instead; a band: its legend.
    const readout = el.querySelector(".chart-value");
    const opts = { width: Math.max(280, body.clientWidth || 320), height: 150, series, bands,
      scales: { x: { time: state.xaxis === "wall_time", range: xRange(chart) }, y: { range: P.yRange(unit) } },
      axes: [{ values: state.xaxis === "step" ? P.axisValues("", el, "xTicks") : undefined },
             { values: P.axisValues(unit, el), size: 62 }],
      legend: { show: Boolean(def.band), live: true },
      hooks: { setSelect: [(u) => zoom(chart, u)], setCursor: [(u) => {
        const i = u.cursor.idx;
        if (readout) readout.textContent = i == null || u.data[1][i] == null ? "" : `${state.xaxis === "step" ? "step " + u.data[0][i] : ""} ${P.valueText(u.data[1][i], unit)}`;
      }] } };
    const built = chartData(def);
    chart.plot = new uPlot(opts, built.data, body);
    chart.plot.steps = built.steps;
    spanRun(chart);
    const over = chart.plot.over;
    if (def.key === "reward") {
      over.addEventListener("click", () => {
        const idx = chart.plot.cursor.idx; if (idx == null) return;
        document.getElementById("filter-step").value = chart.plot.steps[idx];
        loadEpisodes();
      });
      over.style.cursor = "pointer";
    }
    if (def.heldout) {  // a point opens the evaluation it draws
      over.addEventListener("click", () => {
        const idx = chart.plot.cursor.idx; if (idx == null) return;
        const e = heldout.get(chart.plot.steps[idx]); if (e) location.href = e.url;
      });
      over.style.cursor = "pointer";
    }
    chart.update = () => {
      if (chart.zoomed) return;  // a zoomed chart keeps its range until a double click
      const b = chartData(def); chart.plot.steps = b.steps; chart.plot.setData(b.data); spanRun(chart);
    };
    state.charts[def.key] = chart;
    return chart;
  }

  // Zooming (drag to select) re-fetches that range at full resolution (the server downsamples to ~2,000 points);
  // a double click goes back to the whole run.
  async function zoom(chart, u) {
    if (u.select.width < 5 || state.xaxis !== "step") return;
    const lo = Math.floor(u.posToVal(u.select.left, "x")), hi = Math.ceil(u.posToVal(u.select.left + u.select.width, "x"));
    const def = chart.def;
    const q = new URLSearchParams({ names: def.names.concat(def.band ? def.band.names : []).join(","), lo, hi });
    const body = await (await fetch(`${base}metrics.json?${q}`)).json();
    chart.zoomed = true;
    const built = chartData(def, { ...state.series, ...body.series });
    chart.plot.steps = built.steps; chart.plot.setData(built.data); u.setSelect({ width: 0, height: 0 }, false);
  }
  document.addEventListener("dblclick", (e) => {
    const el = e.target.closest(".chart"); if (!el) return;
    const chart = state.charts[el.dataset.metric];
    if (chart && chart.zoomed) { chart.zoomed = null; chart.update(); }
  });

  // -- the reward distribution: a heat strip, one column per step (or a few steps), one row per reward bin --------
  function distributionPanel(body, el) {
    body.innerHTML = `<canvas class="heat" height="150"></canvas><div class="heat-axis muted"></div><p class="muted heat-note"></p>`;
    const canvas = body.querySelector("canvas");
    const handle = { data: null, loading: false, last: 0 };
    function draw() {
      const d = handle.data; if (!d || !d.columns.length) { body.querySelector(".heat-note").textContent = "No episodes yet."; return; }
      const width = Math.max(280, body.clientWidth || 320); canvas.width = width;
      const ctx = canvas.getContext("2d"); ctx.clearRect(0, 0, width, canvas.height);
      const w = width / d.columns.length, h = canvas.height / d.bins;
      for (const [i, col] of d.columns.entries()) {
        const most = Math.max(...col.counts, 1);
        col.counts.forEach((n, b) => {
          if (!n) return;
          ctx.fillStyle = `rgba(53, 86, 216, ${0.12 + 0.88 * (n / most)})`;
          ctx.fillRect(i * w, canvas.height - (b + 1) * h, Math.ceil(w), Math.ceil(h));
        });
      }
      const lo = d.edges[0], hi = d.edges[d.edges.length - 1];
      body.querySelector(".heat-axis").textContent = `reward ${P.valueText(lo, "")} (bottom) … ${P.valueText(hi, "")} (top) · steps ${d.columns[0].first_step}–${d.columns[d.columns.length - 1].last_step}`;
      const zero = d.columns.filter((c) => c.zero_spread_share !== null);
      const share = zero.length ? zero[zero.length - 1].zero_spread_share : null;
      body.querySelector(".heat-note").textContent = share === null ? "" :
        `Last step: ${P.valueText(share, "ratio")} of its GRPO groups had zero reward spread (no learning signal).`;
      el.dataset.columns = String(d.columns.length);
    }
    canvas.addEventListener("mousemove", (e) => {
      const d = handle.data; if (!d || !d.columns.length) return;
      const col = d.columns[Math.min(d.columns.length - 1, Math.floor((e.offsetX / canvas.width) * d.columns.length))];
      canvas.title = `step ${col.first_step}${col.last_step !== col.first_step ? "–" + col.last_step : ""}: ${col.episodes} episodes, mean ${P.valueText(col.mean, "")}` +
        (col.zero_spread_share === null ? "" : `, zero-spread groups ${P.valueText(col.zero_spread_share, "ratio")}`);
    });
    handle.update = async () => {
      if (handle.loading || Date.now() - handle.last < 4000) return;  // live: at most every 4 s
      handle.loading = true; handle.last = Date.now();
      try { handle.data = await (await fetch(`${base}rewards.json`)).json(); draw(); } finally { handle.loading = false; }
    };
    handle.update();
    return handle;
  }

  const workspace = new P.Workspace({
    container: document.getElementById("charts"), search: document.getElementById("chart-search"),
    hiddenBar: document.getElementById("charts-hidden"), makePanel: makeChart,
    extras: [{ section: "reward", title: "Reward", after: "reward",
               panel: { key: "reward/distribution", title: "Reward distribution per step (episodes)", kind: "distribution", names: [] } }],
  });
  state.workspace = workspace;

  async function redraw() {
    state.pendingDraw = false;
    if (!(await workspace.setNames(Object.keys(state.series)))) workspace.update();
  }
  function scheduleDraw() { if (!state.pendingDraw) { state.pendingDraw = true; requestAnimationFrame(redraw); } }
  function rebuildCharts() { workspace.render(); }

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
        const notRun = t.not_run ? `<div class="turn assistant muted">${esc(t.not_run)}</div>` : "";
        return (t.content ? `<div class="turn assistant">${esc(t.content)}</div>` : "") + calls + notRun;
      }
      const credit = t.credit != null ? ` · the rubric's credit ${t.credit}` : "";
      const reward = t.reward != null ? ` <span class="muted">[reward ${t.reward}${credit}]</span>` : "";
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
    if (ep.traced) {  // recorded token by token: the trajectory viewer opens it
      const link = document.createElement("button");
      link.type = "button"; link.className = "link token-link"; link.textContent = "tokens";
      link.addEventListener("click", (e) => { e.stopPropagation(); showTokens(ep); });
      node.querySelector(".meta").append(" · ", link);
    }
    return node;
  }
  function addEpisode(ep, live) {
    if (state.episodes.has(ep.id)) return;
    if (live && state.charts["reward/distribution"]) state.charts["reward/distribution"].update();
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
    // The spread that made the advantages: GRPO scales each reward by its group's mean and standard deviation.
    const mean = rewards.reduce((a, b) => a + b, 0) / Math.max(1, rewards.length);
    const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) * (r - mean), 0) / Math.max(1, rewards.length));
    document.getElementById("group-title").textContent = `step ${ep.step}, group ${ep.group} · mean ${mean.toFixed(3)}, std ${std.toFixed(3)}` +
      (zero ? " — zero spread: no learning signal" : "");
    const view = document.getElementById("group-view"); view.innerHTML = "";
    for (const m of members) { const n = episodeNode(m); if (zero) n.classList.add("zero"); view.appendChild(n); }
  }

  // -- the trajectory viewer: a traced completion token by token, coloured by the value picked ------------------
  const TOKEN_MODES = {
    advantage: { label: "advantage", legend: "green: the loss pushed these tokens up (positive advantage); red: down" },
    logprob: { label: "log-probability", legend: "red: tokens the policy found unlikely (low log-probability)" },
    entropy: { label: "entropy", legend: "orange: where the policy was unsure (high entropy)" },
    trained: { label: "in the loss", legend: "blue: trained on; grey: not in the loss (tool results, the prompt)" },
  };
  function tokenColour(mode, value, scale) {
    if (mode === "trained") return value ? "rgba(53, 86, 216, 0.18)" : "rgba(102, 112, 133, 0.28)";
    const a = scale > 0 ? Math.min(1, Math.abs(value) / scale) : 0;
    if (mode === "advantage") return value >= 0 ? `rgba(18, 128, 92, ${(0.85 * a).toFixed(3)})` : `rgba(196, 50, 10, ${(0.85 * a).toFixed(3)})`;
    if (mode === "logprob") return `rgba(196, 50, 10, ${(0.85 * a).toFixed(3)})`;
    return `rgba(181, 71, 8, ${(0.85 * a).toFixed(3)})`;
  }
  function drawTokens() {
    const t = state.trace; if (!t) return;
    const mode = document.getElementById("token-colour").value;
    const values = t.trace[mode === "trained" ? "trained" : mode];
    const scale = Math.max(0, ...values.map((v) => Math.abs(v)));
    const box = document.getElementById("tokens"); box.innerHTML = "";
    t.trace.tokens.forEach((text, i) => {
      const span = document.createElement("span");
      span.className = "tok" + (t.trace.trained[i] ? "" : " untrained");
      span.textContent = text.replace(/\n/g, "↵\n");
      span.dataset.value = String(values[i]);
      span.style.background = tokenColour(mode, values[i], scale);
      span.title = `${JSON.stringify(text)} · advantage ${t.trace.advantage[i]} · log-prob ${t.trace.logprob[i]} · entropy ${t.trace.entropy[i]} · ${t.trace.trained[i] ? "trained on" : "not in the loss"}`;
      box.appendChild(span);
    });
    document.getElementById("token-legend").textContent = TOKEN_MODES[mode].legend + (mode === "trained" ? "" : ` (scale: |${mode}| up to ${scale.toFixed(3)})`);
  }
  function drawTimeline(ep) {
    // The episode on one track from its reset: the model's turns (generation, the gaps between calls: TRL generates a
    // turn for the whole batch at once) and each tool call's time in the environment; then the calls one by one.
    const turns = ep.turns || [];
    const calls = turns.filter((x) => x.role === "tool" && x.at != null && x.seconds != null);
    let track = "";
    if (calls.length) {
      const end = Math.max(...calls.map((c) => c.at + c.seconds), 1e-3);
      let last = 0;
      const pieces = [];
      for (const c of calls) {
        if (c.at > last) pieces.push({ kind: "generation", start: last, seconds: c.at - last, label: "generation" });
        pieces.push({ kind: c.error ? "tool error" : "tool", start: c.at, seconds: c.seconds, label: c.name });
        last = c.at + c.seconds;
      }
      track = `<div class="tl-track" title="${end.toFixed(2)} s from the reset to the last call's answer">` + pieces.map((p) =>
        `<span class="tl-piece ${p.kind.replace(" ", "-")}" style="left:${(100 * p.start) / end}%;width:${Math.max(0.4, (100 * p.seconds) / end)}%" title="${esc(p.label)}: ${(p.seconds * 1000).toFixed(1)} ms at +${p.start.toFixed(2)} s"></span>`).join("") +
        `</div><div class="muted tl-scale">0 s · reset → ${end.toFixed(2)} s · <span class="tl-key generation"></span> generation <span class="tl-key tool"></span> environment</div>`;
    }
    const slowest = Math.max(0.001, ...turns.map((x) => x.seconds || 0));
    document.getElementById("timeline").innerHTML = track + turns.map((x) => {
      if (x.role === "assistant") {
        const named = (x.tool_calls || []).map((c) => esc(c.name)).join(", ");
        return `<div class="tl-row"><span class="tl-label">generation</span><span class="muted">${named ? "→ " + named : esc((x.content || "").slice(0, 60))}</span></div>`;
      }
      const width = x.seconds != null ? Math.max(2, (100 * x.seconds) / slowest) : 0;
      const info = x.seconds != null ? `${(x.seconds * 1000).toFixed(1)} ms in the environment${x.at != null ? ` at +${x.at.toFixed(2)} s` : ""}` : "never reached the environment";
      return `<div class="tl-row tool${x.error ? " error" : ""}"><span class="tl-label">${esc(x.name || "tool")}</span><span class="tl-bar" style="width:${width}%"></span><span class="muted">${info}${x.reward != null ? ` · reward ${x.reward}` : ""}${x.error ? " · " + esc(x.error) : ""}</span></div>`;
    }).join("");
  }
  async function showTokens(ep) {
    const response = await fetch(`${base}episodes/${ep.id}/tokens.json`);
    const body = await response.json();
    const card = document.getElementById("trajectory"); card.hidden = false;
    if (!response.ok) { document.getElementById("tokens").textContent = body.error; state.trace = null; return; }
    state.trace = body;
    const trained = body.trace.trained.reduce((a, b) => a + b, 0);
    document.getElementById("trajectory-title").textContent =
      `step ${ep.step}, group ${ep.group}.${ep.index} · reward ${ep.reward.toFixed(3)} · ${body.trace.tokens.length} tokens, ${trained} trained on`;
    drawTimeline(body.episode); drawTokens();
    card.dataset.episode = String(ep.id);
    card.scrollIntoView({ block: "nearest" });
  }
  document.getElementById("token-colour").addEventListener("change", drawTokens);

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
    else if (msg.type === "run.alert") loadAlerts();
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

  // The Alerts card is the alerts app's own fragment: fetched at start and again whenever an alert arrives.
  async function loadAlerts() {
    const card = document.getElementById("alerts");
    try { card.innerHTML = await (await fetch(card.dataset.src)).text(); card.dataset.loaded = String(Date.now()); } catch (e) { /* next alert */ }
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
    await workspace.setNames(Object.keys(state.series));
    setProgress({ step: boot.step, max_steps: boot.maxSteps });
    await loadEpisodes();
    loadAlerts();
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
