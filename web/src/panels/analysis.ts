// The analysis panel: Analyze on every ticked GPU, the step as bars (a run's parts under
// parallelism), the answer and kernel tables, a run's layouts, and the paper rules broken.
import { int, runAnalyze, type AnalyzeResponse, type StepBreakdown } from "../api";
import { band, enumLabel, fixed, memoryText, percent, seconds } from "../format";
import { $, badge, node, setTable, showError, type Cell } from "../dom";
import { effectiveModel, fieldValue, runConfig } from "../form";
import { fresh, selectedGpus, state } from "../state";
import { renderGemms } from "./gemms";

export async function analyze() {
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
        return runAnalyze(run ? { model, gpu, run, flop_count } : { model, gpu, flop_count });
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
  const recompute = b.recompute === "RECOMPUTE_OP" ? "op-level selective"
    : b.recompute && b.recompute !== "RECOMPUTE_NONE" ? enumLabel(b.recompute, "RECOMPUTE") : "no";
  const mem = b.memory?.total_bytes ? `${(Number(b.memory.total_bytes) / 2 ** 30).toFixed(1)} GiB per GPU` : "";
  return [b.sequence_parallel ? "sequence parallel" : "no sequence parallelism", `${recompute} recomputation`,
          `ZeRO ${b.zero_stage ?? 0}`, b.offload_activations ? "activations offloaded" : "",
          Number(b.interleave ?? 1) > 1 ? `${b.interleave} interleaved stages per rank` : "",
          `micro-batch ${Number(b.micro_batch_size ?? 1) || 1}`,
          mem ? `${mem}${b.memory?.fits ? "" : " (does not fit)"}` : ""]
    .filter((x) => x).join(", ");
}

// Where the other count of attention's FLOPs moves MFU by 5% or more, what it reads under it
// (as the CLI's answer line says it).
function otherCountNote(step: StepBreakdown, flopCount?: string): string {
  const mfu = step.mfu ?? 0;
  const other = step.mfu_other_count ?? 0;
  if (mfu <= 0 || Math.abs(other / mfu - 1) < 0.05) return "";
  const causal = flopCount === "causal";
  return `; MFU ${percent(other)} counting its ${causal ? "whole s × s product" : "causal half"}`;
}

// The data-parallel part's name: under ZeRO-3 the weights' gathers (and FSDP2's copies) are in it,
// as the CLI's step table names it.
function dpLabel(key: keyof StepBreakdown, label: string, step?: StepBreakdown): string {
  return key === "dp_comm_s" && Number(step?.zero_stage ?? 0) >= 3 ? "FSDP gathers and reduces" : label;
}

function renderStepBars(results: AnalyzeResponse[]) {
  const box = $("step-bars");
  box.replaceChildren();
  for (const r of results) {
    const parts: Array<[string, number, string]> = r.step
      ? STEP_PARTS.map(([k, label, color]) => [dpLabel(k, label, r.step), Number(r.step?.[k] ?? 0), color])
      : [["GEMMs", r.gemm_time_s ?? 0, "#3b528b"], ["other (elementwise)", r.elementwise_time_s ?? 0, "#9aa3b5"]];
    const total = parts.reduce((a, [, v]) => a + v, 0);
    const title = r.step
      ? `${r.gpu}: ${seconds(r.step.step_time_s)} per step on ${int(r.step.gpus)} GPUs ` +
        `(t=${int(r.step.tensor_parallel)} p=${int(r.step.pipeline_parallel)} c=${int(r.step.context_parallel ?? 1)} ` +
        `d=${int(r.step.data_parallel)}${Number(r.step.expert_parallel ?? 1) > 1 ? ` e=${int(r.step.expert_parallel)}` : ""}), MFU ${percent(r.step.mfu)} ` +
        `(${(r.step.tflops_per_gpu ?? 0).toFixed(0)} TFLOP/s per GPU, attention counted ${r.flop_count || "full"}` +
        otherCountNote(r.step, r.flop_count) + "); " +
        (r.step.error_band_runs
          ? `PREDICTED ${band(r.step.error_band_p10, r.step.error_band_p90)} (p10..p90 of ${r.step.error_band_runs} ` +
            `published ${r.step.error_band_kind} runs` +
            (r.step.error_band_gpu_checked || !r.step.error_band_gpus?.length
              ? ""
              : `, on ${r.step.error_band_gpus.join(", ")}, none on this GPU: likely wider here`) +
            "); "
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
  // What the step takes for granted (the CLI's "assumes:" lines), folded under one line.
  if (step.assumptions?.length) {
    const more = node("details", undefined, "note");
    more.dataset.role = "assumes";
    more.appendChild(node("summary", `what this step assumes (${step.assumptions.length})`));
    const list = node("ul");
    for (const a of step.assumptions) list.appendChild(node("li", a));
    more.appendChild(list);
    out.push(more);
  }
  return out;
}
