// The recommendation panel: the streamed Recommend with its constraints, the verdict, the candidates
// (each exportable as a config.json or a spec), and the refusals with the control that loosens each.
import {
  exportModel,
  int,
  streamRecommend,
  type Candidate,
  type RecommendResponse,
} from "../api";
import { count, fixed, memoryText, percent, seconds, signedPercent } from "../format";
import { $, node, progressReporter, setTable, showError, sourceCell, type Cell } from "../dom";
import { budget, effectiveModel, fieldValue, intList, mode, PanelError, varied } from "../form";
import { fresh, questionGpu, state } from "../state";

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
export function updateScrollHint() {
  const box = $("rec-scroll");
  $("rec-scroll-hint").hidden = box.scrollWidth <= box.clientWidth + 1;
}

export async function recommend() {
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
    const r = await streamRecommend(
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
