// The wavecrest team dashboard: pick a model and GPUs, see its GEMMs, stream recommendations,
// and draw the paper's pictures (sweeps and the heads × hidden heat map) through the server's
// HTTP/JSON gateway. Every figure carries its source badge (MEASURED / CACHED / PREDICTED).
// Each panel is a module of panels/; this file applies a link's view and wires the page's events.
import { type ModelSpec } from "./api";
import { $, showError } from "./dom";
import { CONSTRAINT_FIELDS, KNOBS, RUN_FIELDS, setFieldValue } from "./form";
import { markStale, modelError, refreshGpuChoices, setSelectedGpus, state } from "./state";
import { saveUrl, startSavingUrl, URL_FIELDS } from "./url";
import { analyze } from "./panels/analysis";
import { refreshHealth, loadDevices } from "./panels/devices";
import { renderGemms, rooflineHover } from "./panels/gemms";
import { heatmap, heatmapHover } from "./panels/heatmap";
import { loadModels, parsePasted, setModel } from "./panels/model";
import { recommend, updateScrollHint } from "./panels/recommend";
import { defaultSweepRange, renderSweep, sweep } from "./panels/sweep";

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
    startSavingUrl();
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