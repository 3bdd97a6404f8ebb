// The page: a form over the JSON API (/api/...), the answers drawn as tables and SVG charts.
// Every number shown comes from the API (the library's to_dict()); nothing is computed here.
"use strict";

const MESSAGES = JSON.parse(document.getElementById("messages").textContent);
function t(s) { return MESSAGES[s] || s; }
const LANG = document.documentElement.lang || "en";
const $ = (id) => document.getElementById(id);
const form = $("setup");
const state = {configs: [], configJson: null, configJsonName: "", info: {export_formats: []}};
const FILLED_FROM_IMPORT = ["model", "method", "precision", "optimizer", "batch_size", "grad_accum", "seq_len",
  "grad_ckpt", "framework", "num_gpus", "nodes", "zero", "fsdp", "offload", "samples", "epochs", "dataset"];
const PARTS = {weights: t("weights"), gradients: t("gradients"), optimizer: t("optimizer states"),
  master_weights: t("fp32 master weights"), activations: t("saved activations"), autocast_weight_copies: t("autocast copies"),
  logits_loss: t("logits + loss"), temporaries: t("temporaries"), reference_model: t("reference model"),
  quant_constants: t("quantization constants"), grad_buffer: t("gradient buffer"),
  zero3_gathered_params: t("ZeRO-3 gathered parameters"), fsdp_unsharded_units: t("FSDP gathered parameters"),
  allocator_reserve: t("allocator reserve"), cuda_context: t("CUDA context"), nccl: t("NCCL buffers"),
  paged_optimizer: t("paged optimizer")};

const gib = (b) => b === null || b === undefined ? "" : (b / 2 ** 30).toFixed(1) + " GiB";
const num = (v, d = 2) => v === null || v === undefined ? "" : (+v).toLocaleString(LANG === "zh" ? "zh-CN" : "en-US", {maximumFractionDigits: d});
const hours = (s) => s === null || s === undefined ? "" : num(s / 3600, 2) + " h";

function fields() { return Array.from(form.elements).filter((e) => e.name); }

// The setup as query parameters: only the fields that differ from their default (or from what an
// uploaded config set), so that the library records where each value came from.
function setupParams() {
  const p = new URLSearchParams();
  for (const e of fields()) {
    const v = e.value.trim();
    const base = e.dataset.base !== undefined ? e.dataset.base : (e.dataset.default || "");
    if (e.name === "model") {
      if (v && !state.configJson && v !== e.dataset.base) p.set("model", v);
    } else if (v !== "" && v !== base) {
      p.set(e.name, v);
    }
  }
  return p;
}

// The plan's and the table's own inputs (no setup flags: the estimate takes none of them), each sent
// where its data-for says ("plan", "table", "download") and only when it differs from its default.
function extraInputs() { return Array.from(form.querySelectorAll("[data-param]")); }
function extraParams(use, p) {
  for (const e of extraInputs()) {
    const v = e.value.trim();
    if (e.dataset.for.split(" ").includes(use) && v !== "" && v !== (e.dataset.default || "")) p.set(e.dataset.param, v);
  }
  return p;
}

function hasUploads() { return state.configs.length > 0 || state.configJson !== null; }

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, params, {post = false} = {}) {
  let res;
  $("busy").hidden = false;
  try {
    if (post && hasUploads()) {
      const body = Object.fromEntries(params.entries());
      if (state.configs.length) body.configs = state.configs;
      if (state.configJson) body.config_json = state.configJson;
      res = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    } else {
      res = await fetch(path + "?" + params.toString());
    }
    const data = await res.json();
    if (!res.ok) throw new Error(data.error || res.statusText);
    return data;
  } finally {
    $("busy").hidden = true;
  }
}

function table(node, columns, rows) {
  node.textContent = "";
  const head = node.createTHead().insertRow();
  for (const [, label] of columns) head.appendChild(Object.assign(document.createElement("th"), {textContent: label}));
  const body = node.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const [key] of columns) {
      const value = typeof key === "function" ? key(row) : row[key];
      const td = tr.insertCell();
      if (value instanceof Node) td.appendChild(value); else td.textContent = value === null || value === undefined ? "" : String(value);
    }
  }
}

function list(node, items) {
  node.textContent = "";
  for (const item of items) node.appendChild(Object.assign(document.createElement("li"), {textContent: item}));
}

function shareUrl(extra) {
  const p = setupParams();
  for (const e of extraInputs()) if (e.value.trim() !== "" && e.value.trim() !== (e.dataset.default || "")) p.set(e.dataset.param, e.value.trim());
  for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
  if (LANG !== "en" && !p.has("lang")) p.set("lang", LANG);
  return location.pathname + "?" + p.toString();
}

function remember(view) {
  const url = shareUrl(view ? {view} : {});
  history.replaceState(null, "", url);
  $("share").href = url;
}

// --- estimate -------------------------------------------------------------------------------------
function renderEstimate(est) {
  const m = est.memory, time = est.time, cost = est.cost;
  $("estimate").hidden = false;
  const verdict = $("verdict");
  verdict.textContent = m.fits ? t("fits") : t("does not fit");
  verdict.className = "verdict " + (m.fits ? "fits" : "nofit");
  const part = ([k, v]) => ({label: PARTS[k] || k.replace(/_/g, " "), bytes: v});
  const parts = Object.entries(m.components_bytes).map(part)
    .concat(Object.entries(m.overhead_bytes || {}).filter(([, v]) => v > 0).map(part));
  charts.stackedBar($("memory-chart"), parts, m.gpu_capacity_bytes, m.usable_bytes,
                    {capacity: t("GPU capacity"), usable: t("usable")});
  table($("memory-table"), [["what", t("view")], ["value", t("per GPU")]], [
    {what: t("peak allocated (torch.cuda.max_memory_allocated)"), value: gib(m.peak_allocated_bytes)},
    {what: t("peak reserved (caching allocator)"), value: gib(m.peak_reserved_bytes)},
    {what: t("on the device (nvidia-smi)"), value: gib(m.device_bytes)},
    {what: t("usable on the GPU (capacity less headroom)"), value: gib(m.usable_bytes)},
    {what: t("GPU capacity"), value: gib(m.gpu_capacity_bytes)},
    {what: t("margin"), value: gib(m.margin_bytes)},
    {what: t("peak falls at"), value: m.peak_phase},
    {what: t("CPU RAM per node"), value: gib(m.cpu_ram_bytes)}]);
  list($("suggestions"), (est.suggestions || []).map((s) =>
    `${s.change}: ${gib(s.device_bytes)} (${s.fits ? t("fits") : t("does not fit")}); ${s.cost}`));
  const rows = [
    {link: t("FLOPs per step"), value: time.flops_per_step.toExponential(3)},
    {link: t("time per step"), value: num(time.step_s, 3) + " s"},
    {link: t("MFU"), value: num(100 * time.mfu, 1) + " %"},
    {link: t("tokens per second per GPU"), value: num(time.tokens_per_s_per_gpu, 0)}];
  if (time.steps) {   // a run length was given (samples or max steps)
    rows.push({link: t("steps"), value: num(time.steps, 0)}, {link: t("training time"), value: hours(time.total_s)},
              {link: t("retry factor"), value: num(time.retry_factor)},
              {link: t("GPU-hours"), value: num(time.gpu_hours_with_retries)});
  }
  if (cost) {
    rows.push({link: t("price per GPU-hour"), value: `${num(cost.price_per_gpu_hour, 4)} ${cost.currency} (${cost.provider || cost.origin || ""} ${cost.as_of || ""})`});
    rows.push({link: t("cost"), value: cost.total === null ? `${num(cost.per_hour)} ${cost.currency} / h` : `${num(cost.total)} ${cost.currency}` + (cost.for_reference ? " (" + t("for reference") + ")" : "")});
  }
  table($("chain"), [["link", t("link")], ["value", t("value")]], rows);
  list($("notes"), est.notes || []);
}

async function runEstimate() {
  showError("");
  remember("");
  try {
    renderEstimate(await api("/api/estimate", setupParams(), {post: true}));
  } catch (err) {
    $("estimate").hidden = true;
    showError(err.message);
    return;
  }
  await runTiers();
}

async function runTiers() {
  const p = setupParams();
  const model = p.get("model") || form.elements.model.value.trim();
  if (!model || state.configJson) { $("tiers").hidden = true; return; }
  p.delete("model");
  p.set("models", model); p.set("methods", form.elements.method.value); p.set("gpus", "all"); p.set("tiers", "true");
  for (const k of ["gpu", "num_gpus", "nodes", "zero", "fsdp", "offload"]) p.delete(k);
  try {
    const data = await api("/api/table", p);
    $("tiers").hidden = false;
    const yes = (v) => v ? t("fits") : t("does not fit");
    table($("tiers-table"), [["gpu", "GPU"], ["memory_gib", t("GiB on the GPU")], ["job_gib", t("GiB the job needs on one")],
      [(r) => yes(r.fits_one_gpu), t("one GPU")], [(r) => r.min_gpus === null ? "> " + 64 : r.min_gpus, t("fewest GPUs")],
      ["layout", t("layout")], ["gib_per_gpu", t("GiB per GPU then")], ["time_h", t("hours")],
      [(r) => r.cost === null ? "" : `${r.cost} ${r.currency}`, t("cost")]], data.tiers);
  } catch (err) {
    $("tiers").hidden = true;
  }
}

// --- plan -----------------------------------------------------------------------------------------
const PLAN_KEYS = ["gpu", "num_gpus", "nodes", "zero", "fsdp", "offload", "tp", "pp", "method", "optimizer", "grad_ckpt",
  "attention", "batch_size", "grad_accum"];

async function runPlan() {
  showError("");
  remember("plan");
  let data;
  try {
    data = await api("/api/plan", extraParams("plan", setupParams()), {post: true});
  } catch (err) {
    $("plan").hidden = true;
    showError(err.message);
    return;
  }
  $("plan").hidden = false;
  const points = data.points.map((p) => ({x: p.time_s / 3600, y: p.cost, front: p.pareto, cls: p.rank ? "ranked" : "",
    label: `${p.gpu} x${p.num_gpus} ${p.engine}: ${num(p.time_s / 3600)} h, ${num(p.cost)} ${data.currency}` + (p.rank ? ` (#${p.rank})` : "")}));
  charts.scatter($("plan-chart"), points, {xlabel: t("hours"), ylabel: `${t("cost")} (${data.currency})`,
    legend: t("Pareto front"), empty: t("no setup fits")});
  const exportable = state.info.export_formats.length > 0;
  table($("plan-table"), [["rank", "#"], [(r) => `${r.sets.gpu} x${r.sets.num_gpus}`, "GPU"], [(r) => r.sets.engine, t("layout")],
    [(r) => r.sets.method, t("method")], [(r) => r.sets.optimizer, t("optimizer")],
    [(r) => `${r.sets.batch_size} x ${r.sets.grad_accum}`, t("micro-batch x accumulation")],
    [(r) => r.sets.grad_ckpt, t("checkpointing")], [(r) => gib(r.memory.device_bytes), t("per GPU")],
    [(r) => hours(r.ranking.time_s), t("hours")], [(r) => `${num(r.ranking.cost)} ${data.currency}`, t("cost")],
    [(r) => r.pareto ? "★" : "", t("Pareto front")],
    [(r) => exportable ? exportButton(r) : "", exportable ? t("configs") : ""]], data.plans);
  $("rejected-box").hidden = !data.rejected.length;
  $("rejected-count").textContent = `(${data.rejected.length})`;
  list($("rejected"), data.rejected.map((r) => `${r.gpu}: ${r.reason}`));
}

function exportButton(plan) {
  const b = Object.assign(document.createElement("button"), {type: "button", textContent: t("configs"), className: "small"});
  b.addEventListener("click", () => runExport(plan));
  return b;
}

async function runExport(plan) {
  // With uploads: their job (POST, as --from) under the fields changed and the plan's layout.
  // Without: every field the form shows, and the plan's layout over them.
  const post = hasUploads();
  const p = post ? setupParams() : new URLSearchParams();
  if (!post) for (const e of fields()) if (e.value.trim() !== "") p.set(e.name, e.value.trim());
  for (const k of PLAN_KEYS) if (plan.sets[k] !== undefined && plan.sets[k] !== null) p.set(k, plan.sets[k]);
  try {
    const data = await api("/api/export", p, {post});
    $("export").hidden = false;
    $("export-what").textContent = data.header;
    const box = $("export-files");
    box.textContent = "";
    for (const f of data.files) {
      const fig = document.createElement("figure");
      const cap = Object.assign(document.createElement("figcaption"), {textContent: f.name + " "});
      const copy = Object.assign(document.createElement("button"), {type: "button", textContent: t("copy"), className: "small"});
      copy.addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText(f.text));
      cap.appendChild(copy);
      fig.append(cap, Object.assign(document.createElement("pre"), {textContent: f.text}));
      box.appendChild(fig);
    }
    if (data.commands.length) box.appendChild(Object.assign(document.createElement("pre"), {textContent: data.commands.join("\n")}));
  } catch (err) {
    showError(err.message);
  }
}

// --- table and runs -------------------------------------------------------------------------------
async function runTable() {
  showError("");
  remember("table");
  const p = setupParams();
  const model = p.get("model") || form.elements.model.value.trim();
  p.delete("model");
  if (model) p.set("models", model);
  for (const k of ["method", "gpu", "num_gpus", "nodes", "zero", "fsdp", "offload"]) p.delete(k);
  extraParams("table", p);
  if (LANG !== "en") p.set("lang", LANG);       // the cells' words and the downloads in the page's language
  try {
    const data = await api("/api/table", p);
    renderTable(data);
    for (const fmt of ["csv", "xlsx", "html", "markdown"]) {
      const q = extraParams("download", new URLSearchParams(p)); q.set("format", fmt);
      $("dl-" + fmt).href = "/api/table?" + q.toString();
    }
  } catch (err) {
    $("table").hidden = true;
    showError(err.message);
  }
}

// The table as the printed page lays it out: a model's GPU types as its sub-rows, each cell its
// words (GPUs and memory per GPU, time and cost, what it chose) coloured by fit.
function renderTable(data) {
  $("table").hidden = false;
  $("table-title").textContent = data.title;
  const node = $("resource-table");
  node.textContent = "";
  const head = node.createTHead().insertRow();
  for (const h of [t("model"), t("params"), "GPU"].concat(data.columns.map((c) => c.header))) {
    head.appendChild(Object.assign(document.createElement("th"), {textContent: h}));
  }
  const span = {};
  for (const r of data.rows) span[r.model] = (span[r.model] || 0) + 1;
  const body = node.createTBody();
  let last = null;
  for (const r of data.rows) {
    const tr = body.insertRow();
    if (r.model !== last) {
      tr.className = "model-start";
      tr.appendChild(Object.assign(document.createElement("th"), {textContent: r.model, rowSpan: span[r.model]}));
      Object.assign(tr.insertCell(), {textContent: r.params, rowSpan: span[r.model]});
    }
    last = r.model;
    Object.assign(tr.insertCell(), {textContent: r.gpu, className: "gpu"});
    for (const c of r.cells) {
      const td = tr.insertCell();
      td.className = "cell " + c.kind + (c.calibrated ? " calibrated" : "");
      td.dataset.kind = c.kind;
      if (c.tip) td.title = c.tip;
      c.parts.forEach((part, i) => td.appendChild(Object.assign(document.createElement("div"),
        {className: "nrt"[Math.min(i, 2)], textContent: part})));
    }
  }
  list($("table-assumptions"), data.assumptions.concat(data.notes));
  table($("table-prices"), [["gpu", "GPU"], [(r) => r.price_per_gpu_hour === null ? "-" : num(r.price_per_gpu_hour, 2),
    t("price per GPU-hour")], ["currency", t("currency")], ["provider", t("provider")], ["kind", t("pricing")],
    ["source", t("source")], ["as_of", t("as of")]], data.prices);
}

async function runRuns() {
  showError("");
  remember("runs");
  let data;
  try { data = await api("/api/runs", new URLSearchParams()); } catch (err) { showError(err.message); return; }
  $("runs").hidden = false;
  $("runs-note").textContent = data.ledger ? `${t("ledger")}: ${data.ledger}` : t("no ledger configured: start trainplan serve --db URL");
  const key = (r) => r.meas_device_bytes !== null && r.meas_device_bytes !== undefined ? "device_bytes" : "peak_allocated_bytes";
  const points = data.runs.filter((r) => r["est_" + key(r)] && r["meas_" + key(r)]).map((r) => ({
    x: r["meas_" + key(r)] / 2 ** 30, y: r["est_" + key(r)] / 2 ** 30, label: `#${r.id} ${r.model} ${r.method} ${r.gpu}`}));
  charts.scatter($("runs-chart"), points, {xlabel: t("measured GiB"), ylabel: t("estimated GiB"), diagonal: true,
    empty: t("no runs")});
  table($("runs-table"), [["id", "#"], ["model", t("model")], ["method", t("method")], ["gpu", "GPU"], ["num_gpus", t("GPUs")],
    [(r) => gib(r["est_" + key(r)]), t("estimated GiB")], [(r) => gib(r["meas_" + key(r)]), t("measured GiB")],
    [(r) => r.residual && r.residual[key(r)] !== undefined ? num(100 * r.residual[key(r)], 1) + " %" : "", t("residual")],
    ["source", t("source")]], data.runs);
}

// --- uploads --------------------------------------------------------------------------------------
async function importConfigs(files) {
  showError("");
  const data = new FormData();
  for (const f of files) data.append("files", f, f.name);
  let res, out;
  try {
    res = await fetch("/api/import-config", {method: "POST", body: data});
    out = await res.json();
    if (!res.ok) throw new Error(out.error || res.statusText);
  } catch (err) { showError(err.message); return; }
  state.configs = await Promise.all(Array.from(files).map(async (f) => ({name: f.name, text: await f.text()})));
  for (const name of FILLED_FROM_IMPORT) {
    const e = form.elements[name];
    if (!e || out.setup[name] === undefined || out.setup[name] === null) continue;
    setValue(e, String(out.setup[name]));
    e.dataset.base = String(out.setup[name]);
  }
  $("imported").hidden = false;
  table($("sources-table"), [["field", t("setting")], [(s) => JSON.stringify(s.value), t("value")], ["origin", t("from")],
    [(s) => [s.key, s.file].filter(Boolean).join(" · "), t("key")], ["note", t("note")]], out.sources);
  list($("unread"), out.unread.map((u) => `${t("not used")}: ${u.key} = ${JSON.stringify(u.value)}: ${u.why}`).concat(out.notes));
  $("uploads").textContent = t("using") + ": " + state.configs.map((c) => c.name).join(", ");
  if (!out.notes.length) await runEstimate();   // a note (no GPU count for a sharded config) asks for input first
}

function setValue(e, value) {
  if (e.tagName === "SELECT" && !Array.from(e.options).some((o) => o.value === value)) {
    e.appendChild(Object.assign(document.createElement("option"), {value, textContent: value}));
  }
  e.value = value;
}

async function loadConfigJson(file) {
  try {
    state.configJson = JSON.parse(await file.text());
    state.configJsonName = file.name;
    $("uploads").textContent = t("model from") + ": " + file.name;
  } catch (err) { showError(file.name + ": " + err.message); }
}

// --- start ----------------------------------------------------------------------------------------
async function start() {
  const params = new URLSearchParams(location.search);
  for (const e of fields()) if (params.has(e.name)) setValue(e, params.get(e.name));
  for (const e of extraInputs()) if (params.has(e.dataset.param)) setValue(e, params.get(e.dataset.param));
  for (const lang of ["en", "zh"]) {
    $("lang-" + lang).addEventListener("click", (ev) => { ev.preventDefault(); location.href = shareUrl({lang, view: params.get("view") || ""}); });
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); runEstimate(); });
  $("run-plan").addEventListener("click", runPlan);
  $("run-table").addEventListener("click", runTable);
  $("run-runs").addEventListener("click", runRuns);
  $("train-config").addEventListener("change", (ev) => ev.target.files.length && importConfigs(ev.target.files));
  $("config-json").addEventListener("change", (ev) => ev.target.files.length && loadConfigJson(ev.target.files[0]));
  try {
    state.info = await api("/api/info", new URLSearchParams());
    const [models, gpus] = await Promise.all([api("/api/models", new URLSearchParams()), api("/api/gpus", new URLSearchParams())]);
    for (const m of models) $("model-list").appendChild(Object.assign(document.createElement("option"), {value: m.name}));
    const select = $("gpu"), chosen = select.value;
    for (const g of gpus) if (g.id !== chosen) select.appendChild(Object.assign(document.createElement("option"), {value: g.id, textContent: g.id}));
    if (params.has("gpu")) setValue(select, params.get("gpu"));
  } catch (err) { showError(err.message); }
  $("share").href = shareUrl({});
  if (params.get("model")) {
    await runEstimate();
    const view = params.get("view");
    if (view === "plan") await runPlan(); else if (view === "table") await runTable();
  }
  if (params.get("view") === "runs") await runRuns();
  document.body.dataset.ready = "1";
}

start();
