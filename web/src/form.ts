// The page's inputs as request fields: the knobs and the run that make the model as requests send
// it, the mode and the measuring budget, and the lists the constraint controls hold.
import { type ModelSpec, type RunConfig } from "./api";
import { $ } from "./dom";
import { state } from "./state";

// ---- how the model runs: the knobs, the run, and the model they make ------------------------

export const KNOBS: Array<[string, keyof ModelSpec, "int" | "enum" | "number"]> = [
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
export const CONSTRAINT_FIELDS = ["rec-tp", "rec-head-dims", "rec-head-multiple", "rec-tolerance", "rec-keep-layers",
                                  "rec-kv-divisible"];
export const RUN_FIELDS = ["run-gpus", "run-gb", "run-zero", "run-recompute", "run-tpov", "run-sustain", "run-interleave",
                           "run-no-ppov", "run-ogr", "run-z3p", "run-eager", "run-ropeuf", "run-moeuf", "run-rcmoe", "run-rcmla", "run-hsdp", "run-mtp", "run-epov", "run-epdisp", "run-fp8recipe", "run-loss", "run-cpring", "run-network", "run-sp",
                           "run-offload", "run-plan", "run-keep", "run-tokens", "run-fp8pg", "run-flops"];

export function fieldValue(id: string): string {
  const e = $<HTMLInputElement | HTMLSelectElement>(id);
  return e instanceof HTMLInputElement && e.type === "checkbox" ? (e.checked ? "1" : "") : e.value.trim();
}

export function setFieldValue(id: string, v: string) {
  const e = $<HTMLInputElement | HTMLSelectElement>(id);
  if (e instanceof HTMLInputElement && e.type === "checkbox") e.checked = v === "1";
  else e.value = v;
}

/** An error the page shows at the panel whose request made it. */
export class PanelError extends Error {}

/** The model as requests send it: the chosen spec with the knobs that are set. */
export function effectiveModel(): ModelSpec {
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
export function runConfig(): RunConfig | undefined {
  const gpus = fieldValue("run-gpus");
  if (gpus === "") return undefined;
  const run: RunConfig = { num_gpus: Number(gpus) };
  if (fieldValue("run-gb") !== "") run.global_batch = Number(fieldValue("run-gb"));
  if (fieldValue("run-zero") !== "") run.zero_stage = Number(fieldValue("run-zero"));
  if (fieldValue("run-recompute") !== "") run.recompute = fieldValue("run-recompute");
  if (fieldValue("run-tpov") !== "") run.tp_overlap = Number(fieldValue("run-tpov"));
  if (fieldValue("run-sustain") !== "") run.sustained_gemm_stretch = Number(fieldValue("run-sustain"));
  if (fieldValue("run-interleave") !== "") run.interleave = Number(fieldValue("run-interleave"));
  run.no_pp_overlap = fieldValue("run-no-ppov") === "1";
  run.overlap_grad_reduce = fieldValue("run-ogr") === "1";
  run.zero3_prefetch = fieldValue("run-z3p") === "1";
  run.eager = fieldValue("run-eager") === "1";
  if (fieldValue("run-ropeuf") === "1") run.rope_unfused = true;
  if (fieldValue("run-moeuf") === "1") run.moe_unfused_ops = true;
  if (fieldValue("run-rcmoe") === "1") run.recompute_moe = true;
  if (fieldValue("run-rcmla") === "1") run.recompute_mla_up_proj = true;
  if (fieldValue("run-hsdp") !== "") run.fsdp_shard = Number(fieldValue("run-hsdp"));
  if (fieldValue("run-mtp") !== "") run.mtp_layers = Number(fieldValue("run-mtp"));
  run.ep_overlap = fieldValue("run-epov") === "1";
  if (fieldValue("run-network") !== "") run.network = fieldValue("run-network");
  if (fieldValue("run-epdisp") !== "") run.ep_dispatcher = fieldValue("run-epdisp");
  if (fieldValue("run-fp8recipe") !== "") run.fp8_recipe = fieldValue("run-fp8recipe");
  if (fieldValue("run-loss") !== "") run.loss = fieldValue("run-loss");
  if (fieldValue("run-cpring") !== "") run.cp_ring = fieldValue("run-cpring");
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

export function mode(): string {
  return $<HTMLSelectElement>("mode-select").value;
}

/** The measuring budget as request fields: {} when empty (the server's default, 60 s). The server
 * enforces it as wall time and answers with what it measured by then, the rest predicted. */
export function budget(): { max_gpu_seconds?: number } {
  const text = $<HTMLInputElement>("gpu-budget").value.trim();
  if (text === "") return {};
  const v = Number(text);
  if (!Number.isFinite(v) || v <= 0 || v > 3600) {
    throw new Error(`GPU budget: seconds in (0, 3600], got "${text}"`);
  }
  return { max_gpu_seconds: v };
}

function requireModel(): ModelSpec {
  if (!state.model) throw new Error("choose a model first");
  return state.model;
}

export function numberInput(id: string, field: string): number {
  const v = Number($<HTMLInputElement>(id).value);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${field}: a whole number ≥ 1, got "${$<HTMLInputElement>(id).value}"`);
  return v;
}

export function intList(id: string, label: string): number[] {
  const text = fieldValue(id);
  if (text === "") return [];
  return text.split(",").map((t) => {
    const n = Number(t.trim());
    if (!Number.isInteger(n) || n < 1) throw new PanelError(`${label}: whole numbers ≥ 1 separated by commas, got "${text}"`);
    return n;
  });
}

export function varied(): string[] {
  return Array.from(document.querySelectorAll<HTMLInputElement>("#rec-vary input:checked, #rec-release input:checked")).map(
    (b) => b.value,
  );
}

