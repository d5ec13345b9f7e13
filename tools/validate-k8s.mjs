// Validates rendered Kubernetes manifests (a multi-document YAML file) offline: each object
// against its kind's schema (kubernetes-models: the Kubernetes OpenAPI schemas; the
// prometheus-operator CRD schemas for ServiceMonitor), then wavecrest's own deployment rules
// (probes, resources, hardened security context, GPU requests). Exit 1 on any finding.
//
//   node tools/validate-k8s.mjs rendered.yaml [Kind,Kind,...]   (kinds the render must hold)
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const file = process.argv[2];
if (!file) {
  console.error("usage: node tools/validate-k8s.mjs rendered.yaml");
  process.exit(2);
}
const docs = parseAllDocuments(readFileSync(file, "utf8")).map((d) => d.toJS()).filter(Boolean);
// kustomize wraps long base64 values of generated Secrets over lines, which Kubernetes' decoder
// skips (Go's base64 ignores newlines) and the schema's "byte" format does not: unwrap them.
for (const s of docs.filter((d) => d.kind === "Secret" && d.data)) {
  for (const k of Object.keys(s.data)) s.data[k] = String(s.data[k]).replace(/\s+/g, "");
}
const problems = [];
const kinds = new Map();

function modulePath(apiVersion, kind) {
  if (apiVersion.startsWith("monitoring.coreos.com/"))
    return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

for (const obj of docs) {
  const where = `${obj.kind}/${obj.metadata?.name ?? "?"}`;
  kinds.set(obj.kind, (kinds.get(obj.kind) ?? 0) + 1);
  let Model;
  try {
    Model = (await import(modulePath(obj.apiVersion, obj.kind)))[obj.kind];
  } catch {
    problems.push(`${where}: no schema for apiVersion ${obj.apiVersion} kind ${obj.kind}`);
    continue;
  }
  try {
    new Model(obj).validate();
  } catch (e) {
    problems.push(`${where}: ${e.message}`);
  }
}

// wavecrest's own rules for every workload.
for (const obj of docs.filter((d) => ["Deployment", "StatefulSet"].includes(d.kind))) {
  const where = `${obj.kind}/${obj.metadata.name}`;
  const pod = obj.spec.template.spec;
  if (pod.securityContext?.runAsNonRoot !== true) problems.push(`${where}: pod must set runAsNonRoot`);
  for (const c of pod.containers) {
    const at = `${where} container ${c.name}`;
    const sc = c.securityContext ?? {};
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${at}: readOnlyRootFilesystem must be true`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation must be false`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) problems.push(`${at}: must drop ALL capabilities`);
    if (!c.resources?.requests || !c.resources?.limits) problems.push(`${at}: needs resource requests and limits`);
    // wavecrest's own programs answer gRPC health; anything else (the database) needs some probe.
    const ours = c.image?.startsWith("wavecrest");
    if (ours && (!c.readinessProbe?.grpc || !c.livenessProbe?.grpc)) problems.push(`${at}: needs gRPC readiness and liveness probes`);
    if (!ours && (!c.readinessProbe || !c.livenessProbe)) problems.push(`${at}: needs readiness and liveness probes`);
  }
  if (obj.metadata.name.includes("worker")) {
    const gpu = pod.containers[0].resources?.limits?.["nvidia.com/gpu"];
    if (String(gpu) !== "1") problems.push(`${where}: a worker pod takes exactly one GPU (nvidia.com/gpu: 1)`);
    if (!(pod.tolerations ?? []).some((t) => t.key === "nvidia.com/gpu")) problems.push(`${where}: needs the GPU toleration`);
  }
  if (obj.metadata.name.includes("server")) {
    if (pod.containers[0].readinessProbe?.grpc?.service !== "wavecrest.v1.Advisor")
      problems.push(`${where}: readiness must be the Advisor service's health`);
  }
}
const required = (process.argv[3] ?? "Deployment,StatefulSet,Service,NetworkPolicy,PodDisruptionBudget").split(",");
for (const kind of required) {
  if (!kinds.has(kind)) problems.push(`missing a ${kind}`);
}
// The servers run as replicas sharing one store: more than one, and a store to share.
for (const d of docs.filter((o) => o.kind === "Deployment" && o.metadata.name === "wavecrest-server")) {
  if (!(d.spec.replicas >= 2)) problems.push(`Deployment/wavecrest-server: run 2+ replicas (got ${d.spec.replicas})`);
  const env = d.spec.template.spec.containers[0].env ?? [];
  if (!env.some((e) => e.name === "WAVECREST_STORE")) problems.push("Deployment/wavecrest-server: replicas need a shared WAVECREST_STORE");
}

if (problems.length > 0) {
  for (const p of problems) console.error(`k8s: ${p}`);
  process.exit(1);
}
console.log(`k8s: ${docs.length} objects valid (${[...kinds].map(([k, n]) => `${n} ${k}`).join(", ")})`);
