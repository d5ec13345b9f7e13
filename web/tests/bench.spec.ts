// Render benchmark (scripts/web.sh bench; skipped in the test suite): a 500-point sweep plotted
// and re-plotted, and a 16 × 15 heat map, in Debian's Chromium against a real server. Prints
// medians and writes them to WAVECREST_BENCH_OUT. Figures, not assertions: machines are noisy.
import { expect, test } from "@playwright/test";
import { writeFileSync } from "node:fs";
import os from "node:os";

test.skip(!process.env.WAVECREST_WEB_BENCH, "benchmark: run with scripts/web.sh bench");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test("render benchmark", async ({ page, browser }) => {
  test.setTimeout(600_000);
  await page.goto(process.env.WAVECREST_URL ?? "");
  await expect(page.locator("body")).toHaveAttribute("data-ready", "true");
  await page.selectOption("#model-select", "pythia-2.8b.json");
  await page.selectOption("#mode-select", "MODE_PREDICTED");
  const runs = 5;
  const sweepTotal: number[] = [];
  const sweepDraw: number[] = [];
  const redraw: number[] = [];
  const frame: number[] = [];
  const frameMs = async () => {
    await expect(page.locator("#sweep-plot")).toHaveAttribute("data-frame-ms", /\d/);
    return Number(await page.locator("#sweep-plot").getAttribute("data-frame-ms"));
  };
  const heatTotal: number[] = [];
  for (let i = 0; i < runs; i++) {
    await page.selectOption("#sweep-dim", "SWEEP_DIMENSION_HIDDEN");
    await page.fill("#sweep-from", "64");
    await page.fill("#sweep-to", "32000");
    await page.fill("#sweep-step", "64");
    await page.selectOption("#sweep-metric", "tflops");
    await page.evaluate(() => (document.getElementById("sweep-status")!.textContent = ""));
    const t0 = Date.now();
    await page.click("#sweep-button");
    await expect(page.locator("#sweep-status")).toHaveText("done", { timeout: 120_000 });
    sweepTotal.push(Date.now() - t0);
    await expect(page.locator("#sweep-plot")).toHaveAttribute("data-points", "500");
    sweepDraw.push(Number(await page.locator("#sweep-plot").getAttribute("data-draw-ms")));
    frame.push(await frameMs());
    await page.selectOption("#sweep-metric", "mfu");
    redraw.push(Number(await page.locator("#sweep-plot").getAttribute("data-draw-ms")));

    await page.fill("#hm-h-from", "1536");
    await page.fill("#hm-h-to", "3456");
    await page.fill("#hm-h-step", "128");
    await page.fill("#hm-a-from", "8");
    await page.fill("#hm-a-to", "64");
    await page.fill("#hm-a-step", "4");
    await page.evaluate(() => document.getElementById("heatmap")!.removeAttribute("data-cells"));
    const t1 = Date.now();
    await page.click("#heatmap-button");
    await expect(page.locator("#heatmap")).toHaveAttribute("data-cells", "240", { timeout: 120_000 });
    heatTotal.push(Date.now() - t1);
  }
  const heap = await page.evaluate(() => {
    const m = (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory;
    return m ? m.usedJSHeapSize / 1048576 : NaN;
  });
  const lines = [
    `# wavecrest dashboard render benchmark (web/tests/bench.spec.ts, scripts/web.sh bench)`,
    `# date ${new Date().toISOString()}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? "?"}); ` +
      `Chromium ${browser.version()} headless; server: wavecrest-server --workers auto (emulating, PREDICTED)`,
    `# ${runs} runs each, medians (min..max) in milliseconds`,
    `sweep 500 points (h 64..32000 step 64), click to plotted: ${median(sweepTotal)} (${Math.min(...sweepTotal)}..${Math.max(...sweepTotal)})`,
    `  of which uPlot construction and draw (synchronous): ${median(sweepDraw).toFixed(2)} (${Math.min(...sweepDraw).toFixed(2)}..${Math.max(...sweepDraw).toFixed(2)})`,
    `  plot built to the next animation frame: ${median(frame).toFixed(2)} (${Math.min(...frame).toFixed(2)}..${Math.max(...frame).toFixed(2)})`,
    `re-plot 500 points as MFU: ${median(redraw).toFixed(2)} (${Math.min(...redraw).toFixed(2)}..${Math.max(...redraw).toFixed(2)})`,
    `heat map 16 x 15 = 240 cells (16 Sweep calls, one per h), click to drawn: ${median(heatTotal)} (${Math.min(...heatTotal)}..${Math.max(...heatTotal)})`,
    `JS heap after the runs: ${heap.toFixed(1)} MiB`,
  ];
  console.log(lines.join("\n"));
  if (process.env.WAVECREST_BENCH_OUT) writeFileSync(process.env.WAVECREST_BENCH_OUT, lines.join("\n") + "\n");
  if (process.env.WAVECREST_SCREENSHOT) await page.screenshot({ path: process.env.WAVECREST_SCREENSHOT, fullPage: true });
});
