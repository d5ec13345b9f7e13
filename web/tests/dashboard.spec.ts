// The dashboard end to end: a real wavecrest-server (tests/global-setup.ts), Debian's Chromium,
// every panel driven as a user would, figures checked against what the API itself returns.
import { expect, test, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

const url = () => process.env.WAVECREST_URL ?? "";
const shots = (name: string) => path.join(test.info().project.outputDir, "screenshots", `${name}.png`);

async function open(page: Page, model = "pythia-2.8b.json") {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // A script or style the content security policy blocks shows up as a console error.
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  await page.goto(url());
  await expect(page.locator("body")).toHaveAttribute("data-ready", "true");
  await page.selectOption("#model-select", model);
  return errors;
}

test("loads models, GPUs, workers and health from the server", async ({ page }) => {
  const errors = await open(page);
  await expect(page.locator("#health")).toContainText("advisor SERVING");
  await expect(page.locator("#health")).toHaveClass(/ok/);
  const models = await page.locator("#model-select option").count();
  const api = await (await fetch(`${url()}/v1/models`)).json();
  expect(models).toBe(api.models.length);
  expect(models).toBeGreaterThan(10);
  const devices = await (await fetch(`${url()}/v1/devices`)).json();
  await expect(page.locator("#gpu-select option")).toHaveCount(devices.catalog.length);
  await expect(page.locator("#worker-table tbody tr")).toHaveCount(devices.workers.length);
  await expect(page.locator("#worker-table tbody tr").first()).toContainText("up");
  await expect(page.locator("#cache-line")).toContainText("Result cache:");
  await expect(page.locator("#model-summary")).toContainText("h=2560, a=32");
  const index = await fetch(`${url()}/`);
  expect(index.headers.get("content-security-policy")).toContain("default-src 'self'");
  expect(errors).toEqual([]);
});

test("analyze on two GPUs: step times, the GEMM table and the rules broken", async ({ page }) => {
  await open(page);
  await page.selectOption("#gpu-select", ["h100-sxm", "a100-sxm-80gb"]);
  await page.click("#analyze-button");
  const rows = page.locator("#gpu-table tbody tr");
  await expect(rows).toHaveCount(2);
  await expect(rows.first().locator(".badge")).toHaveText("PREDICTED");
  // The H100 is faster than the A100 for the same model: check the page shows the API's figures.
  const spec = JSON.parse(readFileSync(path.resolve(here, "../../examples/models/pythia-2.8b.json"), "utf8"));
  const h100 = await (await fetch(`${url()}/v1/analyze`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ model: spec, gpu: "h100-sxm" }) })).json();
  await expect(page.locator("#gpu-table")).toContainText(`${(h100.mfu * 100).toFixed(1)}%`);
  // The memory estimate: Pythia-2.8B (18 bytes a parameter + activations) fits an 80 GB GPU.
  const gib = (h100.memory.total_bytes / 1024 ** 3).toFixed(1);
  await expect(page.locator("#gpu-table")).toContainText(`${gib} / 80 GiB fits`);
  // Pythia-2.8B's QKV forward GEMM is 2048 × 7680 × 2560; its head dim 80 breaks rule 3.
  await expect(page.locator("#gemm-table")).toContainText("2048 × 7680 × 2560");
  expect(await page.locator("#gemm-table tbody tr").count()).toBe(h100.gemms.length);
  await expect(page.locator("#rules")).toContainText("head_dim_pow2");
  await expect(page.locator("#provenance")).toContainText("PREDICTED by wavecrest-analytic");
  await page.selectOption("#gemm-gpu", "a100-sxm-80gb");
  await expect(page.locator("#provenance")).toContainText("a100-sxm-80gb: PREDICTED");
  await page.screenshot({ path: shots("analyze"), fullPage: true });
});

test("a pasted Hugging Face config is imported by the server; a bad one names the field", async ({ page }) => {
  await open(page);
  await page.click("#paste summary");
  const hf = readFileSync(path.resolve(here, "../../examples/models/hf/llama-3-8b.json"), "utf8");
  await page.fill("#model-json", hf);
  await page.click("#parse-button");
  await expect(page.locator("#model-summary")).toContainText("h=4096, a=32, kv=8");
  await page.fill("#model-json", '{"hidden_size": 4096, "num_attention_heads": 32, "mlp": "swiglu2"}');
  await page.click("#parse-button");
  await expect(page.locator("#model-error")).toBeVisible();
  await expect(page.locator("#model-error")).toContainText("INVALID_ARGUMENT");
  await expect(page.locator("#model-error")).toContainText("mlp");
});

test("recommend streams progress and shows ranked shapes against the baseline", async ({ page }) => {
  await open(page);
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.locator("#rec-status")).toContainText("shapes examined");
  // The verdict comes first, and says which.
  await expect(page.locator("#rec-verdict")).toBeVisible();
  await expect(page.locator("#rec-verdict")).toContainText(/^(KEEP|CHANGE) /);
  await expect(page.locator("#rec-table tr.baseline")).toHaveCount(1);
  await expect(page.locator("#rec-table tr.baseline")).toContainText("the model as given");
  const ranked = page.locator("#rec-table tbody tr:not(.baseline)");
  expect(await ranked.count()).toBeGreaterThan(0);
  await expect(ranked.first().locator(".badge")).toHaveText(/PREDICTED|MEASURED|CACHED/);
  expect(await page.locator("#rec-notes li").count()).toBeGreaterThan(0);
  await page.screenshot({ path: shots("recommend"), fullPage: true });
});

test("a hidden-size sweep is plotted with markers where the rules hold", async ({ page }) => {
  await open(page);
  await page.selectOption("#sweep-dim", "SWEEP_DIMENSION_HIDDEN");
  await page.fill("#sweep-from", "2048");
  await page.fill("#sweep-to", "3072");
  await page.fill("#sweep-step", "32");
  await page.selectOption("#mode-select", "MODE_PREDICTED");
  await page.click("#sweep-button");
  await expect(page.locator("#sweep-status")).toHaveText("done");
  await expect(page.locator("#sweep-plot")).toHaveAttribute("data-points", "33");
  await expect(page.locator("#sweep-plot canvas")).toHaveCount(1);
  // h = 2048 + 32 k with a = 32: h/a = 64 + k; the rules hold where h/a is a multiple of 64.
  // Only 2048 (h/a = 64) qualifies in this range... check against the API's own rules_broken.
  const note = await page.locator("#sweep-note").textContent();
  const m = /(\d+) points on [\w-]+: (\d+) legal, (\d+) keep every paper rule/.exec(note ?? "");
  expect(m).not.toBeNull();
  expect(Number(m![1])).toBe(33);
  expect(Number(m![3])).toBeLessThan(Number(m![2]));
  await expect(page.locator("#sweep-title")).toHaveText("TFLOP/s against hidden size h on h100-sxm");
  await page.selectOption("#sweep-metric", "mfu");
  await expect(page.locator("#sweep-title")).toHaveText("MFU (%) against hidden size h on h100-sxm");
  await expect(page.locator("#sweep-plot canvas")).toHaveCount(1);
  await page.screenshot({ path: shots("sweep"), fullPage: true });
});

test("the heads × hidden heat map colours legal cells and greys illegal ones", async ({ page }) => {
  await open(page);
  await page.selectOption("#mode-select", "MODE_PREDICTED");
  await page.fill("#hm-h-from", "2048");
  await page.fill("#hm-h-to", "2560");
  await page.fill("#hm-h-step", "256");
  await page.fill("#hm-a-from", "16");
  await page.fill("#hm-a-to", "40");
  await page.fill("#hm-a-step", "8");
  await page.click("#heatmap-button");
  await expect(page.locator("#heatmap")).toHaveAttribute("data-cells", "12");
  // Cells: rows h = 2048, 2304, 2560; columns a = 16, 24, 32, 40. a = 24 divides none of them.
  const pixel = async (row: number, col: number) =>
    page.evaluate(
      ([r, c]) => {
        const canvas = document.getElementById("heatmap") as HTMLCanvasElement;
        const cellW = Math.floor((canvas.width - 64 - 90) / 4);
        const cellH = Math.floor((canvas.height - 10 - 40) / 3);
        const d = canvas.getContext("2d")!.getImageData(64 + c * cellW + 2, 10 + r * cellH + 2, 1, 1).data;
        return [d[0], d[1], d[2]];
      },
      [row, col],
    );
  expect(await pixel(0, 1)).toEqual([217, 217, 217]); // h=2048, a=24: not legal, grey
  expect(await pixel(0, 0)).not.toEqual([217, 217, 217]); // h=2048, a=16: coloured
  expect(await pixel(2, 3)).not.toEqual([217, 217, 217]); // h=2560, a=40 (h/a = 64)
  await page.locator("#heatmap").hover({ position: { x: 64 + 5, y: 10 + 5 } });
  await expect(page.locator("#heatmap-info")).toContainText("h=2048, a=16");
  await page.screenshot({ path: shots("heatmap"), fullPage: true });
});

test("a sweep the server refuses shows the gRPC code and the field", async ({ page }) => {
  await open(page);
  await page.selectOption("#sweep-dim", "SWEEP_DIMENSION_HIDDEN");
  await page.fill("#sweep-from", "64");
  await page.fill("#sweep-to", "1000000");
  await page.fill("#sweep-step", "64");
  await page.click("#sweep-button");
  await expect(page.locator("#model-error")).toContainText("INVALID_ARGUMENT");
  await expect(page.locator("#sweep-status")).toHaveText("failed");
});
