// The sweep panel: one dimension of the model swept on one GPU, plotted against the metric chosen,
// the model's own value marked.
import { int, streamSweep, type ModelSpec, type SweepRequest } from "../api";
import { sourceLabel } from "../format";
import { $, progressReporter, showError } from "../dom";
import { budget, effectiveModel, mode, numberInput } from "../form";
import { drawSweep, METRIC_LABELS, type Metric } from "../plot";
import { fresh, questionGpu, state } from "../state";

export function defaultSweepRange() {
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

export function renderSweep() {
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

export async function sweep() {
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
    const r = await streamSweep(req, progressReporter(bar, status));
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
