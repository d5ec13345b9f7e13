// The server's health line and the devices panel: the GPUs to tick, the workers, the cache and the
// catalogue.
import { fetchHealth, int, listDevices } from "../api";
import { enumLabel } from "../format";
import { $, node, setTable } from "../dom";
import { gpuBoxes, refreshGpuChoices, setSelectedGpus, state } from "../state";

export async function refreshHealth() {
  const el = $("health");
  try {
    const h = await fetchHealth();
    el.textContent = `advisor ${h.advisor ?? "?"} · measure ${h.measure ?? "?"}`;
    el.className = `health ${h.overall === "SERVING" ? "ok" : "bad"}`;
  } catch (err) {
    el.textContent = `server unreachable: ${err instanceof Error ? err.message : String(err)}`;
    el.className = "health bad";
  }
}

export async function loadDevices() {
  const d = await listDevices();
  state.devices = d;
  const list = $("gpu-list");
  const kept = new Set(gpuBoxes().filter((b) => b.checked).map((b) => b.value));
  for (const l of Array.from(list.querySelectorAll("label"))) l.remove();
  const withWorker = new Set((d.workers ?? []).filter((w) => w.up).map((w) => w.device?.catalog_name));
  for (const g of d.catalog ?? []) {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = g.name;
    box.name = "gpu";
    const label = node("label");
    label.append(box, `${g.name}${withWorker.has(g.name) ? " (GPU worker)" : ""}`);
    list.appendChild(label);
  }
  // Keep what the user chose across refreshes; at first, the first worker's GPU.
  if (kept.size === 0) kept.add((d.workers ?? []).find((w) => w.up)?.device?.catalog_name ?? "h100-sxm");
  setSelectedGpus([...kept]);
  refreshGpuChoices();

  $("cache-line").textContent = d.has_cache
    ? `Measurement store: ${int(d.cache_entries)} GEMM results held.`
    : "No measurement store configured (--store).";
  setTable(
    $<HTMLTableElement>("worker-table"),
    ["worker", "GPU", "backend", "state", "restarts", "last restart"],
    (d.workers ?? []).map((w) => [
      w.id,
      w.device?.name ?? "–",
      w.device?.backend ?? "–",
      w.up ? "up" : "down",
      String(int(w.restarts)),
      w.last_restart_reason ?? "",
    ]),
  );
  setTable(
    $<HTMLTableElement>("catalog-table"),
    ["name", "GPU", "architecture", "SMs", "BF16 TFLOP/s", "GB/s", "dtypes"],
    (d.catalog ?? []).map((g) => [
      g.name,
      g.display_name ?? "",
      g.architecture ?? "",
      String(int(g.sm_count)),
      g.peak_bf16_tflops ? String(g.peak_bf16_tflops) : "–",
      String(g.memory_bandwidth_gbps ?? "–"),
      (g.dtypes ?? []).map((t) => enumLabel(t, "DTYPE")).join(" "),
    ]),
  );
}
