// Validates rendered Kubernetes manifests (a multi-document YAML file) offline: each object
// against its kind's schema (kubernetes-models: the Kubernetes OpenAPI schemas; the
// prometheus-operator CRD schemas for ServiceMonitor), then wavecrest's own deployment rules
// (probes, resources, hardened security context, GPU requests). Exit 1 on any finding.
//
//   node tools/validate-k8s.mjs rendered.yaml
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const file = process.argv[2];
if (!file) {
  console.error("usage: node tools/validate-k8s.mjs rendered.yaml");
  process.exit(2);
}
const docs = parseAllDocuments(readFileSync(file, "utf8")).map((d) => d.toJS()).filter(Boolean);
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
    if (!c.readinessProbe?.grpc || !c.livenessProbe?.grpc) problems.push(`${at}: needs gRPC readiness and liveness probes`);
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
for (const kind of ["Deployment", "StatefulSet", "Service", "PersistentVolumeClaim", "NetworkPolicy",
                    "PodDisruptionBudget", "ServiceMonitor"]) {
  if (!kinds.has(kind)) problems.push(`missing a ${kind}`);
}

if (problems.length > 0) {
  for (const p of problems) console.error(`k8s: ${p}`);
  process.exit(1);
}
console.log(`k8s: ${docs.length} objects valid (${[...kinds].map(([k, n]) => `${n} ${k}`).join(", ")})`);
