import { defineConfig } from "@playwright/test";

// Browser tests of the dashboard against a real wavecrest-server (started by tests/global-setup.ts
// from WAVECREST_BUILD_DIR, default ../build) in Debian's Chromium (CHROMIUM, default
// /usr/bin/chromium): no browser is downloaded.
export default defineConfig({
  testDir: "tests",
  globalSetup: "./tests/global-setup.ts",
  timeout: 120_000,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  outputDir: process.env.WAVECREST_WEB_OUT ?? "test-results",
  use: {
    browserName: "chromium",
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    },
    viewport: { width: 1400, height: 1000 },
    trace: "off",
  },
});
