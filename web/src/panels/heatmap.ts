// The heat map panel: TFLOP/s over heads × hidden on one GPU, a sweep of the heads per hidden size,
// drawn row by row; hover a cell for its figures.
import { int, streamSweep, type ModelSpec } from "../api";
import { band, fixed, percent, range, sourceLabel } from "../format";
import { $, showError } from "../dom";
import { effectiveModel, mode, numberInput } from "../form";
import { cellAt, drawHeatmap, type HeatmapData } from "../heatmap";
import { fresh, questionGpu, state } from "../state";

export async function heatmap() {
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
      const resp = await streamSweep(
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

export function heatmapHover(ev: MouseEvent) {
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
