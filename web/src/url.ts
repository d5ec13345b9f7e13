// The view in the URL: the page writes its model, GPUs and fields there, so a link reproduces it
// (main.ts applies a link's view once the models and GPUs are loaded).
import { fieldValue, CONSTRAINT_FIELDS, KNOBS, RUN_FIELDS, varied } from "./form";
import { selectedGpus, state } from "./state";

export const URL_FIELDS = [...KNOBS.map(([id]) => id), ...RUN_FIELDS, "mode-select", "gpu-budget", "sweep-dim",
                           "sweep-from", "sweep-to", "sweep-step", "sweep-metric", ...CONSTRAINT_FIELDS];

// The URL is written only once the page has read the view it was opened with.
let urlRead = false;

/** From now on the view is written to the URL. */
export function startSavingUrl() {
  urlRead = true;
}

/** The view as URL parameters: a link to the page reproduces it. */
export function saveUrl() {
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

