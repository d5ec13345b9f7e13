// What the page holds between requests (the models, the chosen model, the answers drawn), the GPUs
// ticked and the one each one-GPU question asks about, and the banners on results that no longer
// match the model.
import {
  type AnalyzeResponse,
  type DevicesResponse,
  type ExampleModel,
  type ModelSpec,
  type SweepPoint,
} from "./api";
import { $ } from "./dom";
import { type HeatmapData } from "./heatmap";
import { type SweepPlot } from "./plot";
import { type RooflinePoint } from "./roofline";

export const state: {
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

export const modelError = () => $<HTMLDivElement>("model-error");

export function gpuBoxes(): HTMLInputElement[] {
  return Array.from(document.querySelectorAll<HTMLInputElement>("#gpu-list input[type=checkbox]"));
}

export function selectedGpus(): string[] {
  const boxes = gpuBoxes();
  const gpus = boxes.filter((b) => b.checked).map((b) => b.value);
  return gpus.length > 0 ? gpus : boxes.length > 0 ? [boxes[0].value] : [];
}

/**
 * The GPU a one-GPU question (Recommend, Sweep, the heat map) asks about: its panel's choice among
 * the ticked GPUs, the first ticked unless another is chosen; never one silently picked.
 */
export function questionGpu(selectId: string): string {
  const ticked = selectedGpus();
  const chosen = $<HTMLSelectElement>(selectId).value;
  return ticked.includes(chosen) ? chosen : ticked[0];
}

/** Each one-GPU question's choice lists the ticked GPUs; with one ticked there is nothing to choose. */
export function refreshGpuChoices() {
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

export function setSelectedGpus(gpus: string[]) {
  const want = new Set(gpus);
  for (const b of gpuBoxes()) b.checked = want.has(b.value);
  refreshGpuChoices();
}

// ---- results that no longer match the model --------------------------------------------------

const STALE = ["analysis-stale", "rec-stale", "sweep-stale", "hm-stale"];
const shown = new Set<string>(); // the stale banners whose panels hold results

export function markStale() {
  for (const id of STALE) if (shown.has(id)) $(id).hidden = false;
}

export function fresh(id: string) {
  shown.add(id);
  $(id).hidden = true;
}
