// Number and label formatting shared by the dashboard's tables, plot and heat map.
import { int } from "./api";
import type { Int64, Source } from "./api";

export function seconds(s: number | undefined): string {
  if (s === undefined || !Number.isFinite(s)) return "–";
  if (s >= 1) return `${s.toFixed(3)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toFixed(3)} ms`;
  return `${(s * 1e6).toFixed(1)} µs`;
}

export function percent(x: number | undefined, digits = 1): string {
  return x === undefined || !Number.isFinite(x) ? "–" : `${(x * 100).toFixed(digits)}%`;
}

export function signedPercent(x: number | undefined, digits = 1): string {
  if (x === undefined || !Number.isFinite(x)) return "–";
  return `${x >= 0 ? "+" : ""}${(x * 100).toFixed(digits)}%`;
}

export function fixed(x: number | undefined, digits = 1): string {
  return x === undefined || !Number.isFinite(x) ? "–" : x.toFixed(digits);
}

/** 2775208960 → "2.78 B". */
export function count(x: number): string {
  const units: [number, string][] = [
    [1e12, "T"],
    [1e9, "B"],
    [1e6, "M"],
    [1e3, "k"],
  ];
  for (const [scale, unit] of units) if (Math.abs(x) >= scale) return `${(x / scale).toFixed(2)} ${unit}`;
  return String(x);
}

/** The error band of a prediction, e.g. "−4.2% / +1.5%". */
export function band(p10: number | undefined, p90: number | undefined): string {
  if (p10 === undefined && p90 === undefined) return "";
  return `${signedPercent(p10 ?? 0)} / ${signedPercent(p90 ?? 0)}`;
}

/** "SOURCE_MEASURED" → "MEASURED". */
export function sourceLabel(source: Source | undefined): string {
  return (source ?? "SOURCE_PREDICTED").replace(/^SOURCE_/, "");
}

/** "PASS_FORWARD" → "forward", "BOUND_COMPUTE" → "compute". */
export function enumLabel(value: string | undefined, prefix: string): string {
  return (value ?? "").replace(new RegExp(`^${prefix}_`), "").toLowerCase();
}

/** Perceptually ordered colours (viridis control points) for t in [0, 1]. */
const VIRIDIS: [number, number, number][] = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

export function viridis(t: number): string {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const c = VIRIDIS[i].map((v, j) => Math.round(v + (VIRIDIS[i + 1][j] - v) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

/** Values from..to in steps (inclusive), at most `limit` of them. */
export function range(from: number, to: number, step: number, limit = 2000): number[] {
  const out: number[] = [];
  if (!(step > 0) || to < from) return out;
  for (let v = from; v <= to && out.length < limit; v += step) out.push(v);
  return out;
}

/** "46.6 / 80 GiB", and whether it fits (90% of the GPU's memory), for a memory estimate; the
 *  pipeline stage it is of when that is not the first ("on stage 7"). */
export function memoryText(m: { total_bytes?: number; capacity_bytes?: number; fits?: boolean;
  fits_with_recompute?: boolean; stage?: Int64 } | undefined): string {
  if (!m || m.total_bytes === undefined) return "–";
  const gib = 1024 ** 3;
  const stage = int(m.stage) > 0 ? ` on stage ${int(m.stage)}` : "";
  const used =
    `${(m.total_bytes / gib).toFixed(1)} / ${((m.capacity_bytes ?? 0) / gib).toFixed(0)} GiB${stage}`;
  if (m.fits) return `${used} fits`;
  return `${used} does not fit${m.fits_with_recompute ? " (fits with full recomputation)" : ""}`;
}
