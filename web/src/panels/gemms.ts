// The GEMMs of one analysed step on the GPU chosen: the roofline (hover a dot) and the GEMM table.
import { int, type AnalyzeResponse, type GemmAnalysis } from "../api";
import { enumLabel, fixed, percent, seconds, sourceLabel } from "../format";
import { $, badge, setTable } from "../dom";
import { drawRoofline, nearest, peakFor } from "../roofline";
import { state } from "../state";

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

export function rooflineHover(ev: MouseEvent) {
  const canvas = ev.currentTarget as HTMLCanvasElement;
  const rect = canvas.getBoundingClientRect();
  const p = nearest(state.roofline, ((ev.clientX - rect.left) * canvas.width) / rect.width,
                    ((ev.clientY - rect.top) * canvas.height) / rect.height);
  if (p) $("roofline-info").textContent = `${p.name}: ${fixed(p.tflops, 0)} TFLOP/s at ${fixed(p.intensity, 1)} FLOP/byte`;
}

export function renderGemms() {
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
