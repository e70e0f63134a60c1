// Chart panels shared by the run page and the compare page: the server's layout (sections, one metric per panel,
// titles, units), the user's arrangement on top of it (pinned, hidden, order: remembered per user on the server),
// a search box, and axis labels formatted for their values.
(function () {
  "use strict";

  function csrf() {
    const m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    if (m) return decodeURIComponent(m[1]);
    const header = document.body.getAttribute("hx-headers");
    try { return JSON.parse(header)["X-CSRFToken"]; } catch (e) { return ""; }
  }

  // -- axis labels ---------------------------------------------------------------------------------------------
  const SI = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  function trim(text) { return text.includes(".") && !text.includes("e") ? text.replace(/\.?0+$/, "") : text; }
  // The fewest decimals that write the distance between ticks exactly (2.5 → 1, 0.25 → 2, 20 → 0).
  function decimalsFor(incr) {
    if (!(incr > 0)) return 2;
    for (let d = 0; d < 6; d++) { const scaled = incr * Math.pow(10, d); if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) return d; }
    return 6;
  }

  // One tick's text, given the distance between ticks (so neighbours never read the same) and the largest
  // magnitude on the axis (so the whole axis shares one style: 1.5M, 2M…; 2e-5, 4e-5…; 25%, 50%…).
  function formatTick(v, unit, incr, largest) {
    if (v == null || !isFinite(v)) return "";
    if (unit === "ratio") return trim((v * 100).toFixed(decimalsFor(incr * 100))) + "%";
    if (v === 0) return "0";
    const big = largest == null ? Math.abs(v) : largest;
    for (const [size, suffix] of SI) {
      if (big >= size) return trim((v / size).toFixed(decimalsFor(incr / size))) + suffix;
    }
    if (big < 1e-2) {  // each tick in its own power of ten: 1e-4, 7.5e-5, 5e-5, 2.5e-5
      const exp = Math.floor(Math.log10(Math.abs(v)) + 1e-9);
      const digits = Math.min(4, decimalsFor(incr / Math.pow(10, exp)));
      const mantissa = trim((v / Math.pow(10, exp)).toFixed(digits));
      return `${mantissa}e${exp}`;
    }
    return trim(v.toFixed(decimalsFor(incr)));
  }

  // A uPlot `values` function for an axis; the labels it drew are kept on the panel (data-y-ticks), for tests and
  // for anyone reading the page's DOM.
  function axisValues(unit, panelEl, attr) {
    return (u, splits) => {
      const finite = splits.filter((s) => s != null && isFinite(s));
      const incr = finite.length > 1 ? Math.abs(finite[1] - finite[0]) : Math.abs(finite[0] || 1);
      const largest = Math.max(...finite.map((s) => Math.abs(s)), 0);
      const labels = splits.map((v) => formatTick(v, unit, incr, largest));
      if (panelEl) panelEl.dataset[attr || "yTicks"] = JSON.stringify(labels);
      return labels;
    };
  }

  // A y range that never collapses: a flat series gets room around it, a share never goes below 0 %.
  function yRange(unit) {
    return (u, min, max) => {
      if (min == null || max == null) return [0, 1];
      if (min === max) { const pad = Math.abs(min) * 0.5 || (unit === "ratio" ? 1 : 1); return unit === "ratio" && min >= 0 ? [0, Math.max(max + pad, 0.01)] : [min - pad, max + pad]; }
      const [lo, hi] = uPlot.rangeNum(min, max, 0.1, true);
      return unit === "ratio" && min >= 0 ? [Math.max(0, lo), hi] : [lo, hi];
    };
  }

  function valueText(v, unit) {
    if (v == null) return "—";
    if (unit === "ratio") return trim((v * 100).toFixed(2)) + "%";
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-2 || a >= 1e5)) return v.toExponential(3);
    return trim(v.toFixed(4));
  }

  // -- the workspace ------------------------------------------------------------------------------------------
  class Workspace {
    // options: container, search (an input), hiddenBar (an element), makePanel(def, bodyEl, panelEl) → {update},
    // extras: [{section, after, panel}] panels the page adds (the reward distribution).
    constructor(options) {
      Object.assign(this, { extras: [], names: [], sections: [], prefs: { pinned: [], hidden: [], order: [], collapsed: [] }, panels: {} }, options);
      this.ready = fetch("/runs/charts/layout.json").then((r) => r.json()).then((p) => { this.prefs = p; });
      if (this.search) this.search.addEventListener("input", () => this.applySearch());
    }

    async setNames(names) {
      const sorted = [...new Set(names)].sort();
      if (sorted.join("\n") === this.names.join("\n") && this.sections.length) return false;
      this.names = sorted;
      const body = await (await fetch("/runs/charts/panels.json?names=" + encodeURIComponent(sorted.join(",")))).json();
      this.sections = body.sections;
      for (const extra of this.extras) {
        let section = this.sections.find((s) => s.key === extra.section);
        if (!section) { section = { key: extra.section, title: extra.title, panels: [] }; this.sections.unshift(section); }
        const at = section.panels.findIndex((p) => p.key === extra.after);
        section.panels.splice(at + 1, 0, extra.panel);
      }
      await this.ready;
      this.render();
      return true;
    }

    ordered(panels) {
      const order = this.prefs.order;
      const rank = (p, i) => { const at = order.indexOf(p.key); return at >= 0 ? at : order.length + i; };
      return panels.map((p, i) => [rank(p, i), p]).sort((a, b) => a[0] - b[0]).map(([, p]) => p);
    }

    render() {
      const c = this.container; c.innerHTML = ""; this.panels = {};
      const all = new Map(this.sections.flatMap((s) => s.panels.map((p) => [p.key, p])));
      const hidden = new Set(this.prefs.hidden), pinned = this.prefs.pinned.filter((k) => all.has(k) && !hidden.has(k));
      const groups = [];
      if (pinned.length) groups.push({ key: "pinned", title: "Pinned", panels: pinned.map((k) => all.get(k)) });
      for (const s of this.sections) {
        const panels = this.ordered(s.panels.filter((p) => !hidden.has(p.key) && !pinned.includes(p.key)));
        if (panels.length) groups.push({ key: s.key, title: s.title, panels });
      }
      const collapsed = new Set(this.prefs.collapsed || []);
      for (const g of groups) {
        // A folded section keeps its title (a click opens it, remembered) and draws nothing until opened.
        const folded = collapsed.has(g.key);
        const sec = document.createElement("section"); sec.className = "panel-section" + (folded ? " folded" : ""); sec.dataset.section = g.key;
        sec.innerHTML = `<h3 class="section-title"><button type="button" class="link fold" aria-expanded="${!folded}">${folded ? "▸" : "▾"} ${esc(g.title)}</button> <span class="muted">${g.panels.length}</span></h3><div class="charts"></div>`;
        c.appendChild(sec);
        sec.querySelector(".fold").addEventListener("click", () => this.toggleSection(g.key));
        if (folded) { for (const def of g.panels) { const el = document.createElement("div"); el.className = "chart"; el.dataset.metric = def.key; el.hidden = true; el.dataset.folded = "1"; sec.querySelector(".charts").appendChild(el); this.panels[def.key] = { def, el, handle: null }; } continue; }
        for (const def of g.panels) this.addPanel(def, sec.querySelector(".charts"), g.key === "pinned");
      }
      this.renderHidden(all);
      this.applySearch();
    }

    addPanel(def, grid, isPinned) {
      const el = document.createElement("div"); el.className = "chart"; el.dataset.metric = def.key;
      el.innerHTML = `<div class="chart-head"><h4 title="${esc(def.key)}">${esc(def.title)}</h4><span class="chart-value muted"></span><span class="chart-tools">
        <button type="button" class="link pin" title="${isPinned ? "Unpin" : "Pin to the top"}">${isPinned ? "Unpin" : "Pin"}</button>
        <button type="button" class="link hide" title="Hide this panel">Hide</button>
        <button type="button" class="link earlier" title="Move earlier">←</button>
        <button type="button" class="link later" title="Move later">→</button></span></div><div class="chart-body"></div>`;
      grid.appendChild(el);
      el.querySelector(".pin").addEventListener("click", () => this.togglePin(def.key));
      el.querySelector(".hide").addEventListener("click", () => this.hide(def.key));
      el.querySelector(".earlier").addEventListener("click", () => this.move(def.key, -1, grid, isPinned));
      el.querySelector(".later").addEventListener("click", () => this.move(def.key, 1, grid, isPinned));
      this.panels[def.key] = { def, el, handle: this.makePanel(def, el.querySelector(".chart-body"), el) };
    }

    renderHidden(all) {
      if (!this.hiddenBar) return;
      const hidden = this.prefs.hidden.filter((k) => all.has(k));
      this.hiddenBar.hidden = !hidden.length;
      this.hiddenBar.innerHTML = hidden.length ? `${hidden.length} hidden: ` + hidden.map((k) =>
        `<button type="button" class="link unhide" data-metric="${esc(k)}">${esc(all.get(k).title)} ↺</button>`).join(" · ") : "";
      this.hiddenBar.querySelectorAll(".unhide").forEach((b) => b.addEventListener("click", () => {
        this.prefs.hidden = this.prefs.hidden.filter((k) => k !== b.dataset.metric); this.save(); }));
    }

    applySearch() {
      const q = (this.search ? this.search.value : "").trim().toLowerCase();
      for (const sec of this.container.querySelectorAll(".panel-section")) {
        let shown = 0;
        for (const el of sec.querySelectorAll(".chart")) {
          const p = this.panels[el.dataset.metric];
          const hit = !q || el.dataset.metric.toLowerCase().includes(q) || (p && p.def.title.toLowerCase().includes(q));
          el.hidden = !hit || el.dataset.folded === "1"; if (hit) shown++;
        }
        sec.hidden = !shown;
      }
    }

    toggleSection(key) {
      const c = this.prefs.collapsed || [];
      this.prefs.collapsed = c.includes(key) ? c.filter((k) => k !== key) : c.concat([key]);
      this.save();
    }

    togglePin(key) {
      const p = this.prefs.pinned;
      this.prefs.pinned = p.includes(key) ? p.filter((k) => k !== key) : p.concat([key]);
      this.save();
    }
    hide(key) { this.prefs.hidden = this.prefs.hidden.concat([key]); this.prefs.pinned = this.prefs.pinned.filter((k) => k !== key); this.save(); }
    move(key, by, grid, isPinned) {
      const keys = [...grid.querySelectorAll(".chart")].map((el) => el.dataset.metric);
      const at = keys.indexOf(key), to = at + by;
      if (to < 0 || to >= keys.length) return;
      [keys[at], keys[to]] = [keys[to], keys[at]];
      if (isPinned) this.prefs.pinned = keys;
      else this.prefs.order = this.prefs.order.filter((k) => !keys.includes(k)).concat(keys);
      this.save();
    }
    async save() {
      this.render();
      const r = await fetch("/runs/charts/layout.json", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
                                                          body: JSON.stringify(this.prefs) });
      if (r.ok) { this.prefs = await r.json(); document.body.dataset.layoutSaved = String(Date.now()); }
    }
    update() { for (const p of Object.values(this.panels)) if (p.handle && p.handle.update) p.handle.update(); }
  }

  function esc(text) { const d = document.createElement("div"); d.textContent = text == null ? "" : String(text); return d.innerHTML; }

  window.TrainyardPanels = { Workspace, formatTick, axisValues, valueText, yRange, esc, csrf };
})();
