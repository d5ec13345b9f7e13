// The wavecrest team dashboard: pick a model and GPUs, see its GEMMs, stream recommendations,
// and draw the paper's pictures (sweeps and the heads × hidden heat map) through the server's
// HTTP/JSON gateway. Every figure carries its source badge (MEASURED / CACHED / PREDICTED).
import {
  ApiError,
  exportModel,
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
  type Int64,
  type ModelSpec,
  type Progress,
  type RecommendResponse,
  type RunConfig,
  type StepBreakdown,
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
import { drawRoofline, nearest, peakFor, type RooflinePoint } from "./roofline";

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
  roofline: RooflinePoint[];
  // The example chosen, or "" for a pasted model (then the URL carries the model itself).
  modelFile: string;
  // The Hugging Face config.json the model came from, if it did: exports edit it (drop-in).
  baseConfig: string;
} = { examples: [], analyses: new Map(), sweepPoints: [], sweepGpu: "", roofline: [], modelFile: "",
      baseConfig: "" };

const modelError = () => $<HTMLDivElement>("model-error");

function gpuBoxes(): HTMLInputElement[] {
  return Array.from(document.querySelectorAll<HTMLInputElement>("#gpu-list input[type=checkbox]"));
}

function selectedGpus(): string[] {
  const boxes = gpuBoxes();
  const gpus = boxes.filter((b) => b.checked).map((b) => b.value);
  return gpus.length > 0 ? gpus : boxes.length > 0 ? [boxes[0].value] : [];
}

/**
 * The GPU a one-GPU question (Recommend, Sweep, the heat map) asks about: its panel's choice among
 * the ticked GPUs, the first ticked unless another is chosen; never one silently picked.
 */
function questionGpu(selectId: string): string {
  const ticked = selectedGpus();
  const chosen = $<HTMLSelectElement>(selectId).value;
  return ticked.includes(chosen) ? chosen : ticked[0];
}

/** Each one-GPU question's choice lists the ticked GPUs; with one ticked there is nothing to choose. */
function refreshGpuChoices() {
  const ticked = selectedGpus();
  for (const id of GPU_CHOICES) {
    const sel = $<HTMLSelectElement>(id);
    const keep = sel.value;
    sel.replaceChildren(...ticked.map((g) => new Option(g, g)));
    sel.value = ticked.includes(keep) ? keep : (ticked[0] ?? "");
    sel.disabled = ticked.length <= 1;
    sel.title = ticked.length > 1
      ? `${ticked.length} GPUs are ticked: this question is asked on one, chosen here`
      : "the ticked GPU";
  }
}
const GPU_CHOICES = ["rec-gpu-select", "sweep-gpu", "hm-gpu"];

function setSelectedGpus(gpus: string[]) {
  const want = new Set(gpus);
  for (const b of gpuBoxes()) b.checked = want.has(b.value);
  refreshGpuChoices();
}

// ---- how the model runs: the knobs, the run, and the model they make ------------------------

const KNOBS: Array<[string, keyof ModelSpec, "int" | "enum" | "number"]> = [
  ["knob-seq", "seq_length", "int"],
  ["knob-mb", "micro_batch_size", "int"],
  ["knob-tp", "tensor_parallel", "int"],
  ["knob-pp", "pipeline_parallel", "int"],
  ["knob-cp", "context_parallel", "int"],
  ["knob-ep", "expert_parallel", "int"],
  ["knob-etp", "expert_tensor_parallel", "int"],
  ["knob-capacity", "moe_capacity_factor", "number"],
  ["knob-dp", "data_parallel", "int"],
  ["knob-dtype", "dtype", "enum"],
  ["knob-workload", "workload", "enum"],
  ["knob-attention", "attention", "enum"],
  ["knob-kv", "kv_cache_length", "int"],
];
// The recommendation's constraint controls (the CLI's --tp-options, --allowed-head-dims, ...).
const CONSTRAINT_FIELDS = ["rec-tp", "rec-head-dims", "rec-head-multiple", "rec-tolerance", "rec-keep-layers",
                           "rec-kv-divisible"];
const RUN_FIELDS = ["run-gpus", "run-gb", "run-zero", "run-recompute", "run-tpov", "run-interleave",
                    "run-no-ppov", "run-ogr", "run-z3p", "run-epov", "run-epdisp", "run-network", "run-sp",
                    "run-offload", "run-plan", "run-keep", "run-tokens", "run-fp8pg", "run-flops"];

function fieldValue(id: string): string {
  const e = $<HTMLInputElement | HTMLSelectElement>(id);
  return e instanceof HTMLInputElement && e.type === "checkbox" ? (e.checked ? "1" : "") : e.value.trim();
}

function setFieldValue(id: string, v: string) {
  const e = $<HTMLInputElement | HTMLSelectElement>(id);
  if (e instanceof HTMLInputElement && e.type === "checkbox") e.checked = v === "1";
  else e.value = v;
}

/** An error the page shows at the panel whose request made it. */
class PanelError extends Error {}

/** The model as requests send it: the chosen spec with the knobs that are set. */
function effectiveModel(): ModelSpec {
  const spec: ModelSpec = { ...requireModel() };
  for (const [id, field, kind] of KNOBS) {
    const v = fieldValue(id);
    if (v === "") continue;
    if (kind === "int") {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new PanelError(`${field}: a whole number ≥ 1, got "${v}"`);
      spec[field] = n;
    } else if (kind === "number") {
      const x = Number(v);
      if (!Number.isFinite(x) || x < 0) throw new PanelError(`${field}: a number ≥ 0, got "${v}"`);
      spec[field] = x;
    } else {
      spec[field] = v;
    }
  }
  return spec;
}

/** The training run Analyze adds, when a number of GPUs is set. */
function runConfig(): RunConfig | undefined {
  const gpus = fieldValue("run-gpus");
  if (gpus === "") return undefined;
  const run: RunConfig = { num_gpus: Number(gpus) };
  if (fieldValue("run-gb") !== "") run.global_batch = Number(fieldValue("run-gb"));
  if (fieldValue("run-zero") !== "") run.zero_stage = Number(fieldValue("run-zero"));
  if (fieldValue("run-recompute") !== "") run.recompute = fieldValue("run-recompute");
  if (fieldValue("run-tpov") !== "") run.tp_overlap = Number(fieldValue("run-tpov"));
  if (fieldValue("run-interleave") !== "") run.interleave = Number(fieldValue("run-interleave"));
  run.no_pp_overlap = fieldValue("run-no-ppov") === "1";
  run.overlap_grad_reduce = fieldValue("run-ogr") === "1";
  run.zero3_prefetch = fieldValue("run-z3p") === "1";
  run.ep_overlap = fieldValue("run-epov") === "1";
  if (fieldValue("run-network") !== "") run.network = fieldValue("run-network");
  if (fieldValue("run-epdisp") !== "") run.ep_dispatcher = fieldValue("run-epdisp");
  if (fieldValue("run-fp8pg") === "1") run.fp8_param_gather = true;
  run.sequence_parallel = fieldValue("run-sp") === "1";
  run.offload_activations = fieldValue("run-offload") === "1";
  run.plan = fieldValue("run-plan") === "1";
  if (fieldValue("run-keep") === "1") run.keep_degrees = true;
  if (fieldValue("run-tokens") !== "") {
    const tokens = Number(fieldValue("run-tokens"));
    if (!Number.isFinite(tokens) || tokens < 0) {
      throw new PanelError(`tokens to train: a number ≥ 0 (1.5e13 for 15T), got "${fieldValue("run-tokens")}"`);
    }
    run.train_tokens = tokens;
  }
  return run;
}

// ---- results that no longer match the model --------------------------------------------------

const STALE = ["analysis-stale", "rec-stale", "sweep-stale", "hm-stale"];
const shown = new Set<string>(); // the stale banners whose panels hold results

function markStale() {
  for (const id of STALE) if (shown.has(id)) $(id).hidden = false;
}

function fresh(id: string) {
  shown.add(id);
  $(id).hidden = true;
}

// ---- the view in the URL -----------------------------------------------------------------

const URL_FIELDS = [...KNOBS.map(([id]) => id), ...RUN_FIELDS, "mode-select", "gpu-budget", "sweep-dim",
                    "sweep-from", "sweep-to", "sweep-step", "sweep-metric", ...CONSTRAINT_FIELDS];

// The URL is written only once the page has read the view it was opened with.
let urlRead = false;

/** The view as URL parameters: a link to the page reproduces it. */
function saveUrl() {
  if (!urlRead) return;
  const q = new URLSearchParams();
  if (state.modelFile) q.set("model", state.modelFile);
  else if (state.model) q.set("spec", JSON.stringify(state.model));
  q.set("gpus", selectedGpus().join(","));
  if (varied().length > 0) q.set("vary", varied().join(","));
  for (const id of URL_FIELDS) {
    const v = fieldValue(id);
    if (v !== "") q.set(id, v);
  }
  history.replaceState(null, "", `#${q.toString()}`);
}

/** Applies the URL's view (after the models and GPUs are loaded); true when it held one. */
function restoreUrl(): boolean {
  const q = new URLSearchParams(location.hash.slice(1));
  if ([...q.keys()].length === 0) return false;
  const file = q.get("model");
  const spec = q.get("spec");
  const example = state.examples.find((m) => m.file === file);
  if (example) {
    $<HTMLSelectElement>("model-select").value = example.file;
    setModel(example.spec, example.file, example.hf_config_json ?? "");
  } else if (spec) {
    try {
      setModel(JSON.parse(spec) as ModelSpec, "");
    } catch {
      showError(modelError(), new Error("the link's model is not JSON"));
    }
  }
  if (q.get("gpus")) setSelectedGpus((q.get("gpus") ?? "").split(","));
  const vary = new Set((q.get("vary") ?? "").split(","));
  for (const b of document.querySelectorAll<HTMLInputElement>("#rec-vary input, #rec-release input")) b.checked = vary.has(b.value);
  for (const id of URL_FIELDS) {
    const v = q.get(id);
    if (v !== null) setFieldValue(id, v);
  }
  return true;
}


function mode(): string {
  return $<HTMLSelectElement>("mode-select").value;
}

/** The measuring budget as request fields: {} when empty (the server's default, 60 s). The server
 * enforces it as wall time and answers with what it measured by then, the rest predicted. */
function budget(): { max_gpu_seconds?: number } {
  const text = $<HTMLInputElement>("gpu-budget").value.trim();
  if (text === "") return {};
  const v = Number(text);
  if (!Number.isFinite(v) || v <= 0 || v > 3600) {
    throw new Error(`GPU budget: seconds in (0, 3600], got "${text}"`);
  }
  return { max_gpu_seconds: v };
}

/** A row's source badge, and how much of its step was measured when the budget reached part of
 * it ("PREDICTED 40% measured"), as the CLI prints it. */
function sourceCell(source: Source | undefined, measuredShare?: number): HTMLElement {
  const cell = badge(source);
  const share = measuredShare ?? 0;
  if (sourceLabel(source) === "PREDICTED" && share > 0) {
    cell.appendChild(node("span", ` ${Math.round(100 * share)}% measured`, "measured-share"));
  }
  return cell;
}

function requireModel(): ModelSpec {
  if (!state.model) throw new Error("choose a model first");
  return state.model;
}

function setModel(spec: ModelSpec, file: string, baseConfig = "") {
  state.model = spec;
  state.modelFile = file;
  state.baseConfig = baseConfig;
  modelError().hidden = true;
  markStale();
  $<HTMLTextAreaElement>("model-json").value = JSON.stringify(spec, null, 2);
  const h = int(spec.hidden_size);
  const a = int(spec.num_attention_heads);
  // What a config leaves unset (a Hugging Face config says nothing of the sequence or the batch)
  // is shown as the default the server takes, marked so: never s=0.
  const orDefault = (v: Int64, d: number) => (int(v) > 0 ? String(int(v)) : `${d} (default)`);
  $("model-summary").textContent =
    `${spec.name ?? "model"}: h=${h}, a=${a}, kv=${int(spec.num_kv_heads) || a}, ` +
    `L=${int(spec.num_layers)}, f=${int(spec.ffn_hidden_size) || "default"}, v=${int(spec.vocab_size)}, ` +
    `s=${orDefault(spec.seq_length, 2048)}, b=${orDefault(spec.micro_batch_size, 1)}, ` +
    `t=${orDefault(spec.tensor_parallel, 1)}`;
  defaultSweepRange();
  const hm = (id: string, v: number) => ($<HTMLInputElement>(id).value = String(v));
  hm("hm-h-from", Math.max(128, Math.round((h * 0.75) / 128) * 128));
  hm("hm-h-to", Math.round((h * 1.25) / 128) * 128);
  saveUrl();
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
    SWEEP_DIMENSION_SEQ: [int(spec.seq_length) || 2048, 256],  // a config says no sequence: the default
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
  const list = $("gpu-list");
  const kept = new Set(gpuBoxes().filter((b) => b.checked).map((b) => b.value));
  for (const l of Array.from(list.querySelectorAll("label"))) l.remove();
  const withWorker = new Set((d.workers ?? []).filter((w) => w.up).map((w) => w.device?.catalog_name));
  for (const g of d.catalog ?? []) {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = g.name;
    box.name = "gpu";
    const label = node("label");
    label.append(box, `${g.name}${withWorker.has(g.name) ? " (GPU worker)" : ""}`);
    list.appendChild(label);
  }
  // Keep what the user chose across refreshes; at first, the first worker's GPU.
  if (kept.size === 0) kept.add((d.workers ?? []).find((w) => w.up)?.device?.catalog_name ?? "h100-sxm");
  setSelectedGpus([...kept]);
  refreshGpuChoices();

  $("cache-line").textContent = d.has_cache
    ? `Result cache: ${int(d.cache_entries)} GEMM results held.`
    : "No measurement store configured (--store).";
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
    setModel(preferred.spec, preferred.file, preferred.hf_config_json ?? "");
  }
}

async function parsePasted() {
  try {
    const text = $<HTMLTextAreaElement>("model-json").value;
    const spec = await postJson<ModelSpec>("/v1/parse-model", text);
    // A pasted Hugging Face config is the base of the exports (its other fields are kept).
    let hf = false;
    try {
      const obj = JSON.parse(text) as Record<string, unknown>;
      hf = "model_type" in obj || "architectures" in obj;
    } catch {
      hf = false;
    }
    setModel(spec, "", hf ? text : "");
  } catch (err) {
    showError(modelError(), err);
  }
}

// ---- analyze ------------------------------------------------------------------------------

async function analyze() {
  const button = $<HTMLButtonElement>("analyze-button");
  const error = $("analysis-error");
  button.disabled = true;
  error.hidden = true;
  try {
    const model = effectiveModel();
    const run = runConfig();
    const gpus = selectedGpus();
    const results = await Promise.all(
      gpus.map((gpu) => {
        const flop_count = fieldValue("run-flops");
        return postJson<AnalyzeResponse>("/v1/analyze", run ? { model, gpu, run, flop_count } : { model, gpu, flop_count });
      }),
    );
    state.analyses = new Map(results.map((r) => [r.gpu, r]));
    $("analysis-panel").hidden = false;
    fresh("analysis-stale");
    $("analysis-assumed").textContent = results[0]?.assumed?.summary
      ? `assumes: ${results[0].assumed.summary}` : "";
    renderStepBars(results);
    renderAnswerTables(results);
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
    $("analysis-panel").hidden = false;
    showError(error, err);
  } finally {
    button.disabled = false;
  }
}

/**
 * The answer per GPU, per step (the run's, with the run's error band; or one rank's kernels, with
 * the run's MFU beside them at TP t > 1; decode's time per output token and bandwidth use), and
 * apart from it one rank's kernels per micro-batch, with the GEMMs' error band.
 */
function renderAnswerTables(results: AnalyzeResponse[]) {
  const decode = results.some((r) => (r.memory_bandwidth_utilization ?? 0) > 0);
  const tpRun = results.some((r) => r.tensor_parallel_run);
  const header = ["GPU", "what", "step time", "MFU", "tokens/s per GPU"];
  if (decode) header.push("TPOT", "MBU");
  if (tpRun) header.push("run MFU (with TP communication)");
  header.push("memory per GPU (estimate)", "source and error band");
  setTable(
    $<HTMLTableElement>("gpu-table"),
    header,
    results.map((r) => {
      const t = int(r.model?.tensor_parallel) || 1;
      const row: Cell[] = [
        r.gpu,
        r.step ? `the run on ${int(r.step.gpus)} GPUs, per step` : `one rank's kernels at TP ${t}, per step`,
        seconds(r.step_time_s),
        percent(r.mfu),
        fixed(r.tokens_per_second_per_gpu, 0),
      ];
      if (decode) {
        const mbu = r.memory_bandwidth_utilization ?? 0;
        row.push(mbu > 0 ? seconds(r.step_time_s) : "–", mbu > 0 ? percent(mbu) : "–");
      }
      if (tpRun) {
        const b = r.tensor_parallel_run;
        row.push(b ? `${percent(b.mfu)} on ${int(b.gpus)} GPUs at TP ${int(b.tensor_parallel)}` : "–");
      }
      row.push(memoryText(r.memory));
      row.push(r.step
        ? badge("SOURCE_PREDICTED", r.step.error_band_p10, r.step.error_band_p90)
        : badge(r.provenance?.source, r.provenance?.error_band_p10, r.provenance?.error_band_p90));
      return row;
    }),
  );
  setTable(
    $<HTMLTableElement>("kernel-table"),
    ["GPU", "kernels per micro-batch", "GEMMs", "elementwise", "kernel MFU", "tokens/s per GPU",
     "GEMMs' source and error band"],
    results.map((r) => [
      r.gpu,
      seconds(r.kernels?.step_time_s ?? r.step_time_s),
      seconds(r.gemm_time_s),
      seconds(r.elementwise_time_s),
      percent(r.kernels?.mfu ?? r.mfu),
      fixed(r.kernels?.tokens_per_second_per_gpu ?? r.tokens_per_second_per_gpu, 0),
      badge(r.provenance?.source, r.provenance?.error_band_p10, r.provenance?.error_band_p90),
    ]),
  );
}

// The step, as a bar per GPU: with a run, its components under parallelism (compute, the
// tensor-, expert- and context-parallel communication, activation offload, the pipeline bubble and sends,
// the exposed data-parallel reduction, the optimizer); without one, the GEMMs and the rest
// (norms, activations, softmax, the loss).
const STEP_PARTS: Array<[keyof StepBreakdown, string, string]> = [
  ["compute_s", "compute", "#3b528b"],
  ["recompute_s", "recomputation", "#5e7bbf"],
  ["tp_comm_s", "TP communication", "#e08e0b"],
  ["ep_comm_s", "EP all-to-all", "#ff7043"],
  ["cp_comm_s", "CP communication", "#f4c542"],
  ["offload_s", "activation offload", "#00838f"],
  ["pp_bubble_s", "pipeline bubble", "#c62828"],
  ["pp_comm_s", "pipeline sends", "#ef9a9a"],
  ["dp_comm_s", "DP communication", "#8e24aa"],
  ["optimizer_s", "optimizer", "#2e7d32"],
];

/** The layout a run's figures are for (as given, or as "plan the layout" chose it), with its memory. */
function layoutText(b: StepBreakdown): string {
  const recompute = b.recompute && b.recompute !== "RECOMPUTE_NONE" ? enumLabel(b.recompute, "RECOMPUTE") : "no";
  const mem = b.memory?.total_bytes ? `${(Number(b.memory.total_bytes) / 2 ** 30).toFixed(1)} GiB per GPU` : "";
  return [b.sequence_parallel ? "sequence parallel" : "no sequence parallelism", `${recompute} recomputation`,
          `ZeRO ${b.zero_stage ?? 0}`, b.offload_activations ? "activations offloaded" : "",
          Number(b.interleave ?? 1) > 1 ? `${b.interleave} interleaved stages per rank` : "",
          `micro-batch ${Number(b.micro_batch_size ?? 1) || 1}`,
          mem ? `${mem}${b.memory?.fits ? "" : " (does not fit)"}` : ""]
    .filter((x) => x).join(", ");
}

function renderStepBars(results: AnalyzeResponse[]) {
  const box = $("step-bars");
  box.replaceChildren();
  for (const r of results) {
    const parts: Array<[string, number, string]> = r.step
      ? STEP_PARTS.map(([k, label, color]) => [label, Number(r.step?.[k] ?? 0), color])
      : [["GEMMs", r.gemm_time_s ?? 0, "#3b528b"], ["other (elementwise)", r.elementwise_time_s ?? 0, "#9aa3b5"]];
    const total = parts.reduce((a, [, v]) => a + v, 0);
    const title = r.step
      ? `${r.gpu}: ${seconds(r.step.step_time_s)} per step on ${int(r.step.gpus)} GPUs ` +
        `(t=${int(r.step.tensor_parallel)} p=${int(r.step.pipeline_parallel)} c=${int(r.step.context_parallel ?? 1)} ` +
        `d=${int(r.step.data_parallel)}${Number(r.step.expert_parallel ?? 1) > 1 ? ` e=${int(r.step.expert_parallel)}` : ""}), MFU ${percent(r.step.mfu)} ` +
        `(${(r.step.tflops_per_gpu ?? 0).toFixed(0)} TFLOP/s per GPU, attention counted ${r.flop_count || "full"}); ` +
        (r.step.error_band_runs
          ? `PREDICTED ${band(r.step.error_band_p10, r.step.error_band_p90)} (p10..p90 of ${r.step.error_band_runs} ` +
            `published ${r.step.error_band_kind} runs); `
          : "") +
        `layout: ${layoutText(r.step)}; ` +
        `one rank's kernels ${seconds(r.kernels?.step_time_s)} per micro-batch`
      : `${r.gpu}: ${seconds(r.step_time_s)} per step on one GPU (set the run's GPUs for parallelism)`;
    box.appendChild(node("div", title, "note"));
    const bar = node("div", undefined, "step-bar");
    bar.dataset.gpu = r.gpu;
    const legend = node("div", undefined, "step-legend");
    for (const [label, v, color] of parts) {
      if (!(v > 0) || total <= 0) continue;
      const seg = node("span");
      seg.style.width = `${(100 * v) / total}%`;
      seg.style.background = color;
      seg.title = `${label}: ${seconds(v)} (${percent(v / total)})`;
      seg.dataset.part = label;
      bar.appendChild(seg);
      const item = node("span");
      const sw = node("i");
      sw.style.background = color;
      item.append(sw, `${label} ${percent(v / total)}`);
      legend.appendChild(item);
    }
    box.append(bar, legend);
    if (r.step) box.append(...runAnswerNodes(r));
  }
}

/** "TP 8 × PP 4 × DP 16" (CP and EP when above 1). */
function degreesText(b: StepBreakdown): string {
  const cp = Number(b.context_parallel ?? 1) > 1 ? ` × CP ${int(b.context_parallel)}` : "";
  const ep = Number(b.expert_parallel ?? 1) > 1 ? `, EP ${int(b.expert_parallel)}` : "";
  return `TP ${int(b.tensor_parallel)} × PP ${int(b.pipeline_parallel)}${cp} × DP ${int(b.data_parallel)}${ep}`;
}

/** Under a run's bar: that a run as given which does not fit is not an answer (and the plan that
 *  fits), the time to train, and a layout search's ranked layouts with why each loses. */
function runAnswerNodes(r: AnalyzeResponse): HTMLElement[] {
  const out: HTMLElement[] = [];
  const step = r.step as StepBreakdown;
  const plan = r.layouts?.[0]?.step;
  // Protobuf's JSON leaves false out: a step whose memory does not fit has no `fits`.
  const fits = (b?: StepBreakdown) => b?.memory?.fits === true;
  if (!fits(step)) {
    const text = plan && fits(plan)
      ? `does NOT fit in memory as given: not an answer. The plan that fits on these GPUs: ` +
        `${degreesText(plan)}, ${layoutText(plan)}: ${seconds(plan.step_time_s)} per step, MFU ${percent(plan.mfu)}`
      : "does NOT fit in memory as given, and no layout of these GPUs does: more GPUs are needed";
    const warn = node("div", text, "note warn");
    warn.dataset.role = "no-fit";
    out.push(warn);
  }
  const trained = fits(plan) && !fits(step) ? (plan as StepBreakdown) : step;
  if (trained.time_to_train_s) {
    const t = node("div",
      `time to train ${Number(trained.train_tokens).toExponential(2)} tokens: ` +
      `${(trained.time_to_train_s / 86400).toFixed(1)} days, ${Math.round(trained.gpu_hours ?? 0).toLocaleString()} ` +
      `GPU-hours (PREDICTED as the step)`, "note");
    t.dataset.role = "time-to-train";
    out.push(t);
  }
  if (r.layouts?.length) {
    out.push(node("div", `layouts searched: ${int(r.layouts_examined)} degree combinations, ` +
      `${int(r.layouts_fit)} fit in memory; the best:`, "note"));
    const table = node("table", undefined, "layouts");
    const head = node("tr");
    for (const h of ["rank", "layout", "micro-batch, recomputation, ZeRO", "step", "MFU", "why not #1"]) {
      head.appendChild(node("th", h));
    }
    table.appendChild(head);
    for (const o of r.layouts) {
      const b = o.step ?? {};
      const row = node("tr");
      for (const c of [String(o.rank ?? ""), degreesText(b), layoutText(b), seconds(b.step_time_s),
                       percent(b.mfu), o.why || "the answer"]) {
        row.appendChild(node("td", c));
      }
      table.appendChild(row);
    }
    table.id = `layouts-${r.gpu}`;
    out.push(table);
  }
  return out;
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

function renderRoofline(r: AnalyzeResponse) {
  const canvas = $<HTMLCanvasElement>("roofline");
  const gpu = state.devices?.catalog?.find((g) => g.name === r.gpu);
  const dtype = r.gemms?.[0]?.gemm.dtype;
  const peak = peakFor(dtype, gpu?.peak_bf16_tflops ?? 0);
  state.roofline = drawRoofline(canvas, r.gemms ?? [], peak, gpu?.memory_bandwidth_gbps ?? 0);
  canvas.dataset.points = String(state.roofline.length);
  canvas.dataset.gpu = r.gpu;
  $("roofline-info").textContent =
    `${r.gpu}: the roof is ${fixed(peak, 0)} TFLOP/s (the ${enumLabel(dtype, "DTYPE")} dense peak) and ` +
    `${fixed(gpu?.memory_bandwidth_gbps, 0)} GB/s; ${state.roofline.length} GEMMs (fused attention left out). Hover a dot.`;
}

function rooflineHover(ev: MouseEvent) {
  const canvas = ev.currentTarget as HTMLCanvasElement;
  const rect = canvas.getBoundingClientRect();
  const p = nearest(state.roofline, ((ev.clientX - rect.left) * canvas.width) / rect.width,
                    ((ev.clientY - rect.top) * canvas.height) / rect.height);
  if (p) $("roofline-info").textContent = `${p.name}: ${fixed(p.tflops, 0)} TFLOP/s at ${fixed(p.intensity, 1)} FLOP/byte`;
}

function renderGemms() {
  const r = state.analyses.get($<HTMLSelectElement>("gemm-gpu").value);
  if (!r) return;
  renderRoofline(r);

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

// A candidate taken away: its model as a Hugging Face config.json, or as a wavecrest spec (the
// server converts it, as `wavecrest recommend --export N` does).
function exportButtons(c: Candidate, error: HTMLElement): HTMLElement {
  const box = node("span");
  const name = c.baseline ? "baseline" : `candidate-${c.rank ?? ""}`;
  for (const [format, label, file] of [
    ["hf", "config.json", `${name}-config.json`],
    ["wavecrest", "spec", `${name}-wavecrest.json`],
  ] as const) {
    const b = node("button", label) as HTMLButtonElement;
    b.type = "button";
    b.dataset.export = format;
    b.addEventListener("click", () => {
      void (async () => {
        try {
          const text = await exportModel(c.model, format, state.baseConfig);
          const a = document.createElement("a");
          a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
          a.download = file;
          a.click();
          URL.revokeObjectURL(a.href);
        } catch (err) {
          showError(error, err);
        }
      })();
    });
    box.appendChild(b);
  }
  return box;
}

/** The why column: each reason a line (they wrap inside the column). */
function candidateChanges(c: Candidate): HTMLElement {
  if (c.baseline) return node("span", "the model as given");
  const list = node("ul");
  for (const r of c.reasons ?? []) list.appendChild(node("li", r));
  return list;
}

// ---- the recommendation's constraints: the same knobs as the CLI's --vary, --tp-options, ...


/** The tensor-parallel degrees a row meets, marked when it misses some of those asked. */
function legalCell(c: Candidate, r: RecommendResponse): HTMLElement {
  const legal = (c.tensor_parallel_legal ?? []).map(int);
  const asked = (r.tensor_parallel_degrees ?? []).map(int);
  const cell = node("span", legal.length > 0 ? legal.join(", ") : "–", "tp-legal");
  if (legal.length > 0 && legal.length < asked.length) {
    cell.classList.add("short");
    cell.title = `not legal for ${asked.filter((t) => !legal.includes(t)).join(", ")}`;
  }
  return cell;
}

function intList(id: string, label: string): number[] {
  const text = fieldValue(id);
  if (text === "") return [];
  return text.split(",").map((t) => {
    const n = Number(t.trim());
    if (!Number.isInteger(n) || n < 1) throw new PanelError(`${label}: whole numbers ≥ 1 separated by commas, got "${text}"`);
    return n;
  });
}

function varied(): string[] {
  return Array.from(document.querySelectorAll<HTMLInputElement>("#rec-vary input:checked, #rec-release input:checked")).map(
    (b) => b.value,
  );
}

/** The request fields the constraint controls set ({} for what is left as the model gives it). */
function constraints(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const vary = varied();
  if (vary.length > 0) out.vary = vary;
  const tps = intList("rec-tp", "TP degrees");
  if (tps.length > 0) out.tensor_parallel_options = tps;
  const dims = intList("rec-head-dims", "head dims");
  if (dims.some((d) => d < 8 || d > 1024)) throw new PanelError("head dims: each in [8, 1024]");
  if (dims.length > 0) out.allowed_head_dims = dims;
  const multiple = fieldValue("rec-head-multiple");
  if (multiple !== "") {
    const m = Number(multiple);
    if (!Number.isInteger(m) || m < 1 || m > 256) throw new PanelError(`head-dim multiple: a whole number in [1, 256], got "${multiple}"`);
    out.head_dim_multiple = m;
  }
  const tolerance = fieldValue("rec-tolerance");
  if (tolerance !== "") {
    const t = Number(tolerance);
    if (!Number.isFinite(t) || t <= 0 || t > 50) throw new PanelError(`parameter tolerance: a percentage in (0, 50], got "${tolerance}"`);
    out.param_tolerance = t / 100;
  }
  if (fieldValue("rec-keep-layers") === "1") {
    if (vary.includes("KNOB_LAYERS")) throw new PanelError("keep layers: conflicts with layers in may vary");
    out.keep_layers = true;
  }
  if (fieldValue("rec-kv-divisible") === "1") out.kv_heads_divisible_by_tp = true;
  return out;
}

// The control that loosens a refusal's rule, beside it.
const LOOSENS: Record<string, string> = {
  heads_divisible_by_tp: "rec-tp",
  kv_heads_divisible_by_tp: "rec-tp",
  hidden_divisible_by_tp: "rec-tp",
  ffn_divisible_by_tp: "rec-tp",
  head_dim_range: "rec-head-dims",
  head_dim_multiple: "rec-head-multiple",
  param_tolerance: "rec-tolerance",
  layers_divisible_by_pp: "knob-pp",
  head_dim_floor: "rec-release",
  kv_group: "rec-release",
  kv_cache: "rec-release",
  total_params: "rec-release",
};

function loosenButton(rule: string): HTMLElement | undefined {
  const id = LOOSENS[rule];
  if (!id) return undefined;
  const b = node("button", "loosen", "loosen") as HTMLButtonElement;
  b.type = "button";
  b.dataset.loosens = id;
  b.addEventListener("click", () => {
    ($("rec-constraints") as HTMLDetailsElement).open = true;
    const control = $<HTMLInputElement>(id);
    control.scrollIntoView({ block: "center" });
    control.focus();
  });
  return b;
}

/** The hint that the table scrolls, when it is wider than its panel. */
function updateScrollHint() {
  const box = $("rec-scroll");
  $("rec-scroll-hint").hidden = box.scrollWidth <= box.clientWidth + 1;
}

async function recommend() {
  const button = $<HTMLButtonElement>("recommend-button");
  const cancel = $<HTMLButtonElement>("rec-cancel");
  const bar = $<HTMLProgressElement>("rec-progress");
  const status = $("rec-status");
  const error = $("rec-error");
  button.disabled = true;
  error.hidden = true;
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
    const gpu = questionGpu("rec-gpu-select");
    $("rec-gpu").textContent = `on ${gpu}`;
    const r = await postStream<RecommendResponse>(
      "/v1/recommend",
      { model: effectiveModel(), gpu, mode: mode(), top: 10, ...budget(), ...constraints() },
      progressReporter(bar, status),
      abort.signal,
    );
    bar.value = bar.max;
    fresh("rec-stale");
    status.textContent =
      `${int(r.candidates_considered)} candidates scored of ${int(r.shapes_examined)} shapes ` +
      `examined; GEMMs measured ${int(r.gemms_measured)}, ` +
      `cached ${int(r.gemms_cached)}, predicted ${int(r.gemms_predicted)}`;
    // The verdict first: keep the shape, or change it to #1.
    if (r.verdict && r.verdict !== "VERDICT_UNSPECIFIED") {
      const [label, cls] =
        r.verdict === "VERDICT_KEEP" ? ["KEEP", "verdict-keep"]
        : r.verdict === "VERDICT_NO_CANDIDATES" ? ["NO CANDIDATES", "verdict-none"]
        : ["CHANGE", "verdict-change"];
      verdict.replaceChildren(node("strong", label), ` ${r.verdict_reason ?? ""}`);
      verdict.className = `verdict ${cls}`;
      verdict.hidden = false;
    }
    $("rec-basis").textContent = r.speedup_basis ? `speed-up compares ${r.speedup_basis}` : "";
    $("rec-assumed").textContent = r.assumed?.summary
      ? `assumes: ${r.assumed.summary} (each row one rank's kernels)` : "";
    const cands = r.candidates ?? [];
    // Decode rows carry the time per output token and the bandwidth they use.
    const decode = cands.some((c) => (c.time_per_output_token_s ?? 0) > 0);
    const header = ["#", "h", "a", "kv", "L", "f", "v", "params", "Δ params", "speed-up", "MFU", "tokens/s/GPU"];
    if (decode) header.push("TPOT", "MBU");
    header.push("TP legal", "memory/GPU", "source", "export", "why");
    setTable(
      $<HTMLTableElement>("rec-table"),
      header,
      cands.map((c) => {
        const row: Cell[] = [
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
        ];
        if (decode) row.push(seconds(c.time_per_output_token_s), percent(c.memory_bandwidth_utilization));
        row.push(legalCell(c, r), memoryText(c.memory), sourceCell(c.source, c.measured_share),
                 exportButtons(c, error), candidateChanges(c));
        return row;
      }),
      (i) => (cands[i].baseline ? "baseline" : ""),
    );
    for (const row of $<HTMLTableElement>("rec-table").tBodies[0]?.rows ?? []) row.lastElementChild?.classList.add("why");
    updateScrollHint();
    const notes = $("rec-notes");
    const tps = (r.tensor_parallel_degrees ?? []).map((t) => String(int(t)));
    if (tps.length > 0) {
      // The claim as the rows bear it out: which rows meet fewer of the degrees than asked.
      const from = r.tensor_parallel_source ? ` (${r.tensor_parallel_source})` : "";
      const short = cands.filter((c) => (c.tensor_parallel_legal ?? []).length < tps.length &&
                                        (c.tensor_parallel_legal ?? []).length > 0);
      const li = node("li", short.length === 0
        ? `every row is legal for tensor parallelism ${tps.join(", ")}${from}`
        : `legal for tensor parallelism ${tps.join(", ")}${from}, except ` +
          short.map((c) => `${c.baseline ? "the baseline" : `#${c.rank}`} (only ${(c.tensor_parallel_legal ?? []).map(int).join(", ")})`)
            .join(", ") + ": the TP legal column");
      li.id = "rec-legal";
      notes.appendChild(li);
    }
    const held = (r.held ?? []).filter((h) => !h.released).map((h) => `${h.name} (${h.description ?? ""})`);
    const released = (r.held ?? []).filter((h) => h.released).map((h) => `${h.name} (${h.description ?? ""})`);
    if (held.length > 0) {
      const li = node("li", `held (the same model): ${held.join("; ")}`);
      li.id = "rec-held";
      notes.appendChild(li);
    }
    if (released.length > 0) {
      const li = node("li", `released: ${released.join("; ")}`);
      li.id = "rec-released";
      notes.appendChild(li);
    }
    for (const x of r.refusals ?? []) {
      const li = node("li", `refused ${int(x.count)} ${x.unit ?? ""}: ${x.description ?? ""} (loosen with ${x.loosen_with ?? ""})`);
      li.dataset.rule = x.rule ?? "";
      const b = loosenButton(x.rule ?? "");
      if (b) li.appendChild(b);
      notes.appendChild(li);
    }
    for (const n of r.notes ?? []) notes.appendChild(node("li", n));
  } catch (err) {
    if (abort.signal.aborted) status.textContent = "cancelled";
    else {
      status.textContent = "failed";
      showError(error, err);
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

// The model's own value of the swept dimension (the marker on the plot).
function sweepBaseline(): number | undefined {
  let spec: ModelSpec;
  try {
    spec = effectiveModel();
  } catch {
    return undefined;
  }
  const values: Record<string, number> = {
    SWEEP_DIMENSION_HIDDEN: int(spec.hidden_size),
    SWEEP_DIMENSION_HEADS: int(spec.num_attention_heads),
    SWEEP_DIMENSION_KV_HEADS: int(spec.num_kv_heads) || int(spec.num_attention_heads),
    SWEEP_DIMENSION_FFN: int(spec.ffn_hidden_size),
    SWEEP_DIMENSION_VOCAB: int(spec.vocab_size),
    SWEEP_DIMENSION_SEQ: int(spec.seq_length) || 2048,
    SWEEP_DIMENSION_MICRO_BATCH: int(spec.micro_batch_size) || 1,
    SWEEP_DIMENSION_TENSOR_PARALLEL: int(spec.tensor_parallel) || 1,
  };
  const v = values[$<HTMLSelectElement>("sweep-dim").value];
  return v > 0 ? v : undefined;
}

function renderSweep() {
  const target = $("sweep-plot");
  state.sweepPlot?.destroy();
  target.replaceChildren();
  if (state.sweepPoints.length === 0) return;
  const dim = $<HTMLSelectElement>("sweep-dim");
  const label = dim.selectedOptions[0]?.textContent ?? "value";
  $("sweep-title").textContent = `${METRIC_LABELS[sweepMetric()]} against ${label} on ${state.sweepGpu}`;
  const baseline = sweepBaseline();
  state.sweepPlot = drawSweep(target, state.sweepPoints, sweepMetric(), label, Math.max(320, target.clientWidth - 10), baseline);
  target.dataset.baseline = baseline === undefined ? "" : String(baseline);
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
  const error = $("sweep-error");
  button.disabled = true;
  error.hidden = true;
  try {
    const req: SweepRequest = {
      model: effectiveModel(),
      gpu: questionGpu("sweep-gpu"),
      vary: $<HTMLSelectElement>("sweep-dim").value,
      from: numberInput("sweep-from", "from"),
      to: numberInput("sweep-to", "to"),
      step: numberInput("sweep-step", "step"),
      mode: mode(),
      ...budget(),
    };
    const r = await postStream<SweepResponse>("/v1/sweep", req, progressReporter(bar, status));
    state.sweepPoints = r.points ?? [];
    state.sweepGpu = r.gpu ?? req.gpu;
    fresh("sweep-stale");
    renderSweep();
    const valid = state.sweepPoints.filter((p) => p.valid);
    const hold = valid.filter((p) => (p.rules_broken ?? []).length === 0);
    const sources = new Set(valid.map((p) => sourceLabel(p.source)));
    $("sweep-note").textContent =
      `${state.sweepPoints.length} points on ${r.gpu}: ${valid.length} legal, ${hold.length} keep every paper rule ` +
      `(markers); ${[...sources].join("/") || "–"}; shaded: the prediction's p10–p90 error band.` +
      (r.assumed?.summary ? ` Assumes: ${r.assumed.summary} (the swept dimension as each point says).` : "");
    status.textContent = "done";
  } catch (err) {
    status.textContent = "failed";
    showError(error, err);
  } finally {
    button.disabled = false;
  }
}

// ---- heat map -----------------------------------------------------------------------------

async function heatmap() {
  const button = $<HTMLButtonElement>("heatmap-button");
  const bar = $<HTMLProgressElement>("hm-progress");
  const status = $("hm-status");
  const error = $("hm-error");
  button.disabled = true;
  error.hidden = true;
  try {
    const model = effectiveModel();
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
    const gpu = questionGpu("hm-gpu");
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
    fresh("hm-stale");
  } catch (err) {
    status.textContent = "failed";
    showError(error, err);
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
    if (m) setModel(m.spec, m.file, m.hf_config_json ?? "");
  });
  // How the model runs changes what every result means: they go stale, and the URL follows.
  for (const id of [...KNOBS.map(([k]) => k), ...RUN_FIELDS]) {
    $(id).addEventListener("change", () => {
      markStale();
      saveUrl();
    });
  }
  for (const id of ["gpu-list", "mode-select", "gpu-budget", "sweep-from", "sweep-to", "sweep-step",
                    "rec-vary", ...CONSTRAINT_FIELDS]) {
    $(id).addEventListener("change", saveUrl);
  }
  $("gpu-list").addEventListener("change", refreshGpuChoices);
  window.addEventListener("resize", updateScrollHint);
  $("roofline").addEventListener("mousemove", rooflineHover);
  $("parse-button").addEventListener("click", () => void parsePasted());
  $("analyze-button").addEventListener("click", () => void analyze());
  $("recommend-button").addEventListener("click", () => void recommend());
  $("rec-cancel").addEventListener("click", () => state.recommendAbort?.abort());
  $("gemm-gpu").addEventListener("change", renderGemms);
  $("sweep-dim").addEventListener("change", () => {
    defaultSweepRange();
    saveUrl();
  });
  $("sweep-metric").addEventListener("change", () => {
    renderSweep();
    saveUrl();
  });
  $("sweep-button").addEventListener("click", () => void sweep());
  $("heatmap-button").addEventListener("click", () => void heatmap());
  $("heatmap").addEventListener("mousemove", heatmapHover);
  await refreshHealth();
  try {
    await Promise.all([loadDevices(), loadModels()]);
    // A link reproduces its view: the model, GPUs, knobs and sweep it names.
    const fromUrl = restoreUrl();
    urlRead = true;
    saveUrl();
    document.body.dataset.fromUrl = String(fromUrl);
  } catch (err) {
    showError(modelError(), err);
  }
  setInterval(() => void refreshHealth(), 10000);
  setInterval(() => void loadDevices().catch(() => undefined), 30000);
  document.body.dataset.ready = "true";
}

void init();
