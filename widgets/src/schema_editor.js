// relviz SchemaEditor — front end (anywidget ES module).
//
// A thin view: everything it draws comes from traits that Python computes (graph, problems,
// message, detail); every edit is sent to Python as a `request` trait ({op, ..., seq}) and Python
// validates it through relviz.ui.state.SchemaDraft, applies or refuses it, and answers with new
// traits. The graph is always redrawn from Python's state, so a refused edit leaves nothing behind.
//
// Drawing: cytoscape (edges, hit-testing, pan) + dagre (layered layout, parents above children) +
// edgehandles (drag from a child table onto its parent to add an FK). Tables are HTML cards laid
// over invisible cytoscape nodes of the same size (pointer-events: none, so the canvas gets every
// mouse event). Gotchas (shared/ENVIRONMENT.md): the graph is created in a ResizeObserver once
// the container has a size; the container has an explicit height; JupyterLab shortcuts are
// suppressed inside the widget; user zooming is off so the wheel scrolls the notebook; colours
// come from --jp-* CSS variables so the dark theme works.

import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";
import edgehandles from "cytoscape-edgehandles";

cytoscape.use(dagre);
cytoscape.use(edgehandles);

const MAX_ATTRS = 8;
const KIND = { categorical: "cat", numeric: "num", datetime: "time" };
const CURATOR = "curator view (not private)";

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

// append children, skipping the null/false placeholders of conditional parts
const put = (parent, ...children) => parent.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));

const fmtInt = (n) => (n === null || n === undefined ? "?" : Number(n).toLocaleString("en-US"));
const pct = (x) => (x < 0.001 && x > 0 ? "<0.1%" : `${(100 * x).toFixed(1)}%`);

function theme(el) {
  const cs = getComputedStyle(el);
  const v = (name, fallback) => (cs.getPropertyValue(name) || "").trim() || fallback;
  return {
    bg: v("--jp-layout-color1", "#ffffff"),
    fg: v("--jp-ui-font-color1", "#212121"),
    fg2: v("--jp-ui-font-color2", "#616161"),
    border: v("--jp-border-color1", "#bdbdbd"),
    brand: v("--jp-brand-color1", "#1976d2"),
    error: v("--jp-error-color1", "#d32f2f"),
    warn: v("--jp-warn-color1", "#f57c00"),
    font: v("--jp-ui-font-family", "sans-serif"),
  };
}

function cyStyle(t) {
  return [
    { selector: "node", style: { shape: "round-rectangle", width: "data(w)", height: "data(h)",
      "background-opacity": 0, "border-width": 0, label: "" } },
    { selector: "edge", style: {
      width: 2, "curve-style": "bezier", "line-color": t.fg2,
      "source-arrow-shape": "triangle", "source-arrow-color": t.fg2, "arrow-scale": 1.3,
      "target-arrow-shape": "none", label: "data(label)", "font-size": 11, "font-family": t.font,
      color: t.fg, "text-background-color": t.bg, "text-background-opacity": 0.9,
      "text-background-padding": 2, "text-rotation": "none" } },
    { selector: "edge.warn", style: { "line-color": t.warn, "source-arrow-color": t.warn } },
    { selector: "edge.problem", style: { "line-color": t.error, "source-arrow-color": t.error } },
    { selector: "edge.proposal", style: { "line-style": "dashed", "line-dash-pattern": [7, 5],
      "line-color": t.brand, "source-arrow-color": t.brand, color: t.brand, width: 2 } },
    { selector: "edge:selected", style: { width: 4, "line-color": t.brand, "source-arrow-color": t.brand,
      "overlay-opacity": 0 } },
    { selector: "node:selected", style: { "overlay-opacity": 0 } },
    { selector: ".eh-ghost-edge, .eh-preview", style: { width: 2, "line-color": t.brand,
      "source-arrow-shape": "none", "target-arrow-shape": "triangle", "target-arrow-color": t.brand,
      label: "" } },
    { selector: ".eh-ghost-edge.eh-preview-active", style: { opacity: 0 } },
    { selector: ".eh-hover", style: { "overlay-color": t.brand, "overlay-opacity": 0.15, "overlay-padding": 4 } },
  ];
}

function card(n) {
  const badge = n.public ? "public" : n.entity ? "private · entity" : "private";
  const cls = `relviz-card ${n.public ? "is-public" : "is-private"}${n.entity ? " is-entity" : ""}`;
  const attrs = n.attributes.slice(0, MAX_ATTRS);
  const rows = attrs.map((a) =>
    h("tr", {}, h("td", { class: "an", text: a.name }),
      h("td", { class: "ak", text: KIND[a.kind] || a.kind }),
      h("td", { class: "as", text: String(a.size) + (a.inferred ? "*" : ""),
        title: a.inferred ? "domain inferred from the data: confirm it" : "domain size (codes)" })));
  if (n.attributes.length > MAX_ATTRS) {
    rows.push(h("tr", {}, h("td", { class: "more", colspan: 3,
      text: `… ${n.attributes.length - MAX_ATTRS} more attribute(s)` })));
  }
  return h("div", { class: cls, "data-table": n.id },
    h("div", { class: "hd" }, h("span", { class: "name", text: n.id }),
      h("span", { class: "badge", text: badge })),
    h("div", { class: "meta" },
      h("span", { text: n.rows === null ? "rows: ?" : `${fmtInt(n.rows)} rows` }),
      h("span", { class: "pk", text: `PK ${n.primary_key.join(", ") || "(none)"}` }),
      n.problems ? h("span", { class: "warn", text: `⚠ ${n.problems}` }) : null),
    attrs.length ? h("table", { class: "attrs" }, rows) : h("div", { class: "noattr", text: "no attributes" }));
}

function degreeChart(d, cap) {
  // d.hist: [[degree, parents], ...]; bars over degree (binned when the range is wide).
  const W = 280, H = 120, P = 22;
  const svgNS = "http://www.w3.org/2000/svg";
  const s = (tag, attrs) => { const e = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v)); return e; };
  const svg = s("svg", { width: W, height: H + P, class: "relviz-degree-chart", viewBox: `0 0 ${W} ${H + P}` });
  const mx = Math.max(d.max, 1);
  const nb = Math.min(mx + 1, 48);
  const width = (mx + 1) / nb;
  const bins = new Array(nb).fill(0);
  for (const [deg, cnt] of d.hist) bins[Math.min(nb - 1, Math.floor(deg / width))] += cnt;
  const top = Math.max(...bins, 1);
  const bw = (W - 8) / nb;
  bins.forEach((c, i) => {
    const bh = c ? Math.max(1.5, (H - 8) * Math.sqrt(c / top)) : 0;
    const over = cap !== null && cap !== undefined && i * width >= cap + 0.5;
    svg.appendChild(s("rect", { x: 4 + i * bw, y: H - bh, width: Math.max(bw - 1, 1), height: bh,
      class: over ? "bar over" : "bar" }));
  });
  if (cap !== null && cap !== undefined && cap <= mx) {
    const x = 4 + ((cap + 0.5) / width) * bw;
    svg.appendChild(s("line", { x1: x, x2: x, y1: 0, y2: H, class: "cap" }));
    const lab = s("text", { x: Math.min(x + 3, W - 40), y: 10, class: "caplabel" });
    lab.textContent = `τ = ${cap}`; svg.appendChild(lab);
  }
  const ax = s("text", { x: 4, y: H + 14, class: "axis" }); ax.textContent = "0";
  const ax2 = s("text", { x: W - 4, y: H + 14, class: "axis", "text-anchor": "end" });
  ax2.textContent = `${mx} children per parent`;
  svg.appendChild(ax); svg.appendChild(ax2);
  return svg;
}

function truncatedAt(d, cap) {
  let t = 0;
  for (const [deg, cnt] of d.hist) if (deg > cap) t += (deg - cap) * cnt;
  return t;
}

function render({ model, el }) {
  const t0 = performance.now();
  el.classList.add("relviz-se");
  el.setAttribute("data-lm-suppress-shortcuts", "true");

  let seq = 0;
  let cy = null, eh = null;
  let pendingForm = null; // {child, parent}
  let busy = false;
  const cards = new Map();

  const send = (req) => {
    seq += 1;
    busy = true;
    root.classList.add("busy");
    model.set("request", { ...req, seq: `${Date.now()}-${seq}` });
    model.save_changes();
  };
  const select = (value) => { model.set("selected", value); model.save_changes(); };

  // ---------------------------------------------------------------- skeleton
  const title = h("span", { class: "title" });
  const unitSel = h("select", { class: "unit", title: "What one individual is, for the DP guarantee" });
  unitSel.addEventListener("change", () => send({ op: "set_entity", table: unitSel.value || null }));
  const undoBtn = h("button", { class: "undo", disabled: true, onclick: () => send({ op: "undo" }) }, "↶ Undo");
  const toolbar = h("div", { class: "relviz-se-toolbar" }, title,
    h("label", { class: "unitlabel" }, "Protected entity ", unitSel), undoBtn,
    h("button", { class: "fit", title: "Fit the graph to the view", onclick: () => cy && cy.fit(undefined, 20) }, "Fit"));
  const msg = h("div", { class: "relviz-se-message", role: "status" });
  // a destructive edit waits here for a confirmation (Python fills the `confirm` trait)
  const confirmBox = h("div", { class: "relviz-se-confirm", role: "alertdialog", hidden: true });
  const form = h("div", { class: "relviz-se-form", hidden: true });
  const canvas = h("div", { class: "relviz-se-canvas", tabindex: "0", "data-lm-suppress-shortcuts": "true" });
  canvas.style.height = `${model.get("height")}px`;
  const overlay = h("div", { class: "relviz-se-overlay" });
  const stage = h("div", { class: "relviz-se-stage" }, canvas, overlay);
  const side = h("div", { class: "relviz-se-side" });
  const problemsBox = h("div", { class: "relviz-se-problems" });
  const unitsBox = h("div", { class: "relviz-se-units" });
  // what infer_schema proposed (Schema.proposals), per table, to accept or reject (graph.review)
  const reviewBox = h("div", { class: "relviz-se-review", hidden: true });
  const collapsed = new Set(); // tables whose proposals the user folded away
  const hint = h("div", { class: "relviz-se-hint", text:
    "Drag from a child table onto its parent table to add a foreign key. Click a table or an arrow " +
    "to edit it (Delete removes a selected arrow). Dashed arrows are proposals from the data." });
  const root = h("div", { class: "relviz-se-root" }, toolbar, msg, confirmBox, form,
    h("div", { class: "relviz-se-main" }, stage, side), hint, reviewBox, problemsBox, unitsBox);
  el.appendChild(root);

  // Keys: stop JupyterLab's command-mode shortcuts (d,d deletes cells) inside the widget.
  const onKey = (e) => {
    const inField = ["INPUT", "SELECT", "TEXTAREA"].includes(e.target.tagName);
    if ((e.key === "Delete" || e.key === "Backspace") && !inField) {
      e.preventDefault();
      const sel = model.get("selected") || "";
      if (sel.startsWith("edge:")) send({ op: "remove_fk", fk: sel.slice(5) });
      else if (sel.startsWith("proposal:")) send({ op: "reject", fk: sel.slice(9) });
    }
    if (e.key === "Escape" && pendingForm) closeForm();
    if (e.key === "Escape" && !confirmBox.hidden) send({ op: "dismiss" });
    e.stopPropagation();
  };
  root.addEventListener("keydown", onKey);
  // The notebook scrolls (and screenshots scroll) between gestures: make cytoscape re-measure its
  // container before every press, or a drag can start from stale coordinates and miss the node.
  const remeasure = () => { if (cy) cy.resize(); };
  stage.addEventListener("mousedown", remeasure, true);
  stage.addEventListener("touchstart", remeasure, { capture: true, passive: true });

  // ---------------------------------------------------------------- graph
  const graph = () => model.get("graph") || { nodes: [], edges: [], proposals: [] };
  const nodeById = (id) => graph().nodes.find((n) => n.id === id);

  function elements(g) {
    const els = [];
    for (const n of g.nodes) {
      let c = cards.get(n.id);
      els.push({ group: "nodes", data: { id: n.id, w: c ? c.offsetWidth : 180, h: c ? c.offsetHeight : 80 } });
    }
    for (const e of g.edges) {
      const hard = e.problems.some((k) => k !== "missing_cap");
      els.push({ group: "edges", classes: hard ? "fk problem" : e.problems.length ? "fk warn" : "fk",
        data: { id: `edge:${e.id}`, source: e.parent, target: e.child, fk: e.id,
          label: e.columns.join(" + ") + (e.cap ? `  τ=${e.cap}` : "") } });
    }
    for (const p of g.proposals) {
      els.push({ group: "edges", classes: "proposal",
        data: { id: `proposal:${p.id}`, source: p.parent, target: p.child, fk: p.id,
          label: `? ${p.columns.join(" + ")}` } });
    }
    return els;
  }

  function buildCards(g) {
    overlay.replaceChildren();
    cards.clear();
    for (const n of g.nodes) {
      const c = card(n);
      overlay.appendChild(c);
      cards.set(n.id, c);
    }
  }

  function placeCards() {
    if (!cy) return;
    const z = cy.zoom();
    const sel = model.get("selected") || "";
    cy.nodes().forEach((node) => {
      const c = cards.get(node.id());
      if (!c) return;
      const p = node.renderedPosition();
      const w = node.data("w"), hh = node.data("h");
      c.style.transform = `translate(${p.x - (w * z) / 2}px, ${p.y - (hh * z) / 2}px) scale(${z})`;
      c.classList.toggle("selected", sel === `node:${node.id()}`);
    });
  }

  function redraw() {
    if (!cy) return;
    const g = graph();
    title.textContent = `Schema editor${g.name ? ` — ${g.name}` : ""}`;
    renderUndo(g);
    buildCards(g);
    cy.batch(() => {
      cy.elements().remove();
      cy.add(elements(g));
    });
    cy.layout({ name: "dagre", rankDir: "TB", nodeSep: 40, rankSep: 80, edgeSep: 30,
      fit: true, padding: 24, animate: false }).run();
    if (cy.zoom() > 1) { cy.zoom(1); cy.center(); }
    const sel = model.get("selected") || "";
    cy.elements().unselect();
    if (sel.startsWith("edge:") || sel.startsWith("proposal:")) cy.getElementById(sel).select();
    placeCards();
    renderUnit();
    renderSide();
  }

  function createGraph() {
    cy = cytoscape({
      container: canvas, style: cyStyle(theme(el)), elements: [],
      userZoomingEnabled: false, boxSelectionEnabled: false, autoungrabify: true,
      selectionType: "single", minZoom: 0.2, maxZoom: 2,
    });
    el.__relviz_cy = cy; // for debugging and tests
    eh = cy.edgehandles({
      canConnect: (s, t) => !s.same(t),
      edgeParams: () => ({ classes: "eh-new" }),
      hoverDelay: 120, snap: true, snapThreshold: 30, noEdgeEventsInDraw: true,
    });
    eh.enableDrawMode();
    cy.on("ehcomplete", (event, source, target, added) => {
      // Python owns the schema: drop the drawn edge and ask for the columns.
      setTimeout(() => {
        cy.remove(added);
        openForm(source.id(), target.id());
      }, 0);
    });
    cy.on("tap", "node", (e) => { canvas.focus(); select(`node:${e.target.id()}`); });
    cy.on("tap", "edge", (e) => { canvas.focus(); select(e.target.id()); });
    cy.on("tap", (e) => { if (e.target === cy) { canvas.focus(); select(""); } });
    cy.on("render viewport position", placeCards);
    redraw();
    el.dataset.relvizDrawMs = String(Math.round(performance.now() - t0)); // render() → first drawing
  }

  // ---------------------------------------------------------------- add-FK form
  function closeForm() { pendingForm = null; form.hidden = true; form.replaceChildren(); }

  function openForm(child, parent) {
    const cn = nodeById(child), pn = nodeById(parent);
    if (!cn || !pn) return;
    pendingForm = { child, parent };
    form.replaceChildren();
    form.hidden = false;
    if (!pn.primary_key.length) {
      put(form, h("span", { class: "refused", text:
        `${parent} has no primary key: a foreign key must reference one.` }),
      h("button", { onclick: closeForm }, "Close"));
      return;
    }
    const selects = pn.primary_key.map((pk, i) => {
      const fam = pn.key_families[i];
      const ok = cn.columns.filter((c) => fam === null || c.family === null || c.family === "empty" ||
        c.family === fam);
      ok.sort((a, b) => (a.name === pk ? -1 : b.name === pk ? 1 : 0));
      const s = h("select", { class: "fkcol", "data-pk": pk },
        ok.map((c) => h("option", { value: c.name, text: `${c.name} (${c.family || "?"}, ${c.role})` })));
      if (!ok.length) s.appendChild(h("option", { value: "", text: `no ${fam} column in ${child}` }));
      return { pk, s, fam };
    });
    const add = h("button", { class: "add primary", onclick: () => {
      const columns = selects.map((x) => x.s.value);
      if (columns.some((c) => !c)) return;
      closeForm();
      send({ op: "add_fk", child, parent, columns });
    } }, "Add foreign key");
    put(form, h("span", { class: "formtitle", text: `New foreign key ${child} → ${parent}:` }),
      ...selects.map((x) => h("label", {}, `${child} column for ${parent}.${x.pk} (${x.fam || "?"}) `, x.s)),
      add, h("button", { class: "cancel", onclick: closeForm }, "Cancel"));
    add.focus();
  }

  // ---------------------------------------------------------------- side panel
  function renderUnit() {
    const g = graph();
    unitSel.replaceChildren(h("option", { value: "", text: "— row level (each row) —" }),
      ...g.nodes.filter((n) => !n.public).map((n) => h("option", { value: n.id, text: n.id })));
    unitSel.value = g.entity || "";
  }

  function renderSide() {
    const g = graph();
    const sel = model.get("selected") || "";
    side.replaceChildren();
    if (sel.startsWith("node:")) {
      const n = nodeById(sel.slice(5));
      if (n) return sideNode(n);
    } else if (sel.startsWith("edge:")) {
      const e = g.edges.find((x) => x.id === sel.slice(5));
      if (e) return sideEdge(e);
    } else if (sel.startsWith("proposal:")) {
      const p = g.proposals.find((x) => x.id === sel.slice(9));
      if (p) return sideProposal(p);
    }
    put(side, h("h4", { text: "Schema" }),
      h("p", { text: `${g.nodes.length} tables, ${g.edges.length} foreign keys, ` +
        `${g.proposals.length} proposed foreign key(s).` }),
      h("p", { class: "unitdesc", text: g.unit ? `Privacy unit: ${g.unit}.` : "No privacy unit yet: pick the protected entity above." }),
      g.proposals.length ? h("div", {}, h("h4", { text: "Proposed foreign keys" }),
        ...g.proposals.map((p) => h("div", { class: "propline" },
          h("a", { href: "#", onclick: (ev) => { ev.preventDefault(); select(`proposal:${p.id}`); }, text: p.label })))) : null);
  }

  function sideNode(n) {
    const pub = h("input", { type: "checkbox", class: "public-toggle", checked: n.public });
    pub.addEventListener("change", () => send({ op: "set_public", table: n.id, public: pub.checked }));
    const entityBtn = n.entity
      ? h("button", { class: "entity", onclick: () => send({ op: "set_entity", table: null }) }, "Use the row-level unit instead")
      : h("button", { class: "entity", disabled: n.public, onclick: () => send({ op: "set_entity", table: n.id }) },
        "Protect this table (entity)");
    put(side, h("h4", { text: n.id }),
      h("p", { text: `${n.rows === null ? "?" : fmtInt(n.rows)} rows · primary key ${n.primary_key.join(", ") || "(none)"}` }),
      h("label", { class: "toggle" }, pub, " public (released verbatim, spends no budget)"),
      h("div", {}, entityBtn),
      n.entity ? h("p", { class: "note", text: "This is the protected entity: one of its rows and everything depending on it is what DP protects." }) : null,
      h("h5", { text: "Columns" }),
      h("table", { class: "cols" }, n.columns.map((c) => h("tr", {},
        h("td", { text: c.name }), h("td", { text: c.family || "?" }), h("td", { class: `role ${c.role}`, text: c.role })))));
  }

  function sideEdge(e) {
    const g = graph();
    const d = model.get("detail") || {};
    const ready = d.fk === e.id;
    const capIn = h("input", { type: "number", min: 1, step: 1, class: "cap-input",
      value: e.cap === null || e.cap === undefined ? "" : e.cap, placeholder: "τ" });
    const capOut = h("div", { class: "trunc" });
    const chartBox = h("div", { class: "chart" });
    const update = () => {
      const v = capIn.value === "" ? null : Math.floor(Number(capIn.value));
      if (!ready || d.hist === undefined) { capOut.textContent = ""; return; }
      chartBox.replaceChildren(degreeChart(d, v));
      if (v !== null && v >= 1) {
        const t = truncatedAt(d, v);
        capOut.textContent = `τ = ${v} truncates ${fmtInt(t)} of ${fmtInt(d.n_linked)} child rows (${pct(d.n_linked ? t / d.n_linked : 0)}).`;
      } else capOut.textContent = "Set a cap to see how many child rows it truncates.";
    };
    capIn.addEventListener("input", update);
    const setCap = () => send({ op: "set_cap", fk: e.id, cap: capIn.value === "" ? null : Number(capIn.value) });
    capIn.addEventListener("keydown", (ev) => { if (ev.key === "Enter") setCap(); });
    // Python lists where the FK may go: another table with a key of as many columns (not its
    // parent, not the child table itself)
    const targets = e.repoint || [];
    const repoint = h("select", { class: "repoint", disabled: !targets.length },
      targets.length ? targets.map((t) => h("option", { value: t, text: t }))
        : [h("option", { value: "", text: "no other table has a matching key" })]);
    put(side, h("h4", { text: e.label }),
      h("p", { text: `${e.child}(${e.columns.join(", ")}) → ${e.parent}(${e.parent_columns.join(", ")})` +
        (e.nullable ? " · nullable" : "") }),
      e.problems.length ? h("p", { class: "refused", text: `problems: ${e.problems.join(", ")}` }) : null,
      h("h5", { text: "Degree cap τ (children per parent; public)" }),
      ready && d.needs_cap ? h("p", { class: "warn", text: "This FK needs a cap (its parent is private)." }) : null,
      h("div", { class: "caprow" }, capIn, h("button", { class: "setcap", onclick: setCap }, "Set τ"),
        h("button", { class: "clearcap", onclick: () => send({ op: "set_cap", fk: e.id, cap: null }) }, "Clear"),
        h("button", { class: "dpcap", title: "Set τ to a DP 95th percentile of the degrees, chosen " +
          "among 1…100 (ρ = 0.001 is charged to the run's ledger)",
          onclick: () => send({ op: "set_cap_dp", fk: e.id }) }, "DP cap")),
      ready && d.hist !== undefined ? h("div", { class: "curator" },
        h("div", { class: "curator-label", text: `Degree distribution — ${CURATOR}` }),
        h("div", { class: "stats", text: `${fmtInt(d.n_parent)} parents, ${fmtInt(d.n_linked)} linked children; ` +
          `median ${d.quantiles["50"]}, p90 ${d.quantiles["90"]}, p99 ${d.quantiles["99"]}, max ${d.max}` }),
        chartBox, capOut,
        h("table", { class: "trunc-table" }, h("tr", {}, h("th", { text: "τ" }), h("th", { text: "child rows truncated" })),
          d.truncation.map(([t, n]) => h("tr", {}, h("td", { text: String(t) }), h("td", { text: `${fmtInt(n)} (${pct(d.n_linked ? n / d.n_linked : 0)})` }))))) :
        h("p", { class: "note", text: ready ? "No data: degree distribution unavailable." : "Loading degree distribution…" }),
      h("h5", { text: "Re-point or delete" }),
      h("div", { class: "caprow" }, repoint, h("button", { class: "repoint-btn", disabled: !targets.length,
        onclick: () => { if (repoint.value) send({ op: "repoint_fk", fk: e.id, parent: repoint.value }); } }, "Re-point")),
      h("button", { class: "delete danger", onclick: () => send({ op: "remove_fk", fk: e.id }) }, "Delete foreign key"));
    update();
  }

  function sideProposal(p) {
    put(side, h("h4", { text: `Proposed: ${p.label}` }),
      h("p", { class: "evidence", text: p.reason }),
      h("p", { class: "note", text: `containment ${pct(p.containment)}, ${fmtInt(p.orphans)} orphan row(s), ` +
        `name match: ${p.name_match ? "yes" : "no"} — ${CURATOR}` }),
      h("div", { class: "caprow" },
        h("button", { class: "accept primary", onclick: () => send({ op: "accept", fk: p.id }) }, "Accept"),
        h("button", { class: "reject", onclick: () => send({ op: "reject", fk: p.id }) }, "Reject")));
  }

  // ---------------------------------------------------------------- message & problems
  function renderMessage() {
    const m = model.get("message") || {};
    busy = false;
    root.classList.remove("busy");
    msg.className = "relviz-se-message" + (m.message ? (m.ok ? " ok" : m.error ? " refused error" : " refused") : "");
    msg.textContent = m.message ? (m.ok ? `✓ ${m.message}` : m.error ? `⚠ ${m.message}` : `✗ ${m.message}`) : "";
  }

  function renderUndo(g) {
    undoBtn.disabled = !g.can_undo;
    undoBtn.title = g.can_undo ? `Undo: ${g.undo}` : "nothing to undo";
  }

  function renderConfirm() {
    const c = model.get("confirm") || {};
    confirmBox.replaceChildren();
    confirmBox.hidden = !c.op;
    if (!c.op) return;
    const yes = h("button", { class: "confirm-yes danger", onclick: () =>
      send({ op: c.op, how: c.how, fk: c.fk, confirmed: true }) }, `Drop ${fmtInt(c.removed)} row(s)`);
    put(confirmBox, h("div", { class: "ctitle", text: c.title }),
      h("ul", {}, (c.lines || []).map((l) => h("li", { text: l }))),
      c.advice ? h("p", { class: "advice", text: `Advice: ${c.advice}.` }) : null,
      h("p", { class: "note", text: `Counts read from the data: ${CURATOR}.` }),
      h("div", { class: "caprow" }, yes,
        h("button", { class: "confirm-no", onclick: () => send({ op: "dismiss" }) }, "Cancel")));
    yes.focus();
  }

  function renderProblems() {
    const ps = model.get("problems") || [];
    problemsBox.replaceChildren();
    if (!ps.length) {
      put(problemsBox, h("div", { class: "none", text: "✓ No problems: the schema and the data agree." }));
      return;
    }
    const orphans = ps.some((p) => p.kind === "orphan");
    put(problemsBox, h("div", { class: "phead", text: `Problems (${ps.length})` }),
      h("ul", {}, ps.map((p) => h("li", { class: `problem ${p.kind}` }, h("code", { text: p.kind }), " ", p.text.replace(/^\[[^\]]*\]\s*/, "")))),
      orphans ? h("div", { class: "repair" }, "Repair orphans: ",
        h("button", { class: "repair-null", onclick: () => send({ op: "repair", how: "null" }) }, "set them to null"),
        h("button", { class: "repair-drop", title: "asks first, showing how many rows each table would lose",
          onclick: () => send({ op: "repair", how: "drop" }) }, "drop the rows…")) : null);
  }

  // ---------------------------------------------------------------- proposals to review
  function reviewRow(it) {
    const open = it.status === "open" || it.status === "changed";
    const ex = it.examples && it.examples.length ? ` (e.g. ${it.examples.join(", ")})` : "";
    let action;
    if (open) {
      action = [
        h("button", { class: "raccept", disabled: it.status === "changed",
          title: it.status === "changed" ? "an edit changed this since: undo it to accept the proposal"
            : "keep it as proposed", onclick: () => send({ op: "accept_inferred", id: it.id }) }, "Accept"),
        it.can_reject ? h("button", { class: "rreject", title: `Reject: ${it.reject}`,
          onclick: () => send({ op: "reject_inferred", id: it.id }) }, "Reject")
          : h("span", { class: "ronly", title: `No Reject: ${it.reject}`, text: "accept only" }),
      ];
    } else {
      action = h("span", { class: `rstate ${it.status}`, title: it.note || "",
        text: it.status === "accepted" ? "✓ accepted" : "✗ rejected" });
    }
    return h("tr", { class: `rrow ${it.status}`, "data-id": it.id, "data-kind": it.kind },
      h("td", { class: "rcol", text: it.column || "(table)" }),
      h("td", { class: "rmark" }, h("span", { class: `rbadge k-${it.kind}`, text: it.mark })),
      h("td", { class: "rwhat" },
        h("div", { class: "rprop", text: it.proposal }),
        h("div", { class: "rreason", text: it.reason + ex }),
        it.status === "rejected" && it.note ? h("div", { class: "rnote", text: `Rejected: ${it.note}.` }) : null,
        it.status === "changed" ? h("div", { class: "rnote", text: "Changed by an edit since it was proposed." }) : null),
      h("td", { class: "ract" }, action));
  }

  function renderReview() {
    const r = graph().review || {};
    reviewBox.replaceChildren();
    reviewBox.hidden = !r.total;
    if (!r.total) return;
    const groups = (r.groups || []).map((g) => {
      const det = h("details", { class: "rtable", "data-table": g.table, open: !collapsed.has(g.table) },
        h("summary", {}, h("span", { class: "rtname", text: g.table }),
          h("span", { class: "rtmeta", text: ` ${g.public ? "public" : "private"} · ` +
            (g.open ? `${g.open} to review` : "all reviewed") }),
          g.open ? h("button", { class: "raccept-all", title: `Accept every open proposal of ${g.table} as it is`,
            onclick: (ev) => { ev.preventDefault(); send({ op: "accept_inferred", table: g.table }); } },
          "Accept the rest") : null),
        h("table", { class: "rlist" }, g.items.map(reviewRow)));
      det.addEventListener("toggle", () => { if (det.open) collapsed.delete(g.table); else collapsed.add(g.table); });
      return det;
    });
    put(reviewBox, h("div", { class: "rhead", text: `Proposals to review (${r.open})` }),
      h("div", { class: "rintro", text: `infer_schema read these ${r.total} proposals from the data ` +
        `(${r.view}); ${r.reviewed} reviewed. Accept keeps one as proposed; Reject undoes it where ` +
        "that is one clear edit; Undo takes a decision back." }),
      groups);
  }

  // ---------------------------------------------------------------- privacy units
  const fmtSigma = (x) => (x === null || x === undefined ? "—" : x >= 100 ? fmtInt(Math.round(x)) :
    x >= 10 ? x.toFixed(1) : x.toPrecision(2));

  const fmtBudget = (x) => (x > 0 && x < 0.001 ? x.toExponential().replace(/\.?0+e/, "e") : String(x));

  function renderUnits() {
    const u = model.get("units") || {};
    const list = u.units || [];
    unitsBox.replaceChildren();
    if (!list.length) return;
    const rows = list.map((o) => {
      const usable = o.kind !== "entity" || o.entity;
      const action = o.selected ? h("span", { class: "selbadge", text: "selected" })
        : h("button", { class: "use-unit", disabled: !usable,
          title: usable ? `Protect this unit (${o.title})` : "no table to protect as the entity",
          onclick: () => send({ op: "set_unit", kind: o.kind, entity: o.entity }) }, "Use");
      const sig = o.releases.length ? h("table", { class: "sigmas" }, o.releases.map((r) =>
        h("tr", { title: r.sigma === null ? (r.note || "σ unavailable") :
          `${r.release} (${r.method})${r.n_label ? ` — compared with ${r.n_label}` : ""}` },
        h("td", { class: "rname", text: r.name }),
        h("td", { class: r.sigma === null ? "sv na" : "sv", text: fmtSigma(r.sigma) })))) :
        h("span", { class: "na", text: "—" });
      return h("tr", { class: `unit-row${o.selected ? " selected" : ""}${o.valid ? "" : " invalid"}`,
        "data-kind": o.kind },
      h("td", { class: "uname" }, h("div", { class: "utitle", text: o.title }), action),
      h("td", { class: "udesc" }, h("div", { text: o.description }),
        ...o.reasons.map((r) => h("div", { class: "ureason", text: `✗ ${r}` }))),
      h("td", { class: "usig" }, sig));
    });
    put(unitsBox, h("div", { class: "uhead", text: "Privacy unit — what it protects — σ per release" }),
      h("table", { class: "units" },
        h("tr", {}, h("th", { text: "Privacy unit" }), h("th", { text: "What it protects (on this schema)" }),
          h("th", { text: `σ per release (default plan, ε = ${fmtBudget(u.epsilon)}, δ = ${fmtBudget(u.delta)})` })),
        rows),
      h("div", { class: "unote", text: "σ is the noise standard deviation of each release's cells " +
        "(smaller is more accurate) under the default plan for that unit; it reads no data. " +
        (u.view ? `Sizes in the tooltips are read from the data: ${u.view}.` : "") }));
  }

  const onGraph = () => { redraw(); renderReview(); };
  // A refused edit changes nothing in Python: redraw everything from Python's state so that no
  // control (a checkbox, a drop-down, a drawn edge) is left showing the refused value.
  const onMessage = () => { renderMessage(); const m = model.get("message") || {};
    if (m.ok === false) { redraw(); renderReview(); } };
  const onProblems = () => renderProblems();
  const onSelected = () => { if (!cy) return; cy.elements().unselect();
    const s = model.get("selected") || "";
    if (s.startsWith("edge:") || s.startsWith("proposal:")) cy.getElementById(s).select();
    placeCards(); renderSide(); };
  const onDetail = () => renderSide();
  const onHeight = () => { canvas.style.height = `${model.get("height")}px`; };
  const onUnits = () => renderUnits();
  const onConfirm = () => renderConfirm();
  model.on("change:graph", onGraph);
  model.on("change:confirm", onConfirm);
  model.on("change:message", onMessage);
  model.on("change:problems", onProblems);
  model.on("change:selected", onSelected);
  model.on("change:detail", onDetail);
  model.on("change:height", onHeight);
  model.on("change:units", onUnits);
  renderMessage();
  renderReview();
  renderProblems();
  renderUnits();
  renderConfirm();
  renderUndo(graph());

  // Follow JupyterLab's theme: the canvas reads its colours from --jp-* variables, so restyle
  // when the theme changes (the cards and panels use the CSS variables directly).
  const themeObserver = new MutationObserver(() => { if (cy) cy.style(cyStyle(theme(el))); });
  themeObserver.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light"] });

  // Create the graph only once the container has a size (render() may run before attachment).
  const ro = new ResizeObserver(() => {
    if (canvas.clientWidth === 0 || canvas.clientHeight === 0) return;
    if (!cy) createGraph();
    else { cy.resize(); cy.fit(undefined, 24); if (cy.zoom() > 1) { cy.zoom(1); cy.center(); } placeCards(); }
  });
  ro.observe(canvas);

  return () => {
    ro.disconnect();
    themeObserver.disconnect();
    stage.removeEventListener("mousedown", remeasure, true);
    model.off("change:graph", onGraph);
    model.off("change:message", onMessage);
    model.off("change:problems", onProblems);
    model.off("change:selected", onSelected);
    model.off("change:detail", onDetail);
    model.off("change:height", onHeight);
    model.off("change:units", onUnits);
    model.off("change:confirm", onConfirm);
    if (eh) eh.destroy();
    if (cy) cy.destroy();
  };
}

export default { render };
