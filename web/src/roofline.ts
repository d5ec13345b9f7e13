// The roofline of one step's GEMMs: each GEMM at its arithmetic intensity (FLOPs per byte its
// operands and output move) against the TFLOP/s it reaches, under the GPU's roof: the dense peak,
// and the memory bandwidth times the intensity below the ridge. A GEMM far under the roof loses
// to tiles, waves or alignment; one on the slanted roof is memory-bound whatever its shape.
import { int, type GemmAnalysis } from "./api";

export interface RooflinePoint {
  name: string;
  intensity: number; // FLOP per byte
  tflops: number;
  x: number; // where it was drawn, canvas pixels
  y: number;
}

const ELEMENT_BYTES: Record<string, number> = {
  DTYPE_FP8_E4M3: 1,
  DTYPE_FP32: 4,
  DTYPE_TF32: 4,
};

/** FLOPs per byte of a GEMM: 2·m·n·k over the bytes of A, B and C (FP8 writes BF16). */
export function intensity(g: GemmAnalysis): number {
  const s = g.gemm.shape;
  const m = int(s.m), n = int(s.n), k = int(s.k);
  const e = ELEMENT_BYTES[g.gemm.dtype ?? ""] ?? 2;
  const out = e === 1 ? 2 : e;
  const bytes = (m * k + k * n) * e + m * n * out;
  return bytes > 0 ? (2 * m * n * k) / bytes : 0;
}

const PAD = { left: 64, right: 16, top: 12, bottom: 40 };

/** The dense peak of `dtype` from the BF16 one the catalogue gives: the datasheets' ratios on
 *  A100 and H100 (FP8 twice BF16, TF32 half, FP32 on CUDA cores about a fifteenth). */
export function peakFor(dtype: string | undefined, bf16Tflops: number): number {
  const ratio: Record<string, number> = { DTYPE_FP8_E4M3: 2, DTYPE_TF32: 0.5, DTYPE_FP32: 1 / 15 };
  return bf16Tflops * (ratio[dtype ?? ""] ?? 1);
}

/** Draws the roof and the GEMMs (fused attention is not a GEMM and is left out). */
export function drawRoofline(
  canvas: HTMLCanvasElement,
  gemms: GemmAnalysis[],
  peakTflops: number,
  bandwidthGBs: number,
): RooflinePoint[] {
  const ctx = canvas.getContext("2d");
  if (!ctx) return [];
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const pts = gemms
    .filter((g) => !g.gemm.fused_attention && (g.tflops ?? 0) > 0 && intensity(g) > 0)
    .map((g) => ({ name: `${g.gemm.name} ${g.gemm.pass ?? ""}`.replace("PASS_", "").toLowerCase(), intensity: intensity(g), tflops: g.tflops ?? 0, x: 0, y: 0 }));
  const ridge = bandwidthGBs > 0 ? (peakTflops * 1e12) / (bandwidthGBs * 1e9) : 1;
  const xs = [...pts.map((p) => p.intensity), ridge];
  const xMin = Math.pow(10, Math.floor(Math.log10(Math.max(1e-3, Math.min(...xs) / 2))));
  const xMax = Math.pow(10, Math.ceil(Math.log10(Math.max(...xs) * 2)));
  const yMax = Math.pow(10, Math.ceil(Math.log10(Math.max(peakTflops, ...pts.map((p) => p.tflops)) * 1.2)));
  const yMin = Math.max(1e-3, Math.min(yMax / 1e4, ...pts.map((p) => p.tflops / 2)));
  const X = (v: number) => PAD.left + ((Math.log10(v) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin))) * (w - PAD.left - PAD.right);
  const Y = (v: number) => h - PAD.bottom - ((Math.log10(v) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * (h - PAD.top - PAD.bottom);
  // Axes and decades.
  ctx.strokeStyle = "#cfd3dc";
  ctx.fillStyle = "#444";
  ctx.font = "11px system-ui, sans-serif";
  for (let d = xMin; d <= xMax * 1.001; d *= 10) {
    ctx.beginPath(); ctx.moveTo(X(d), PAD.top); ctx.lineTo(X(d), h - PAD.bottom); ctx.stroke();
    ctx.fillText(String(d), X(d) - 8, h - PAD.bottom + 14);
  }
  for (let d = Math.pow(10, Math.ceil(Math.log10(yMin))); d <= yMax * 1.001; d *= 10) {
    ctx.beginPath(); ctx.moveTo(PAD.left, Y(d)); ctx.lineTo(w - PAD.right, Y(d)); ctx.stroke();
    ctx.fillText(String(d), 4, Y(d) + 4);
  }
  ctx.fillText("FLOP per byte moved", w / 2 - 50, h - 6);
  ctx.save(); ctx.translate(12, h / 2 + 30); ctx.rotate(-Math.PI / 2); ctx.fillText("TFLOP/s", 0, 0); ctx.restore();
  // The roof.
  ctx.strokeStyle = "#c62828";
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(X(xMin), Y(Math.max(yMin, (xMin * bandwidthGBs) / 1e3)));
  ctx.lineTo(X(ridge), Y(peakTflops));
  ctx.lineTo(X(xMax), Y(peakTflops));
  ctx.stroke();
  ctx.lineWidth = 1;
  // The GEMMs.
  ctx.fillStyle = "#3b528b";
  for (const p of pts) {
    p.x = X(p.intensity);
    p.y = Y(Math.max(yMin, p.tflops));
    ctx.beginPath(); ctx.arc(p.x, p.y, 3.5, 0, 2 * Math.PI); ctx.fill();
  }
  return pts;
}

/** The point nearest (x, y) in canvas pixels, within 8 pixels. */
export function nearest(points: RooflinePoint[], x: number, y: number): RooflinePoint | undefined {
  let best: RooflinePoint | undefined;
  let bestD = 64;
  for (const p of points) {
    const d = (p.x - x) ** 2 + (p.y - y) ** 2;
    if (d < bestD) { bestD = d; best = p; }
  }
  return best;
}
