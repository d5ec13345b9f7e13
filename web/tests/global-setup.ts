// Starts wavecrest-server with the HTTP gateway serving the built dashboard (dist/) and the
// example models, with --workers auto (an emulating worker where there is no GPU), and stops it
// when the run ends. Tests read the address from WAVECREST_URL.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

export default async function globalSetup(): Promise<() => Promise<void>> {
  const web = path.resolve(here, "..");
  const build = path.resolve(web, process.env.WAVECREST_BUILD_DIR ?? "../build");
  const server = path.join(build, "server", "wavecrest-server");
  if (!existsSync(server)) throw new Error(`${server} not found: build the project first (make build)`);
  if (!existsSync(path.join(web, "dist", "index.html"))) throw new Error("dist/ missing: run `npm run build` first");
  const tmp = mkdtempSync(path.join(tmpdir(), "wavecrest-web-"));
  const portFile = path.join(tmp, "ports.json");
  const child = spawn(
    server,
    [
      "--listen=127.0.0.1:0",
      "--metrics_listen=127.0.0.1:0",
      "--http_listen=127.0.0.1:0",
      `--http_static_dir=${path.join(web, "dist")}`,
      `--http_models_dir=${path.resolve(web, "../examples/models")}`,
      `--port_file=${portFile}`,
      `--cache=${path.join(tmp, "results.db")}`,
      "--workers=auto",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-20000)));
  const deadline = Date.now() + 30_000;
  let port = 0;
  while (Date.now() < deadline && port === 0) {
    if (child.exitCode !== null) throw new Error(`wavecrest-server exited ${child.exitCode}:\n${log}`);
    if (existsSync(portFile)) {
      try {
        port = Number(JSON.parse(readFileSync(portFile, "utf8")).http ?? 0);
      } catch {
        // written but not complete yet
      }
    }
    if (port === 0) await new Promise((r) => setTimeout(r, 100));
  }
  if (port === 0) throw new Error(`wavecrest-server did not write its ports:\n${log}`);
  const url = `http://127.0.0.1:${port}`;
  // Ready when the measure service is SERVING (the worker has started).
  while (Date.now() < deadline) {
    try {
      const h = await (await fetch(`${url}/v1/health`)).json();
      if (h.measure === "SERVING") break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  process.env.WAVECREST_URL = url;
  return async () => {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(tmp, { recursive: true, force: true });
  };
}
