// The wavecrest team dashboard: pick a model and GPUs, see its GEMMs, stream recommendations,
// and draw the paper's pictures (sweeps and the heads × hidden heat map) through the server's
// HTTP/JSON gateway. Every figure carries its source badge (MEASURED / CACHED / PREDICTED).
import {
  ApiError,
  getJson,
  int,
  postJson,
  postStream,
  type AnalyzeResponse,
  type Candidate,
  type DevicesResponse,
  type ExampleModel,
  type GemmAnalysis,
  type HealthResponse,
  type ModelSpec,
  type Progress,
  type RecommendResponse,
  type Source,
  type SweepPoint,
  type SweepRequest,
  type SweepResponse,
} from "./api";
import {
  band,
  count,
  memoryText,
  enumLabel,
  fixed,
  percent,
  range,
  seconds,
  signedPercent,
  sourceLabel,
} from "./format";
import { cellAt, drawHeatmap, type HeatmapData } from "./heatmap";
import { drawSweep, METRIC_LABELS, type Metric, type SweepPlot } from "./plot";

// ---- small DOM helpers --------------------------------------------------------------------

function $<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`#${id} missing from index.html`);
  return e as T;
}

type Cell = string | Node;

function node(tag: string, text?: string, className?: string): HTMLElement {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (className) e.className = className;
  return e;
}

function setTable(table: HTMLTableElement, headers: string[], rows: Cell[][], rowClass?: (i: number) => string) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of headers) head.appendChild(node("th", h));
  const body = table.createTBody();
  rows.forEach((row, i) => {
    const tr = body.insertRow();
    if (rowClass) tr.className = rowClass(i);
    for (const c of row) {
      const td = tr.insertCell();
      if (typeof c === "string") td.textContent = c;
      else td.appendChild(c);
    }
  });
}

function badge(source: Source | undefined, p10?: number, p90?: number): HTMLElement {
  const label = sourceLabel(source);
  const span = node("span", label, `badge ${label.toLowerCase()}`);
  const b = label === "PREDICTED" ? band(p10, p90) : "";
  if (b) span.title = `prediction; error band p10/p90 of measured/predicted − 1: ${b}`;
  const wrap = node("span");
  wrap.appendChild(span);
  if (b) wrap.appendChild(node("span", ` ${b}`, "band"));
  return wrap;
}

function showError(target: HTMLElement, err: unknown) {
  target.hidden = false;
  target.replaceChildren();
  if (err instanceof ApiError) {
    target.appendChild(node("strong", `${err.code}: `));
    target.appendChild(document.createTextNode(err.message));
    if (err.fieldViolations.length > 0) {
      const ul = node("ul");
      for (const v of err.fieldViolations) ul.appendChild(node("li", `${v.field}: ${v.description}`));
      target.appendChild(ul);
    }
    if (err.retryAfterS !== undefined) target.appendChild(node("p", `retry after ${err.retryAfterS} s`));
  } else {
    target.textContent = err instanceof Error ? err.message : String(err);
  }
}

function progressReporter(bar: HTMLProgressElement, status: HTMLElement) {
  return (p: Progress) => {
    const total = int(p.total);
    bar.max = Math.max(1, total);
    bar.value = Math.min(int(p.done), bar.max);
    status.textContent = `${p.message ?? ""}${total > 0 ? ` (${int(p.done)}/${total})` : ""}`;
  };
}

// ---- state --------------------------------------------------------------------------------

const state: {
  examples: ExampleModel[];
  model?: ModelSpec;
  devices?: DevicesResponse;
  analyses: Map<string, AnalyzeResponse>;
  sweepPlot?: SweepPlot;
  sweepPoints: SweepPoint[];
  sweepGpu: string;
  heatmap?: HeatmapData;
  recommendAbort?: AbortController;
} = { examples: [], analyses: new Map(), sweepPoints: [], sweepGpu: "" };

const modelError = () => $<HTMLDivElement>("model-error");

function selectedGpus(): string[] {
  const sel = $<HTMLSelectElement>("gpu-select");
  const gpus = Array.from(sel.selectedOptions).map((o) => o.value);
  return gpus.length > 0 ? gpus : sel.options.length > 0 ? [sel.options[0].value] : [];
}

function mode(): string {
  return $<HTMLSelectElement>("mode-select").value;
}

function requireModel(): ModelSpec {
  if (!state.model) throw new Error("choose a model first");
  return state.model;
}

function setModel(spec: ModelSpec) {
  state.model = spec;
  modelError().hidden = true;
  $<HTMLTextAreaElement>("model-json").value = JSON.stringify(spec, null, 2);
  const h = int(spec.hidden_size);
  const a = int(spec.num_attention_heads);
  $("model-summary").textContent =
    `${spec.name ?? "model"}: h=${h}, a=${a}, kv=${int(spec.num_kv_heads) || a}, ` +
    `L=${int(spec.num_layers)}, f=${int(spec.ffn_hidden_size) || "default"}, v=${int(spec.vocab_size)}, ` +
    `s=${int(spec.seq_length)}, b=${int(spec.micro_batch_size) || 1}, t=${int(spec.tensor_parallel) || 1}`;
  defaultSweepRange();
  const hm = (id: string, v: number) => ($<HTMLInputElement>(id).value = String(v));
  hm("hm-h-from", Math.max(128, Math.round((h * 0.75) / 128) * 128));
  hm("hm-h-to", Math.round((h * 1.25) / 128) * 128);
}

function defaultSweepRange() {
  const spec = state.model;
  if (!spec) return;
  const dim = $<HTMLSelectElement>("sweep-dim").value;
  const current: Record<string, [number, number]> = {
    SWEEP_DIMENSION_HIDDEN: [int(spec.hidden_size), 64],
    SWEEP_DIMENSION_HEADS: [int(spec.num_attention_heads), 1],
    SWEEP_DIMENSION_KV_HEADS: [int(spec.num_kv_heads) || int(spec.num_attention_heads), 1],
    SWEEP_DIMENSION_FFN: [int(spec.ffn_hidden_size) || 4 * int(spec.hidden_size), 64],
    SWEEP_DIMENSION_VOCAB: [int(spec.vocab_size), 64],
    SWEEP_DIMENSION_SEQ: [int(spec.seq_length), 256],
    SWEEP_DIMENSION_MICRO_BATCH: [int(spec.micro_batch_size) || 1, 1],
    SWEEP_DIMENSION_TENSOR_PARALLEL: [int(spec.tensor_parallel) || 1, 1],
  };
  const [v, step] = current[dim] ?? [1, 1];
  const span = step === 1 ? Math.max(4, v) : step * 16;
  $<HTMLInputElement>("sweep-from").value = String(Math.max(step, v - span));
  $<HTMLInputElement>("sweep-to").value = String(v + span);
  $<HTMLInputElement>("sweep-step").value = String(step);
}

// ---- health, devices, models --------------------------------------------------------------

async function refreshHealth() {
  const el = $("health");
  try {
    const h = await getJson<HealthResponse>("/v1/health");
    el.textContent = `advisor ${h.advisor ?? "?"} · measure ${h.measure ?? "?"}`;
    el.className = `health ${h.overall === "SERVING" ? "ok" : "bad"}`;
  } catch (err) {
    el.textContent = `server unreachable: ${err instanceof Error ? err.message : String(err)}`;
    el.className = "health bad";
  }
}

async function loadDevices() {
  const d = await getJson<DevicesResponse>("/v1/devices");
  state.devices = d;
  const sel = $<HTMLSelectElement>("gpu-select");
  const kept = new Set(Array.from(sel.selectedOptions).map((o) => o.value));
  sel.replaceChildren();
  const withWorker = new Set((d.workers ?? []).filter((w) => w.up).map((w) => w.device?.catalog_name));
  for (const g of d.catalog ?? []) {
    const o = new Option(`${g.name}${withWorker.has(g.name) ? " (GPU worker)" : ""}`, g.name);
    sel.add(o);
  }
  // Keep what the user chose across refreshes; at first, the first worker's GPU.
  if (kept.size === 0) kept.add((d.workers ?? []).find((w) => w.up)?.device?.catalog_name ?? "h100-sxm");
  for (const o of Array.from(sel.options)) o.selected = kept.has(o.value);

  $("cache-line").textContent = d.has_cache
    ? `Result cache: ${int(d.cache_entries)} GEMM results held.`
    : "No result cache configured (--cache).";
  setTable(
    $<HTMLTableElement>("worker-table"),
    ["worker", "GPU", "backend", "state", "restarts", "last restart"],
    (d.workers ?? []).map((w) => [
      w.id,
      w.device?.name ?? "–",
      w.device?.backend ?? "–",
      w.up ? "up" : "down",
      String(int(w.restarts)),
      w.last_restart_reason ?? "",
    ]),
  );
  setTable(
    $<HTMLTableElement>("catalog-table"),
    ["name", "GPU", "architecture", "SMs", "BF16 TFLOP/s", "GB/s", "dtypes"],
    (d.catalog ?? []).map((g) => [
      g.name,
      g.display_name ?? "",
      g.architecture ?? "",
      String(int(g.sm_count)),
      g.peak_bf16_tflops ? String(g.peak_bf16_tflops) : "–",
      String(g.memory_bandwidth_gbps ?? "–"),
      (g.dtypes ?? []).map((t) => enumLabel(t, "DTYPE")).join(" "),
    ]),
  );
}

async function loadModels() {
  const r = await getJson<{ models?: ExampleModel[] }>("/v1/models");
  state.examples = r.models ?? [];
  const sel = $<HTMLSelectElement>("model-select");
  sel.replaceChildren();
  for (const m of state.examples) sel.add(new Option(m.spec.name ?? m.file, m.file));
  const preferred = state.examples.find((m) => m.file === "llama-2-7b.json") ?? state.examples[0];
  if (preferred) {
    sel.value = preferred.file;
    setModel(preferred.spec);
  }
}

async function parsePasted() {
  try {
    setModel(await postJson<ModelSpec>("/v1/parse-model", $<HTMLTextAreaElement>("model-json").value));
  } catch (err) {
    showError(modelError(), err);
  }
}

// ---- analyze ------------------------------------------------------------------------------

async function analyze() {
  const button = $<HTMLButtonElement>("analyze-button");
  button.disabled = true;
  modelError().hidden = true;
  try {
    const model = requireModel();
    const gpus = selectedGpus();
    const results = await Promise.all(
      gpus.map((gpu) => postJson<AnalyzeResponse>("/v1/analyze", { model, gpu })),
    );
    state.analyses = new Map(results.map((r) => [r.gpu, r]));
    $("analysis-panel").hidden = false;
    setTable(
      $<HTMLTableElement>("gpu-table"),
      ["GPU", "step time", "GEMMs", "elementwise", "MFU", "tokens/s per GPU", "memory per GPU (estimate)", "source"],
      results.map((r) => [
        r.gpu,
        seconds(r.step_time_s),
        seconds(r.gemm_time_s),
        seconds(r.elementwise_time_s),
        percent(r.mfu),
        fixed(r.tokens_per_second_per_gpu, 0),
        memoryText(r.memory),
        badge(r.provenance?.source, r.provenance?.error_band_p10, r.provenance?.error_band_p90),
      ]),
    );
    const rules = $("rules");
    rules.replaceChildren();
    const first = results[0];
    if (first && (first.rules ?? []).length > 0) {
      rules.appendChild(node("h3", "Paper rules this shape breaks"));
      const ul = node("ul", undefined, "notes");
      for (const r of first.rules ?? []) {
        ul.appendChild(node("li", `${r.paper_rule ? `rule ${r.paper_rule} · ` : ""}${r.id}: ${r.message}`));
      }
      rules.appendChild(ul);
    } else {
      rules.appendChild(node("p", "The shape keeps every rule of the paper.", "note"));
    }
    const gsel = $<HTMLSelectElement>("gemm-gpu");
    gsel.replaceChildren();
    for (const r of results) gsel.add(new Option(r.gpu, r.gpu));
    renderGemms();
  } catch (err) {
    showError(modelError(), err);
  } finally {
    button.disabled = false;
  }
}

function alignmentCell(g: GemmAnalysis): string {
  const parts: string[] = [];
  for (const [dim, a] of [
    ["m", g.m_alignment],
    ["n", g.n_alignment],
    ["k", g.k_alignment],
  ] as const) {
    parts.push(`${dim}:${int(a?.largest_pow2)}${a?.meets_rule ? "" : "✗"}`);
  }
  return parts.join(" ");
}

function renderGemms() {
  const r = state.analyses.get($<HTMLSelectElement>("gemm-gpu").value);
  if (!r) return;
  $("provenance").textContent = `${r.gpu}: ${sourceLabel(r.provenance?.source)} by ${r.provenance?.method ?? "?"}`;
  const gemms = [...(r.gemms ?? [])].sort((x, y) => (y.step_flop_share ?? 0) - (x.step_flop_share ?? 0));
  setTable(
    $<HTMLTableElement>("gemm-table"),
    ["GEMM", "pass", "m × n × k (batch)", "layout", "count", "FLOP share", "time", "TFLOP/s",
     "alignment (largest 2^k)", "bound", "tile · waves", "source"],
    gemms.map((g) => {
      const s = g.gemm.shape;
      const batch = int(s.batch) > 1 ? ` (×${int(s.batch)})` : "";
      const t = g.tile;
      return [
        g.gemm.name,
        enumLabel(g.gemm.pass, "PASS"),
        `${int(s.m)} × ${int(s.n)} × ${int(s.k)}${batch}`,
        enumLabel(g.gemm.layout, "LAYOUT").toUpperCase(),
        String(int(g.gemm.count)),
        percent(g.step_flop_share),
        seconds(g.time_s),
        fixed(g.tflops, 0),
        alignmentCell(g),
        enumLabel(g.bound, "BOUND"),
        t ? `${int(t.tile_m)}×${int(t.tile_n)} · ${int(t.waves)} (${percent(t.wave_efficiency, 0)})` : "–",
        badge(r.provenance?.source, g.error_band_p10, g.error_band_p90),
      ];
    }),
  );
}

// ---- recommend ----------------------------------------------------------------------------

function candidateChanges(c: Candidate): string {
  if (c.baseline) return "the model as given";
  return (c.reasons ?? []).join("; ");
}

async function recommend() {
  const button = $<HTMLButtonElement>("recommend-button");
  const cancel = $<HTMLButtonElement>("rec-cancel");
  const bar = $<HTMLProgressElement>("rec-progress");
  const status = $("rec-status");
  button.disabled = true;
  modelError().hidden = true;
  $("recommend-panel").hidden = false;
  $<HTMLTableElement>("rec-table").replaceChildren();
  $("rec-notes").replaceChildren();
  const verdict = $("rec-verdict");
  verdict.hidden = true;
  bar.value = 0;
  status.textContent = "starting";
  const abort = new AbortController();
  state.recommendAbort = abort;
  cancel.hidden = false;
  try {
    const gpu = selectedGpus()[0];
    $("rec-gpu").textContent = `on ${gpu}`;
    const r = await postStream<RecommendResponse>(
      "/v1/recommend",
      { model: requireModel(), gpu, mode: mode(), top: 10 },
      progressReporter(bar, status),
      abort.signal,
    );
    bar.value = bar.max;
    status.textContent =
      `${int(r.candidates_considered)} candidates scored of ${int(r.shapes_examined)} shapes ` +
      `examined; GEMMs measured ${int(r.gemms_measured)}, ` +
      `cached ${int(r.gemms_cached)}, predicted ${int(r.gemms_predicted)}`;
    // The verdict first: keep the shape, or change it to #1.
    if (r.verdict && r.verdict !== "VERDICT_UNSPECIFIED") {
      const keep = r.verdict === "VERDICT_KEEP";
      verdict.replaceChildren(node("strong", keep ? "KEEP" : "CHANGE"), ` ${r.verdict_reason ?? ""}`);
      verdict.className = `verdict ${keep ? "verdict-keep" : "verdict-change"}`;
      verdict.hidden = false;
    }
    const cands = r.candidates ?? [];
    setTable(
      $<HTMLTableElement>("rec-table"),
      ["#", "h", "a", "kv", "L", "f", "v", "params", "Δ params", "speed-up", "MFU", "tokens/s/GPU",
       "memory/GPU", "source", "why"],
      cands.map((c) => [
        c.baseline ? "base" : String(c.rank ?? ""),
        String(int(c.model.hidden_size)),
        String(int(c.model.num_attention_heads)),
        String(int(c.model.num_kv_heads)),
        String(int(c.model.num_layers)),
        String(int(c.model.ffn_hidden_size)),
        String(int(c.model.vocab_size)),
        count(int(c.params?.total_params)),
        signedPercent(c.param_change),
        `${fixed(c.speedup, 3)}× ± ${fixed(c.speedup_uncertainty, 3)}`,
        percent(c.mfu),
        fixed(c.tokens_per_second_per_gpu, 0),
        memoryText(c.memory),
        badge(c.source),
        candidateChanges(c),
      ]),
      (i) => (cands[i].baseline ? "baseline" : ""),
    );
    const notes = $("rec-notes");
    const tps = (r.tensor_parallel_degrees ?? []).map((t) => String(int(t)));
    if (tps.length > 0) notes.appendChild(node("li", `every candidate is legal for tensor parallelism ${tps.join(", ")}`));
    for (const x of r.refusals ?? []) {
      notes.appendChild(
        node("li", `refused ${int(x.count)} ${x.unit ?? ""}: ${x.description ?? ""} (loosen with ${x.loosen_with ?? ""})`),
      );
    }
    for (const n of r.notes ?? []) notes.appendChild(node("li", n));
  } catch (err) {
    if (abort.signal.aborted) status.textContent = "cancelled";
    else {
      status.textContent = "failed";
      showError(modelError(), err);
    }
  } finally {
    button.disabled = false;
    cancel.hidden = true;
    state.recommendAbort = undefined;
  }
}

// ---- sweep --------------------------------------------------------------------------------

function numberInput(id: string, field: string): number {
  const v = Number($<HTMLInputElement>(id).value);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${field}: a whole number ≥ 1, got "${$<HTMLInputElement>(id).value}"`);
  return v;
}

function sweepMetric(): Metric {
  return $<HTMLSelectElement>("sweep-metric").value as Metric;
}

function renderSweep() {
  const target = $("sweep-plot");
  state.sweepPlot?.destroy();
  target.replaceChildren();
  if (state.sweepPoints.length === 0) return;
  const dim = $<HTMLSelectElement>("sweep-dim");
  const label = dim.selectedOptions[0]?.textContent ?? "value";
  $("sweep-title").textContent = `${METRIC_LABELS[sweepMetric()]} against ${label} on ${state.sweepGpu}`;
  state.sweepPlot = drawSweep(target, state.sweepPoints, sweepMetric(), label, Math.max(480, target.clientWidth - 10));
  target.dataset.points = String(state.sweepPoints.length);
  target.dataset.drawMs = state.sweepPlot.lastDrawMs.toFixed(2);
  // Time to the next frame as well: what a user waits for includes the paint.
  const started = performance.now() - state.sweepPlot.lastDrawMs;
  delete target.dataset.frameMs;
  requestAnimationFrame(() => (target.dataset.frameMs = (performance.now() - started).toFixed(2)));
}

async function sweep() {
  const button = $<HTMLButtonElement>("sweep-button");
  const bar = $<HTMLProgressElement>("sweep-progress");
  const status = $("sweep-status");
  button.disabled = true;
  modelError().hidden = true;
  try {
    const req: SweepRequest = {
      model: requireModel(),
      gpu: selectedGpus()[0],
      vary: $<HTMLSelectElement>("sweep-dim").value,
      from: numberInput("sweep-from", "from"),
      to: numberInput("sweep-to", "to"),
      step: numberInput("sweep-step", "step"),
      mode: mode(),
    };
    const r = await postStream<SweepResponse>("/v1/sweep", req, progressReporter(bar, status));
    state.sweepPoints = r.points ?? [];
    state.sweepGpu = r.gpu ?? req.gpu;
    renderSweep();
    const valid = state.sweepPoints.filter((p) => p.valid);
    const hold = valid.filter((p) => (p.rules_broken ?? []).length === 0);
    const sources = new Set(valid.map((p) => sourceLabel(p.source)));
    $("sweep-note").textContent =
      `${state.sweepPoints.length} points on ${r.gpu}: ${valid.length} legal, ${hold.length} keep every paper rule ` +
      `(markers); ${[...sources].join("/") || "–"}; shaded: the prediction's p10–p90 error band.`;
    status.textContent = "done";
  } catch (err) {
    status.textContent = "failed";
    showError(modelError(), err);
  } finally {
    button.disabled = false;
  }
}

// ---- heat map -----------------------------------------------------------------------------

async function heatmap() {
  const button = $<HTMLButtonElement>("heatmap-button");
  const bar = $<HTMLProgressElement>("hm-progress");
  const status = $("hm-status");
  button.disabled = true;
  modelError().hidden = true;
  try {
    const model = requireModel();
    const hidden = range(numberInput("hm-h-from", "hidden from"), numberInput("hm-h-to", "hidden to"), numberInput("hm-h-step", "hidden step"), 64);
    const aFrom = numberInput("hm-a-from", "heads from");
    const aTo = numberInput("hm-a-to", "heads to");
    const aStep = numberInput("hm-a-step", "heads step");
    const heads = range(aFrom, aTo, aStep, 128);
    if (hidden.length === 0 || heads.length === 0) throw new Error("the heat map's ranges are empty (from > to)");
    const data: HeatmapData = {
      hidden,
      heads,
      cells: hidden.map(() => []),
      baseline: { hidden: int(model.hidden_size), heads: int(model.num_attention_heads) },
    };
    state.heatmap = data;
    const gpu = selectedGpus()[0];
    bar.max = hidden.length;
    for (let r = 0; r < hidden.length; r++) {
      bar.value = r;
      status.textContent = `row ${r + 1} of ${hidden.length} (h = ${hidden[r]})`;
      // head_dim follows h / a here, so every (h, a) cell is a model of its own shape.
      const row: ModelSpec = { ...model, hidden_size: hidden[r], head_dim: undefined };
      const resp = await postStream<SweepResponse>(
        "/v1/sweep",
        { model: row, gpu, vary: "SWEEP_DIMENSION_HEADS", from: aFrom, to: aTo, step: aStep, mode: mode() },
        () => undefined,
      );
      data.cells[r] = resp.points ?? [];
      drawHeatmap($<HTMLCanvasElement>("heatmap"), data, "tflops");
    }
    bar.value = bar.max;
    status.textContent = `${hidden.length} × ${heads.length} cells on ${gpu}`;
    $<HTMLCanvasElement>("heatmap").dataset.cells = String(hidden.length * heads.length);
  } catch (err) {
    status.textContent = "failed";
    showError(modelError(), err);
  } finally {
    button.disabled = false;
  }
}

function heatmapHover(ev: MouseEvent) {
  const canvas = ev.currentTarget as HTMLCanvasElement;
  if (!state.heatmap) return;
  const rect = canvas.getBoundingClientRect();
  const x = ((ev.clientX - rect.left) * canvas.width) / rect.width;
  const y = ((ev.clientY - rect.top) * canvas.height) / rect.height;
  const cell = cellAt(canvas, state.heatmap, x, y);
  if (!cell) return;
  const p = cell.point;
  const info = $("heatmap-info");
  if (!p) info.textContent = `h=${cell.hidden}, a=${cell.heads}: not computed yet`;
  else if (!p.valid) info.textContent = `h=${cell.hidden}, a=${cell.heads}: ${p.invalid_reason ?? "not legal"}`;
  else
    info.textContent =
      `h=${cell.hidden}, a=${cell.heads} (h/a=${(cell.hidden / cell.heads).toFixed(1)}): ${fixed(p.tflops, 0)} TFLOP/s, ` +
      `MFU ${percent(p.mfu)}, ${sourceLabel(p.source)} ${band(p.error_band_p10, p.error_band_p90)}; ` +
      `rules broken: ${(p.rules_broken ?? []).join(", ") || "none"}`;
}

// ---- wiring -------------------------------------------------------------------------------

async function init() {
  $("model-select").addEventListener("change", () => {
    const m = state.examples.find((e) => e.file === $<HTMLSelectElement>("model-select").value);
    if (m) setModel(m.spec);
  });
  $("parse-button").addEventListener("click", () => void parsePasted());
  $("analyze-button").addEventListener("click", () => void analyze());
  $("recommend-button").addEventListener("click", () => void recommend());
  $("rec-cancel").addEventListener("click", () => state.recommendAbort?.abort());
  $("gemm-gpu").addEventListener("change", renderGemms);
  $("sweep-dim").addEventListener("change", defaultSweepRange);
  $("sweep-metric").addEventListener("change", renderSweep);
  $("sweep-button").addEventListener("click", () => void sweep());
  $("heatmap-button").addEventListener("click", () => void heatmap());
  $("heatmap").addEventListener("mousemove", heatmapHover);
  await refreshHealth();
  try {
    await Promise.all([loadDevices(), loadModels()]);
  } catch (err) {
    showError(modelError(), err);
  }
  setInterval(() => void refreshHealth(), 10000);
  setInterval(() => void loadDevices().catch(() => undefined), 30000);
  document.body.dataset.ready = "true";
}

void init();
