// The heads × hidden heat map (the paper's Figure-style grid): one cell per (hidden, heads)
// pair, coloured by throughput, grey where the shape is not legal, a dot where every paper rule
// holds and an outline on the baseline. Drawn on a canvas; cells are found again for tooltips.
import { type SweepPoint } from "./api";
import { viridis } from "./format";
import { METRIC_LABELS, metricValue, type Metric } from "./plot";

export interface HeatmapData {
  hidden: number[];
  heads: number[];
  /** cells[row][col]: row = hidden index, col = heads index. */
  cells: (SweepPoint | undefined)[][];
  baseline?: { hidden: number; heads: number };
}

/** Pixels at the right kept for the colour legend. */
export const LEGEND_W = 90;

export interface HeatmapLayout {
  left: number;
  top: number;
  cellW: number;
  cellH: number;
}

export function layoutFor(canvas: HTMLCanvasElement, data: HeatmapData): HeatmapLayout {
  const left = 64;
  const top = 10;
  const cellW = Math.max(4, Math.floor((canvas.width - left - LEGEND_W) / Math.max(1, data.heads.length)));
  const cellH = Math.max(4, Math.floor((canvas.height - top - 40) / Math.max(1, data.hidden.length)));
  return { left, top, cellW, cellH };
}

export function valueRange(data: HeatmapData, metric: Metric): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const row of data.cells)
    for (const p of row) {
      const v = p ? metricValue(p, metric) : null;
      if (v !== null) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
  return lo <= hi ? [lo, hi] : [0, 1];
}

export function drawHeatmap(canvas: HTMLCanvasElement, data: HeatmapData, metric: Metric): void {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const { left, top, cellW, cellH } = layoutFor(canvas, data);
  const [lo, hi] = valueRange(data, metric);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  data.hidden.forEach((h, r) => {
    ctx.fillStyle = "#333";
    ctx.textAlign = "right";
    if (data.hidden.length < 40 || r % Math.ceil(data.hidden.length / 20) === 0)
      ctx.fillText(String(h), left - 6, top + r * cellH + cellH / 2);
    data.heads.forEach((a, c) => {
      const p = data.cells[r]?.[c];
      const v = p ? metricValue(p, metric) : null;
      const x = left + c * cellW;
      const y = top + r * cellH;
      ctx.fillStyle = v === null ? "#d9d9d9" : viridis((v - lo) / (hi - lo || 1));
      ctx.fillRect(x, y, cellW - 1, cellH - 1);
      if (v !== null && (p?.rules_broken ?? []).length === 0 && cellW >= 8 && cellH >= 8) {
        ctx.fillStyle = "#fff";
        ctx.beginPath();
        ctx.arc(x + cellW / 2, y + cellH / 2, Math.min(cellW, cellH) / 6, 0, 2 * Math.PI);
        ctx.fill();
      }
      if (data.baseline && data.baseline.hidden === h && data.baseline.heads === a) {
        ctx.strokeStyle = "#e4572e";
        ctx.lineWidth = 2;
        ctx.strokeRect(x + 1, y + 1, cellW - 3, cellH - 3);
      }
    });
  });
  ctx.fillStyle = "#333";
  ctx.textAlign = "center";
  const labelEvery = Math.ceil(data.heads.length / 24);
  data.heads.forEach((a, c) => {
    if (c % labelEvery === 0)
      ctx.fillText(String(a), left + c * cellW + cellW / 2, top + data.hidden.length * cellH + 10);
  });
  drawLegend(ctx, canvas, top, data.hidden.length * cellH, lo, hi, metric);
  ctx.fillStyle = "#333";
  ctx.textAlign = "center";
  ctx.fillText("attention heads a", left + (data.heads.length * cellW) / 2, top + data.hidden.length * cellH + 28);
  ctx.save();
  ctx.translate(12, top + (data.hidden.length * cellH) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText("hidden size h", 0, 0);
  ctx.restore();
}

/** The cell under a canvas point, or undefined. */
export function cellAt(
  canvas: HTMLCanvasElement,
  data: HeatmapData,
  x: number,
  y: number,
): { hidden: number; heads: number; point?: SweepPoint } | undefined {
  const { left, top, cellW, cellH } = layoutFor(canvas, data);
  const c = Math.floor((x - left) / cellW);
  const r = Math.floor((y - top) / cellH);
  if (c < 0 || r < 0 || c >= data.heads.length || r >= data.hidden.length) return undefined;
  return { hidden: data.hidden[r], heads: data.heads[c], point: data.cells[r]?.[c] };
}

function drawLegend(
  ctx: CanvasRenderingContext2D,
  canvas: HTMLCanvasElement,
  top: number,
  height: number,
  lo: number,
  hi: number,
  metric: Metric,
): void {
  const x = canvas.width - LEGEND_W + 20;
  const steps = 50;
  for (let i = 0; i < steps; i++) {
    ctx.fillStyle = viridis(1 - i / (steps - 1));
    ctx.fillRect(x, top + (i * height) / steps, 14, height / steps + 1);
  }
  ctx.fillStyle = "#333";
  ctx.textAlign = "left";
  const digits = metric === "tokens_per_second_per_gpu" ? 0 : 1;
  ctx.fillText(hi.toFixed(digits), x + 18, top + 6);
  ctx.fillText(lo.toFixed(digits), x + 18, top + height - 6);
  ctx.save();
  ctx.translate(x - 6, top + height / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText(METRIC_LABELS[metric], 0, 0);
  ctx.restore();
}
