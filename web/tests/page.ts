// What every browser test does with the page: the server's address, where screenshots go, opening
// the dashboard on a model (collecting page and console errors), ticking GPUs, asking the API
// itself, and recording the requests the page sends to a route.
import { expect, test, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

export const url = () => process.env.WAVECREST_URL ?? "";
export const shots = (name: string) =>
  path.join(test.info().project.outputDir, "screenshots", `${name}.png`);

export async function open(page: Page, model = "pythia-2.8b.json") {
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

export async function selectGpus(page: Page, names: string[]) {
  for (const box of await page.locator("#gpu-list input[type=checkbox]").all()) {
    await box.setChecked(names.includes(await box.inputValue()));
  }
}

export async function api(route: string, body: unknown) {
  const r = await fetch(`${url()}${route}`, { method: "POST", headers: { "Content-Type": "application/json" },
                                              body: JSON.stringify(body) });
  return r.json();
}

/** The bodies the page posts to `route` ("/v1/analyze"), as it sends them. */
export function recordRequests(page: Page, route: string): unknown[] {
  const sent: unknown[] = [];
  page.on("request", (r) => {
    if (r.url().endsWith(route)) sent.push(r.postDataJSON());
  });
  return sent;
}

/** Pastes examples/models/hf/`name` into the model box and parses it on the server. */
export async function pasteHfConfig(page: Page, name: string) {
  await page.click("#paste summary");
  const hf = readFileSync(path.resolve(here, "../../examples/models/hf", name), "utf8");
  await page.fill("#model-json", hf);
  await page.click("#parse-button");
}
