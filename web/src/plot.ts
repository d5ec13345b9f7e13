// The sweep plot (the paper's throughput-against-dimension pictures, e.g. the wave "sawtooth"
// over hidden size): uPlot, one line through every valid point, markers on the points where all
// of the paper's rules hold, and the prediction's error band shaded.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { int, type SweepPoint } from "./api";

export type Metric = "tflops" | "mfu" | "tokens_per_second_per_gpu";

export const METRIC_LABELS: Record<Metric, string> = {
  tflops: "TFLOP/s",
  mfu: "MFU (%)",
  tokens_per_second_per_gpu: "tokens/s per GPU",
};

export function metricValue(p: SweepPoint, metric: Metric): number | null {
  if (!p.valid) return null;
  const v = p[metric];
  if (v === undefined || !Number.isFinite(v)) return null;
  return metric === "mfu" ? v * 100 : v;
}

/** Columns for uPlot: x, all valid points, points where the rules hold, band low, band high. */
export function sweepColumns(points: SweepPoint[], metric: Metric): (number | null)[][] {
  const xs: number[] = [];
  const all: (number | null)[] = [];
  const hold: (number | null)[] = [];
  const lo: (number | null)[] = [];
  const hi: (number | null)[] = [];
  for (const p of points) {
    const y = metricValue(p, metric);
    xs.push(int(p.value));
    all.push(y);
    hold.push(y !== null && (p.rules_broken ?? []).length === 0 ? y : null);
    // error_band_p10/p90 bound measured/predicted − 1 of the TIME; a rate divides by it.
    const p10 = p.error_band_p10 ?? 0;
    const p90 = p.error_band_p90 ?? 0;
    lo.push(y === null ? null : y / (1 + p90));
    hi.push(y === null ? null : y / (1 + p10));
  }
  return [xs, all, hold, lo, hi];
}

export interface SweepPlot {
  destroy(): void;
  /** Milliseconds the last draw took (for the render benchmark). */
  lastDrawMs: number;
}

export function drawSweep(
  target: HTMLElement,
  points: SweepPoint[],
  metric: Metric,
  xLabel: string,
  width: number,
  baseline?: number,
): SweepPlot {
  const started = performance.now();
  const data = sweepColumns(points, metric) as uPlot.AlignedData;
  const opts: uPlot.Options = {
    width,
    height: 320,
    scales: { x: { time: false } },
    axes: [{ label: xLabel }, { label: METRIC_LABELS[metric], size: 70 }],
    series: [
      { label: xLabel },
      { label: "every valid point", stroke: "#3b528b", width: 1.5, points: { show: false } },
      {
        label: "paper's rules hold",
        stroke: "#21918c",
        width: 0,
        paths: () => null,
        points: { show: true, size: 7, fill: "#21918c", stroke: "#21918c" },
      },
      { label: "band p10", stroke: "rgba(59,82,139,0.25)", width: 0.5, points: { show: false } },
      { label: "band p90", stroke: "rgba(59,82,139,0.25)", width: 0.5, points: { show: false } },
    ],
    bands: [{ series: [4, 3], fill: "rgba(59,82,139,0.12)" }],
    legend: { live: true },
    // The model as given: a dashed vertical line at its value of the swept dimension.
    hooks: {
      draw: [
        (u: uPlot) => {
          if (baseline === undefined) return;
          const x = u.valToPos(baseline, "x", true);
          if (!Number.isFinite(x) || x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
          const c = u.ctx;
          c.save();
          c.strokeStyle = "#c62828";
          c.setLineDash([6, 4]);
          c.lineWidth = 1.5;
          c.beginPath();
          c.moveTo(x, u.bbox.top);
          c.lineTo(x, u.bbox.top + u.bbox.height);
          c.stroke();
          c.setLineDash([]);
          c.fillStyle = "#c62828";
          c.font = `${12 * devicePixelRatio}px system-ui, sans-serif`;
          c.fillText("the model", x + 4, u.bbox.top + 14 * devicePixelRatio);
          c.restore();
        },
      ],
    },
  };
  const chart = new uPlot(opts, data, target);
  const plot: SweepPlot = {
    destroy: () => chart.destroy(),
    lastDrawMs: performance.now() - started,
  };
  return plot;
}
