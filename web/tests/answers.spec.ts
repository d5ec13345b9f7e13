// Issue 54 in the browser: a run's row carries the run's error band, per-step and per-micro-batch
// figures sit in tables of their own, one GPU per question (chosen, never silently the first),
// decode's TPOT and MBU, what each answer assumes, the rows' TP legality, and a Hugging Face
// config's summary with the defaults it takes (never s=0). Figures are checked against the API.
import { expect, test } from "@playwright/test";
import { shots, open, selectGpus, api, recordRequests, pasteHfConfig } from "./page";

const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;

test("a run's row carries the run's error band; per-step and per-micro-batch figures apart", async ({ page }) => {
  const errors = await open(page, "llama-3-8b.json");
  await selectGpus(page, ["h100-sxm"]);
  await page.fill("#knob-tp", "8");
  await page.fill("#run-gpus", "8");
  const sent = recordRequests(page, "/v1/analyze");
  await page.click("#analyze-button");
  await expect(page.locator("#gpu-table tbody tr")).toHaveCount(1);
  const r = await api("/v1/analyze", sent[0]);
  const row = page.locator("#gpu-table tbody tr").first();
  // The run's band (dense runs: about −7% / +17%), not the GEMMs' (about ±9%).
  await expect(row.locator(".band")).toHaveText(` ${pct(r.step.error_band_p10)} / ${pct(r.step.error_band_p90)}`);
  expect(r.step.error_band_p90).not.toBeCloseTo(r.provenance.error_band_p90, 3);
  await expect(row).toContainText("the run on 8 GPUs, per step");
  await expect(row).toContainText(`${(100 * r.step.mfu).toFixed(1)}%`);
  // The step's table has no per-micro-batch column; the kernels' table has them, with the GEMMs' band.
  const header = await page.locator("#gpu-table thead").innerText();
  expect(header).not.toContain("GEMMs");
  expect(header).not.toContain("elementwise");
  const kernels = page.locator("#kernel-table tbody tr").first();
  await expect(page.locator("#kernel-table thead")).toContainText("kernels per micro-batch");
  await expect(kernels).toContainText(`${(100 * r.kernels.mfu).toFixed(1)}%`);
  await expect(kernels.locator(".band")).toHaveText(
    ` ${pct(r.provenance.error_band_p10)} / ${pct(r.provenance.error_band_p90)}`);
  await expect(page.locator("#analysis-assumed")).toHaveText(`assumes: ${r.assumed.summary}`);
  expect(errors).toEqual([]);
  await page.screenshot({ path: shots("run-band"), fullPage: true });
});

test("at TP 8 without a run the kernels' MFU has the run's beside it", async ({ page }) => {
  await open(page, "llama-3-8b.json");
  await selectGpus(page, ["h100-sxm"]);
  await page.fill("#knob-tp", "8");
  const sent = recordRequests(page, "/v1/analyze");
  await page.click("#analyze-button");
  await expect(page.locator("#gpu-table tbody tr")).toHaveCount(1);
  const r = await api("/v1/analyze", sent[0]);
  expect(r.tensor_parallel_run.mfu).toBeLessThan(r.kernels.mfu);
  const row = page.locator("#gpu-table tbody tr").first();
  await expect(row).toContainText("one rank's kernels at TP 8, per step");
  await expect(page.locator("#gpu-table thead")).toContainText("run MFU (with TP communication)");
  await expect(row).toContainText(`${(100 * r.tensor_parallel_run.mfu).toFixed(1)}% on 8 GPUs at TP 8`);
  await expect(page.locator("#kernel-table")).toContainText(`${(100 * r.kernels.mfu).toFixed(1)}%`);
});

test("decode shows its time per output token and MBU, and says its batch and KV length", async ({ page }) => {
  await open(page, "llama-3-8b.json");
  await selectGpus(page, ["h100-sxm"]);
  await page.selectOption("#knob-workload", "WORKLOAD_DECODE");
  await page.fill("#knob-mb", "8");
  await page.fill("#knob-kv", "4096");
  const sent = recordRequests(page, "/v1/analyze");
  await page.click("#analyze-button");
  await expect(page.locator("#gpu-table tbody tr")).toHaveCount(1);
  const r = await api("/v1/analyze", sent[0]);
  expect(r.memory_bandwidth_utilization).toBeGreaterThan(0);
  await expect(page.locator("#gpu-table thead")).toContainText("TPOT");
  await expect(page.locator("#gpu-table thead")).toContainText("MBU");
  await expect(page.locator("#gpu-table tbody tr").first()).toContainText(
    `${(100 * r.memory_bandwidth_utilization).toFixed(1)}%`);
  await expect(page.locator("#analysis-assumed")).toContainText("decode: batch 8, 4096 tokens of KV cache per sequence");
  // Recommend's decode table keeps them too.
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.locator("#rec-table thead")).toContainText("TPOT");
  await expect(page.locator("#rec-table thead")).toContainText("MBU");
  await expect(page.locator("#rec-assumed")).toContainText("decode: batch 8, 4096 tokens of KV cache");
  await page.screenshot({ path: shots("decode"), fullPage: true });
});

test("one GPU per question: Recommend, Sweep and the heat map ask on the one chosen", async ({ page }) => {
  await open(page);
  await selectGpus(page, ["h100-sxm", "a100-sxm-80gb"]);
  const ticked = await page.locator("#gpu-list input:checked").evaluateAll((b) => b.map((x) => (x as HTMLInputElement).value));
  expect(ticked).toHaveLength(2);
  // Each question lists the ticked GPUs and can be pointed at either.
  for (const id of ["#rec-gpu-select", "#sweep-gpu", "#hm-gpu"]) {
    await expect(page.locator(`${id} option`)).toHaveCount(2);
    await expect(page.locator(id)).toBeEnabled();
  }
  const other = ticked[1];
  const gpus: Record<string, string> = {};
  page.on("request", (r) => {
    for (const route of ["recommend", "sweep"]) {
      if (r.url().endsWith(`/v1/${route}`)) gpus[route] = (r.postDataJSON() as { gpu: string }).gpu;
    }
  });
  await page.selectOption("#rec-gpu-select", other);
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  expect(gpus.recommend).toBe(other);
  await expect(page.locator("#rec-gpu")).toHaveText(`on ${other}`);
  await page.selectOption("#sweep-gpu", other);
  await page.click("#sweep-button");
  await expect(page.locator("#sweep-note")).toContainText(`points on ${other}`);
  expect(gpus.sweep).toBe(other);
  await expect(page.locator("#sweep-note")).toContainText("Assumes: training: micro-batch 1 of 2048-token sequences");
  // With one GPU ticked there is nothing to choose, and it is that one.
  await selectGpus(page, ["h100-sxm"]);
  await expect(page.locator("#rec-gpu-select option")).toHaveCount(1);
  await expect(page.locator("#rec-gpu-select")).toBeDisabled();
  await expect(page.locator("#rec-gpu-select")).toHaveValue("h100-sxm");
});

test("each recommendation row says which TP degrees it meets; a baseline that breaks them is marked", async ({ page }) => {
  await open(page);
  await page.click("#paste summary");
  const spec = { name: "h30-7b", hidden_size: 3840, num_attention_heads: 30, num_kv_heads: 30, num_layers: 40,
                 ffn_hidden_size: 10240, mlp: "MLP_SWIGLU", vocab_size: 32000, norm: "NORM_RMSNORM" };
  await page.fill("#model-json", JSON.stringify(spec));
  await page.click("#parse-button");
  await expect(page.locator("#model-summary")).toContainText("h=3840, a=30");
  await selectGpus(page, ["h100-sxm"]);
  await page.click("#rec-constraints summary");
  await page.fill("#rec-tp", "1,2,4,8");
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.locator("#rec-table thead")).toContainText("TP legal");
  const others = page.locator("#rec-table tbody tr:not(.baseline)");
  expect(await others.count()).toBeGreaterThan(0);
  for (const cell of await others.locator(".tp-legal").all()) await expect(cell).toHaveText("1, 2, 4, 8");
  await expect(page.locator("#rec-table tr.baseline .tp-legal")).toHaveText("1, 2");
  await expect(page.locator("#rec-table tr.baseline .tp-legal")).toHaveClass(/short/);
  await expect(page.locator("#rec-legal")).toContainText("except the baseline (only 1, 2)");
  await expect(page.locator("#rec-verdict")).toContainText("not legal for tensor parallelism 4, 8");
});

test("a Hugging Face config's summary shows the defaults it takes, never s=0", async ({ page }) => {
  await open(page);
  await pasteHfConfig(page, "llama-3-8b.json");
  await expect(page.locator("#model-summary")).toContainText("h=4096, a=32, kv=8");
  await expect(page.locator("#model-summary")).toContainText("s=2048 (default), b=1 (default), t=1 (default)");
  await expect(page.locator("#model-summary")).not.toContainText("s=0");
});

test("a planned run searches the layout; a run as given that does not fit is not the answer", async ({ page }) => {
  const errors = await open(page, "llama-3-70b.json");
  await selectGpus(page, ["h100-sxm"]);
  await page.fill("#run-gpus", "512");
  await page.fill("#run-gb", "1024");
  await page.check("#run-plan");
  await page.fill("#run-tokens", "1.5e13");
  const sent = recordRequests(page, "/v1/analyze");
  await page.click("#analyze-button");
  const table = page.locator("#layouts-h100-sxm");
  await expect(table).toBeVisible();
  const r = await api("/v1/analyze", sent[0]);
  expect(r.layouts.length).toBeGreaterThan(1);
  await expect(table.locator("tr")).toHaveCount(r.layouts.length + 1);
  await expect(table.locator("tr").nth(1)).toContainText("the answer");
  await expect(table.locator("tr").nth(2)).toContainText(r.layouts[1].why);
  await expect(page.locator("[data-role=time-to-train]")).toContainText("GPU-hours");
  // As given, TP 8 × PP 2 of 80 layers at micro-batch 1: the step says it does not fit and shows the plan.
  await page.uncheck("#run-plan");
  await page.fill("#knob-tp", "8");
  await page.fill("#knob-pp", "2");
  await page.click("#analyze-button");
  await expect(page.locator("[data-role=no-fit]")).toContainText("not an answer");
  await page.screenshot({ path: shots("layout-search"), fullPage: true });
  expect(errors).toEqual([]);
});
