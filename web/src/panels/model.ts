// The model panel: the example models, a pasted model (parsed by the server), and the model chosen,
// which sets the defaults of the sweep and the heat map.
import { int, listModels, parseModel, type Int64, type ModelSpec } from "../api";
import { $, showError } from "../dom";
import { markStale, modelError, state } from "../state";
import { saveUrl } from "../url";
import { defaultSweepRange } from "./sweep";

export function setModel(spec: ModelSpec, file: string, baseConfig = "") {
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

export async function loadModels() {
  const r = await listModels();
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

export async function parsePasted() {
  try {
    const text = $<HTMLTextAreaElement>("model-json").value;
    const spec = await parseModel(text);
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
