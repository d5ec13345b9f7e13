// The dashboard end to end: a real wavecrest-server (tests/global-setup.ts), Debian's Chromium,
// every panel driven as a user would, figures checked against what the API itself returns.
import { expect, test } from "@playwright/test";
import { url, shots, open, selectGpus, recordRequests, pasteHfConfig } from "./page";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));




test("loads models, GPUs, workers and health from the server", async ({ page }) => {
  const errors = await open(page);
  await expect(page.locator("#health")).toContainText("advisor SERVING");
  await expect(page.locator("#health")).toHaveClass(/ok/);
  const models = await page.locator("#model-select option").count();
  const api = await (await fetch(`${url()}/v1/models`)).json();
  expect(models).toBe(api.models.length);
  expect(models).toBeGreaterThan(10);
  const devices = await (await fetch(`${url()}/v1/devices`)).json();
  await expect(page.locator("#gpu-list input[type=checkbox]")).toHaveCount(devices.catalog.length);
  // Which GPUs are chosen is visible at a glance: a checked box per GPU, not a scrolled listbox.
  await expect(page.locator("#gpu-list input:checked")).toHaveCount(1);
  await expect(page.locator("#worker-table tbody tr")).toHaveCount(devices.workers.length);
  await expect(page.locator("#worker-table tbody tr").first()).toContainText("up");
  await expect(page.locator("#cache-line")).toContainText("Measurement store:");
  await expect(page.locator("#model-summary")).toContainText("h=2560, a=32");
  const index = await fetch(`${url()}/`);
  expect(index.headers.get("content-security-policy")).toContain("default-src 'self'");
  expect(errors).toEqual([]);
});

test("analyze on two GPUs: step times, the GEMM table and the rules broken", async ({ page }) => {
  await open(page);
  await selectGpus(page, ["h100-sxm", "a100-sxm-80gb"]);
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
  await pasteHfConfig(page, "llama-3-8b.json");
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

test("the GPU budget reaches the request, and rows the budget cut short say how much was measured", async ({ page }) => {
  await open(page);
  await page.selectOption("#mode-select", "MODE_MEASURED");
  await page.fill("#gpu-budget", "5");
  const sent = recordRequests(page, "/v1/recommend") as Record<string, unknown>[];
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  expect(sent).toHaveLength(1);
  expect(sent[0].mode).toBe("MODE_MEASURED");
  expect(sent[0].max_gpu_seconds).toBe(5);
  expect(page.url()).toContain("gpu-budget=5");
  // What a slow worker's answer looks like (the server's own test drives one: WorkerTest and the
  // Python client's MeasuringBudgetTest): a row partly measured, the note saying why.
  const note = "the measuring budget (wall time) ran out with 40 of 66 GEMMs not measured: they are PREDICTED";
  const model = { name: "cut short", hidden_size: 2560, num_attention_heads: 32, num_layers: 32 };
  const final = {
    done: true, gpu: "h100-sxm", mode: "MODE_MEASURED", verdict: "VERDICT_KEEP", verdict_reason: "nothing beats it",
    candidates_considered: 2, shapes_examined: 2, gemms_measured: 26, gemms_predicted: 40, notes: [note],
    candidates: [
      { baseline: true, model, speedup: 1, speedup_uncertainty: 0.03, source: "SOURCE_PREDICTED", measured_share: 0.4 },
      { rank: 1, model, speedup: 0.99, speedup_uncertainty: 0.03, source: "SOURCE_PREDICTED" },
    ],
  };
  await page.route("**/v1/recommend", (route) =>
    route.fulfill({ status: 200, contentType: "application/x-ndjson",
                    body: `{"progress":{"done":26,"total":66}}\n${JSON.stringify(final)}\n` }));
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tr.baseline")).toContainText("PREDICTED 40% measured");
  await expect(page.locator("#rec-table tbody tr:not(.baseline) .measured-share")).toHaveCount(0);
  await expect(page.locator("#rec-notes")).toContainText(note);
  await expect(page.locator("#rec-status")).toContainText("GEMMs measured 26, cached 0, predicted 40");
  // A budget the server would refuse is refused here first, at its panel.
  await page.fill("#gpu-budget", "-1");
  await page.click("#recommend-button");
  await expect(page.locator("#rec-error")).toContainText("GPU budget");
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
  // The error is shown at the panel that asked, not elsewhere.
  await expect(page.locator("#sweep-error")).toContainText("INVALID_ARGUMENT");
  await expect(page.locator("#model-error")).toBeHidden();
  await expect(page.locator("#sweep-status")).toHaveText("failed");
});

test("every knob reaches the request, a run shows its step breakdown, and the URL reproduces the view", async ({ page }) => {
  await open(page, "llama-3-8b.json");
  await selectGpus(page, ["h100-sxm"]);
  await page.fill("#knob-seq", "4096");
  await page.fill("#knob-mb", "2");
  await page.fill("#knob-tp", "8");
  await page.fill("#knob-pp", "2");
  await page.fill("#knob-cp", "2");
  await page.selectOption("#knob-dtype", "DTYPE_FP8_E4M3");
  await page.selectOption("#knob-attention", "ATTENTION_UNFUSED");
  await page.fill("#run-gpus", "64");
  await page.fill("#run-gb", "512");
  await page.selectOption("#run-zero", "3");
  await page.selectOption("#run-recompute", "RECOMPUTE_OP");
  await page.fill("#run-interleave", "2");
  await page.fill("#run-sustain", "1.05");
  await page.check("#run-no-ppov");
  await page.check("#run-ogr");
  await page.check("#run-z3p");
  await page.check("#run-eager");
  await page.check("#run-moeuf");
  await page.fill("#run-hsdp", "2");
  await page.fill("#run-mtp", "1");
  await page.check("#run-epov");
  await page.check("#run-sp");
  await page.check("#run-offload");
  await page.check("#run-fp8pg");
  const sent = recordRequests(page, "/v1/analyze");
  await page.click("#analyze-button");
  await expect(page.locator("#gpu-table tbody tr")).toHaveCount(1);
  expect(sent).toHaveLength(1);
  const body = sent[0] as { model: Record<string, unknown>; run: Record<string, unknown> };
  expect(body.model.seq_length).toBe(4096);
  expect(body.model.micro_batch_size).toBe(2);
  expect(body.model.tensor_parallel).toBe(8);
  expect(body.model.pipeline_parallel).toBe(2);
  expect(body.model.context_parallel).toBe(2);
  expect(body.model.dtype).toBe("DTYPE_FP8_E4M3");
  expect(body.model.attention).toBe("ATTENTION_UNFUSED");
  expect(body.run).toEqual({ num_gpus: 64, global_batch: 512, zero_stage: 3, recompute: "RECOMPUTE_OP",
                             sustained_gemm_stretch: 1.05, interleave: 2, no_pp_overlap: true, overlap_grad_reduce: true,
                             zero3_prefetch: true, eager: true, moe_unfused_ops: true, fsdp_shard: 2, mtp_layers: 1, ep_overlap: true, sequence_parallel: true,
                             offload_activations: true, plan: false, fp8_param_gather: true });
  // The step under parallelism as a bar: compute, TP communication, the pipeline bubble...
  const bar = page.locator('#step-bars .step-bar[data-gpu="h100-sxm"]');
  await expect(bar.locator('span[data-part="compute"]')).toHaveCount(1);
  await expect(bar.locator('span[data-part="TP communication"]')).toHaveCount(1);
  await expect(bar.locator('span[data-part="pipeline bubble"]')).toHaveCount(1);
  await expect(page.locator("#step-bars")).toContainText("on 64 GPUs (t=8 p=2 c=2 d=2)");
  await expect(page.locator("#step-bars")).toContainText("published context parallel runs");
  await expect(page.locator("#step-bars")).toContainText("layout: sequence parallel, op-level selective recomputation, ZeRO 3");
  await expect(page.locator("#step-bars")).toContainText("2 interleaved stages per rank, micro-batch 2");
  await expect(page.locator("#step-bars")).toContainText("take 1.05x their predicted times");
  // One answer: the GPU table's step time is the run's, as the API's top level is.
  const api = await (await fetch(`${url()}/v1/analyze`, { method: "POST", headers: { "Content-Type": "application/json" },
                                                           body: JSON.stringify(sent[0]) })).json();
  expect(api.step_time_s).toBe(api.step.step_time_s);
  expect(api.kernels.step_time_s).toBeLessThan(api.step_time_s);
  await expect(page.locator("#gpu-table tbody tr").first()).toContainText(`${(100 * api.mfu).toFixed(1)}%`);
  // The memory of the run's fullest pipeline stage, named: here the last (the logits of a 128k
  // vocabulary and the MTP module, with the activations offloaded).
  expect(Number(api.memory.stage)).toBe(1);  // int64: a string in the API's JSON
  await expect(page.locator("#gpu-table tbody tr").first()).toContainText(
    `${(api.memory.total_bytes / 1024 ** 3).toFixed(1)} / 80 GiB on stage 1`);
  await page.screenshot({ path: shots("run-breakdown"), fullPage: true });

  // A link reproduces the view: model, GPUs, knobs, run.
  const link = page.url();
  expect(link).toContain("model=llama-3-8b.json");
  const again = await page.context().newPage();
  await again.goto(link);
  await expect(again.locator("body")).toHaveAttribute("data-ready", "true");
  await expect(again.locator("body")).toHaveAttribute("data-from-url", "true");
  await expect(again.locator("#model-select")).toHaveValue("llama-3-8b.json");
  await expect(again.locator("#knob-seq")).toHaveValue("4096");
  await expect(again.locator("#knob-tp")).toHaveValue("8");
  await expect(again.locator("#knob-cp")).toHaveValue("2");
  await expect(again.locator("#run-offload")).toBeChecked();
  await expect(again.locator("#knob-dtype")).toHaveValue("DTYPE_FP8_E4M3");
  await expect(again.locator("#run-gpus")).toHaveValue("64");
  await expect(again.locator("#run-zero")).toHaveValue("3");
  await expect(again.locator("#run-sp")).toBeChecked();
  await expect(again.locator("#run-interleave")).toHaveValue("2");
  await expect(again.locator("#run-sustain")).toHaveValue("1.05");
  await expect(again.locator("#run-no-ppov")).toBeChecked();
  await expect(again.locator("#run-ogr")).toBeChecked();
  await expect(again.locator("#run-z3p")).toBeChecked();
  await expect(again.locator("#run-eager")).toBeChecked();
  await expect(again.locator("#run-moeuf")).toBeChecked();
  await expect(again.locator("#run-hsdp")).toHaveValue("2");
  await expect(again.locator("#run-mtp")).toHaveValue("1");
  await expect(again.locator("#run-epov")).toBeChecked();
  await expect(again.locator("#run-fp8pg")).toBeChecked();
  await expect(again.locator("#gpu-list input:checked")).toHaveCount(1);
  await expect(again.locator('#gpu-list input[value="h100-sxm"]')).toBeChecked();
  await again.close();
});

test("expert parallelism reaches the request and its all-to-alls show in the step", async ({ page }) => {
  await open(page, "hf/mixtral-8x7b.json");
  await selectGpus(page, ["h100-sxm"]);
  await page.fill("#knob-seq", "4096");
  await page.fill("#knob-ep", "8");
  await page.fill("#knob-tp", "2");
  await page.fill("#knob-etp", "1");
  await page.fill("#knob-capacity", "1.25");
  await page.fill("#run-gpus", "64");
  await page.selectOption("#run-epdisp", "flex");
  await page.selectOption("#run-fp8recipe", "rowwise");
  await page.selectOption("#run-loss", "eager");
  await page.selectOption("#run-cpring", "torch");
  await page.check("#run-ropeuf");
  const sent = recordRequests(page, "/v1/analyze");
  await page.click("#analyze-button");
  await expect(page.locator("#gpu-table tbody tr")).toHaveCount(1);
  const body = sent[0] as { model: Record<string, unknown>; run: Record<string, unknown> };
  expect(body.run.ep_dispatcher).toBe("flex");
  const api = await (await fetch(`${url()}/v1/analyze`, { method: "POST", headers: { "Content-Type": "application/json" },
                                                           body: JSON.stringify(sent[0]) })).json();
  expect((api.step.assumptions as string[]).join(" ")).toContain("the flex dispatcher");
  // The FP8 recipe reaches the request; on a BF16 model the answer says it changes nothing.
  expect(body.run.fp8_recipe).toBe("rowwise");
  expect((api.step.assumptions as string[]).join(" ")).toContain("fp8_recipe rowwise changes nothing here");
  // The loss reaches the request and the answer names it.
  expect(body.run.loss).toBe("eager");
  expect(body.run.rope_unfused).toBe(true);
  expect((api.step.assumptions as string[]).join(" ")).toContain("eager cross_entropy over an FP32 copy");
  // The CP ring reaches the request; the answer says this layout has no ring for it to price.
  expect(body.run.cp_ring).toBe("torch");
  expect((api.step.assumptions as string[]).join(" ")).toContain("cp_ring torch prices context parallelism's ring, and this layout has none");
  // The band's runs were on this GPU among others: no "none on this GPU" in the step's note.
  expect(api.step.error_band_gpus as string[]).toContain("h100-sxm");
  expect(api.step.error_band_gpu_checked).toBe(true);
  await expect(page.locator("#step-bars")).not.toContainText("none on this GPU");
  expect(body.model.expert_parallel).toBe(8);
  expect(body.model.expert_tensor_parallel).toBe(1);
  expect(body.model.moe_capacity_factor).toBe(1.25);
  const bar = page.locator('#step-bars .step-bar[data-gpu="h100-sxm"]');
  await expect(bar.locator('span[data-part="EP all-to-all"]')).toHaveCount(1);
  await expect(page.locator("#step-bars")).toContainText("d=32 e=8)");
});

test("results go stale when the model or how it runs changes; errors stay at their panel", async ({ page }) => {
  await open(page);
  await page.click("#analyze-button");
  await expect(page.locator("#gpu-table tbody tr")).toHaveCount(1);
  await expect(page.locator("#analysis-stale")).toBeHidden();
  await page.fill("#knob-seq", "8192");
  await page.locator("#knob-seq").dispatchEvent("change");
  await expect(page.locator("#analysis-stale")).toBeVisible();
  await page.click("#analyze-button");
  await expect(page.locator("#analysis-stale")).toBeHidden();
  await page.selectOption("#model-select", "llama-2-7b.json");
  await expect(page.locator("#analysis-stale")).toBeVisible();
  // Pythia's 32 heads do not divide by 3: the server names the field, at the Analyze panel.
  await page.fill("#knob-tp", "3");
  await page.click("#analyze-button");
  await expect(page.locator("#analysis-error")).toContainText("INVALID_ARGUMENT");
  await expect(page.locator("#analysis-error")).toContainText("tensor_parallel");
  await expect(page.locator("#model-error")).toBeHidden();
});

test("the roofline shows every GEMM under the GPU's roof", async ({ page }) => {
  await open(page);
  await page.click("#analyze-button");
  const spec = JSON.parse(readFileSync(path.resolve(here, "../../examples/models/pythia-2.8b.json"), "utf8"));
  const api = await (await fetch(`${url()}/v1/analyze`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ model: spec, gpu: "h100-sxm" }) })).json();
  const gemms = api.gemms.filter((g: { gemm: { fused_attention?: boolean } }) => !g.gemm.fused_attention).length;
  await expect(page.locator("#roofline")).toHaveAttribute("data-points", String(gemms));
  await expect(page.locator("#roofline-info")).toContainText("the roof is 989 TFLOP/s");
  // Hovering a dot names its GEMM.
  const first = await page.evaluate(() => {
    const c = document.getElementById("roofline") as HTMLCanvasElement;
    const d = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i] === 59 && d[i + 1] === 82 && d[i + 2] === 139) return { x: (i / 4) % c.width, y: Math.floor(i / 4 / c.width) };
    }
    return null;
  });
  expect(first).not.toBeNull();
  await page.locator("#roofline").scrollIntoViewIfNeeded();
  const box = (await page.locator("#roofline").boundingBox())!;
  const [w, h] = await page.evaluate(() => {
    const c = document.getElementById("roofline") as HTMLCanvasElement;
    return [c.width, c.height];
  });
  await page.mouse.move(box.x + ((first!.x + 2) * box.width) / w, box.y + ((first!.y + 3) * box.height) / h);
  await expect(page.locator("#roofline-info")).toContainText("TFLOP/s at");
  await page.screenshot({ path: shots("roofline"), fullPage: true });
});

test("a sweep marks the model's own value; a candidate exports as config.json and as a spec", async ({ page }) => {
  await open(page);
  await page.selectOption("#mode-select", "MODE_PREDICTED");
  await page.selectOption("#sweep-dim", "SWEEP_DIMENSION_HIDDEN");
  await page.click("#sweep-button");
  await expect(page.locator("#sweep-status")).toHaveText("done");
  await expect(page.locator("#sweep-plot")).toHaveAttribute("data-baseline", "2560");
  await page.screenshot({ path: shots("sweep-baseline"), fullPage: true });

  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  const row = page.locator("#rec-table tbody tr:not(.baseline)").first();
  const hidden = Number(await row.locator("td").nth(1).textContent());
  const [hf] = await Promise.all([page.waitForEvent("download"), row.locator('button[data-export="hf"]').click()]);
  expect(hf.suggestedFilename()).toMatch(/^candidate-\d+-config\.json$/);
  const config = JSON.parse(readFileSync((await hf.path())!, "utf8"));
  expect(config.architectures[0]).toBe("GPTNeoXForCausalLM");
  expect(config.hidden_size).toBe(hidden);
  // What was downloaded imports back as the same shape.
  const parsed = await (await fetch(`${url()}/v1/parse-model`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(config) })).json();
  expect(Number(parsed.hidden_size)).toBe(hidden);
  const [spec] = await Promise.all([page.waitForEvent("download"), row.locator('button[data-export="wavecrest"]').click()]);
  expect(spec.suggestedFilename()).toMatch(/^candidate-\d+-wavecrest\.json$/);
  expect(Number(JSON.parse(readFileSync((await spec.path())!, "utf8")).hidden_size)).toBe(hidden);
});

for (const width of [900, 1920]) {
  test(`the page fits ${width} px: no sideways scroll, wide tables scroll inside their panel`, async ({ page }) => {
    await page.setViewportSize({ width, height: 1000 });
    await open(page);
    await page.click("#analyze-button");
    await expect(page.locator("#gemm-table tbody tr").first()).toBeVisible();
    await page.click("#recommend-button");
    await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: shots(`layout-${width}`), fullPage: true });
  });
}

test("the recommendation's constraints reach the request, and a refusal's control sits beside it", async ({ page }) => {
  await open(page, "hf/gpt2.json");
  const sent = recordRequests(page, "/v1/recommend") as Record<string, unknown>[];
  await page.click("#rec-constraints summary");
  await page.check('#rec-vary input[value="KNOB_VOCAB"]');
  await page.check('#rec-vary input[value="KNOB_HEADS"]');
  await page.fill("#rec-tp", "1, 2, 8");
  await page.fill("#rec-head-multiple", "32");
  await page.fill("#rec-tolerance", "3");
  await page.check("#rec-kv-divisible");
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  expect(sent).toHaveLength(1);
  expect(sent[0].vary).toEqual(["KNOB_HEADS", "KNOB_VOCAB"]);
  expect(sent[0].tensor_parallel_options).toEqual([1, 2, 8]);
  expect(sent[0].head_dim_multiple).toBe(32);
  expect(sent[0].param_tolerance).toBeCloseTo(0.03);
  expect(sent[0].kv_heads_divisible_by_tp).toBe(true);
  expect(page.url()).toContain("rec-tp=");
  // GPT-2 with TP 8 named: the baseline breaks it (said), and every candidate meets it: 8 heads
  // of 96, a change the degree needs (said so), the pad beside it earning its keep on its own.
  await expect(page.locator("#rec-verdict")).toContainText(/^CHANGE /);
  await expect(page.locator("#rec-notes")).toContainText("12 heads do not divide by 8");
  const first = page.locator("#rec-table tbody tr:not(.baseline)").first();
  await expect(first.locator("td").nth(2)).toHaveText("8");
  await expect(first.locator(".tp-legal")).toHaveText("1, 2, 8");
  await expect(first.locator("td.why")).toContainText("needed for the tensor-parallel degrees asked");
  await expect(first.locator("td.why")).toContainText("this change");
  // Each refusal that a control loosens has a button to it.
  const refusal = page.locator('#rec-notes li[data-rule="heads_divisible_by_tp"]');
  await expect(refusal).toBeVisible();
  await page.click("#rec-constraints summary");  // closed again
  await refusal.locator("button.loosen").click();
  await expect(page.locator("#rec-tp")).toBeFocused();
  await expect(page.locator("#rec-constraints")).toHaveAttribute("open", "");
  // A constraint the server would refuse is refused at its panel first.
  await page.fill("#rec-tolerance", "90");
  await page.click("#recommend-button");
  await expect(page.locator("#rec-error")).toContainText("parameter tolerance");
});

test("what every candidate holds is said, and a release reaches the request", async ({ page }) => {
  await open(page, "hf/qwen2-7b.json");
  const sent = recordRequests(page, "/v1/recommend") as Record<string, unknown>[];
  await page.click("#rec-constraints summary");
  await page.check('#rec-release input[value="KNOB_KV_GROUP"]');
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  expect(sent).toHaveLength(1);
  expect(sent[0].vary).toEqual(["KNOB_KV_GROUP"]);
  await expect(page.locator("#rec-held")).toContainText("kv_cache (KV cache");
  await expect(page.locator("#rec-released")).toContainText("kv_group (7 query heads per KV head)");
  await expect(page.locator("#rec-notes")).toContainText("TP 1 is the smallest");
});

test("nothing to compare is its own verdict, naming what to loosen", async ({ page }) => {
  await open(page, "hf/llama-3-8b.json");
  await page.click("#rec-constraints summary");
  await page.check('#rec-vary input[value="KNOB_VOCAB"]');
  await page.click("#recommend-button");
  await expect(page.locator("#rec-verdict")).toContainText(/^NO CANDIDATES nothing to compare/, { timeout: 60_000 });
  await expect(page.locator("#rec-verdict")).toHaveClass(/verdict-none/);
});

test("a Hugging Face model's export keeps every field the candidate did not change", async ({ page }) => {
  await open(page, "hf/qwen3-8b.json");
  await page.click("#rec-constraints summary");
  await page.fill("#rec-tolerance", "3");
  await page.click("#recommend-button");
  await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
  const base = JSON.parse(readFileSync(path.join(here, "../../examples/models/hf/qwen3-8b.json"), "utf8"));
  const row = page.locator("#rec-table tbody tr:not(.baseline)").first();
  const [hf] = await Promise.all([page.waitForEvent("download"), row.locator('button[data-export="hf"]').click()]);
  const config = JSON.parse(readFileSync((await hf.path())!, "utf8"));
  const shape = new Set(["hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                         "intermediate_size", "vocab_size", "num_hidden_layers"]);
  for (const [key, value] of Object.entries(base)) {
    expect(config).toHaveProperty(key);
    if (!shape.has(key)) expect(config[key], key).toEqual(value);
  }
  expect(config.architectures).toEqual(["Qwen3ForCausalLM"]);
  expect(config.max_position_embeddings).toBe(40960);
  expect(config.rope_theta).toBe(base.rope_theta);
});

for (const width of [900, 1280]) {
  test(`the recommendation table fits ${width} px: reasons wrap, and a wide table says it scrolls`, async ({ page }) => {
    await page.setViewportSize({ width, height: 1000 });
    await open(page, "hf/gpt2.json");
    await page.click("#recommend-button");
    await expect(page.locator("#rec-table tbody tr").first()).toBeVisible({ timeout: 60_000 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    // The reasons wrap inside their column (a cell taller than one line, no wider than 30rem).
    const why = page.locator("#rec-table tbody tr:not(.baseline) td.why").first();
    const box = (await why.boundingBox())!;
    expect(box.width).toBeLessThanOrEqual(30 * 16 + 16);
    // Either the table fits its panel, or the page says it scrolls.
    const wider = await page.evaluate(() => {
      const s = document.getElementById("rec-scroll")!;
      return s.scrollWidth > s.clientWidth + 1;
    });
    await expect(page.locator("#rec-scroll-hint")).toBeVisible({ visible: wider });
    // The reasons column is reachable: scrolled into view, its text is on screen.
    await why.scrollIntoViewIfNeeded();
    const seen = (await why.boundingBox())!;
    expect(seen.x).toBeGreaterThanOrEqual(0);
    expect(seen.x).toBeLessThan(width);
    await page.screenshot({ path: shots(`recommend-${width}`), fullPage: true });
  });
}
