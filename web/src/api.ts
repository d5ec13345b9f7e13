// The wavecrest HTTP/JSON gateway (wavecrest-server --http_listen), typed for the fields the
// dashboard reads. Messages follow the protobuf JSON mapping: int64 fields arrive as strings,
// enums as their full names (SOURCE_PREDICTED), unset fields are absent. Every call the dashboard
// makes to the server goes through this file: ROUTES names each route once, and a function per
// route below calls it.

/**
 * The server's routes that the dashboard calls, each written once. tests/server/web_routes_test.cc
 * holds this list to the gateway's route table (server/http_routes.cc, plus GET /v1/health) and
 * checks that no other file of web/src names a /v1/ path: keep one `{ method, path }` a line.
 */
export const ROUTES = {
  health: { method: "GET", path: "/v1/health" },
  devices: { method: "GET", path: "/v1/devices" },
  models: { method: "GET", path: "/v1/models" },
  parseModel: { method: "POST", path: "/v1/parse-model" },
  analyze: { method: "POST", path: "/v1/analyze" },
  recommend: { method: "POST", path: "/v1/recommend" },
  sweep: { method: "POST", path: "/v1/sweep" },
  exportModel: { method: "POST", path: "/v1/export-model" },
} as const;

type Route = (typeof ROUTES)[keyof typeof ROUTES];

export type Int64 = string | number | undefined;

export function int(v: Int64): number {
  return v === undefined ? 0 : Number(v);
}

export interface FieldViolation {
  field: string;
  description: string;
}

/** An error from the gateway: the gRPC code, the message and the fields at fault. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly httpStatus: number,
    readonly fieldViolations: FieldViolation[] = [],
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export interface Progress {
  done?: Int64;
  total?: Int64;
  message?: string;
}

export type Source = "SOURCE_PREDICTED" | "SOURCE_MEASURED" | "SOURCE_CACHED" | string;

export interface ModelSpec {
  name?: string;
  hidden_size?: Int64;
  num_attention_heads?: Int64;
  num_kv_heads?: Int64;
  head_dim?: Int64;
  num_layers?: Int64;
  ffn_hidden_size?: Int64;
  vocab_size?: Int64;
  seq_length?: Int64;
  micro_batch_size?: Int64;
  tensor_parallel?: Int64;
  mlp?: string;
  dtype?: string;
  [key: string]: unknown;
}

export interface GemmShape {
  m?: Int64;
  n?: Int64;
  k?: Int64;
  batch?: Int64;
}

export interface Alignment {
  largest_pow2?: Int64;
  meets_rule?: boolean;
}

export interface GemmAnalysis {
  gemm: {
    name: string;
    pass?: string;
    shape: GemmShape;
    layout?: string;
    dtype?: string;
    flops?: number;
    count?: Int64;
    fused_attention?: boolean;
  };
  step_flop_share?: number;
  m_alignment?: Alignment;
  n_alignment?: Alignment;
  k_alignment?: Alignment;
  time_s?: number;
  tflops?: number;
  bound?: string;
  tile?: {
    tile_m?: Int64;
    tile_n?: Int64;
    split_k?: Int64;
    tiles?: Int64;
    waves?: Int64;
    tile_efficiency?: number;
    wave_efficiency?: number;
    alignment_efficiency?: number;
  };
  error_band_p10?: number;
  error_band_p90?: number;
}

export interface RuleViolation {
  id: string;
  paper_rule?: number;
  message: string;
}

export interface Provenance {
  source?: Source;
  method?: string;
  calibration?: string;
  error_band_p10?: number;
  error_band_p90?: number;
}

export interface MemoryEstimate {
  total_bytes?: number;
  capacity_bytes?: number;
  fits?: boolean;
  fits_with_recompute?: boolean;
  kv_cache_bytes?: number;
  /** The pipeline stage (from 0) whose GPU this is: the fullest in training. */
  stage?: Int64;
}

/** What an answer assumes of the work it prices (workload, batch, sequence, KV length, TP). */
export interface Assumed {
  workload?: string;
  seq_length?: Int64;
  micro_batch_size?: Int64;
  kv_cache_length?: Int64;
  tensor_parallel?: Int64;
  dtype?: string;
  attention?: string;
  /** The above in words, as the CLI and the Python client print it. */
  summary?: string;
}

export interface AnalyzeResponse {
  model: ModelSpec;
  gpu: string;
  gemms?: GemmAnalysis[];
  params?: { total_params?: Int64; active_params?: Int64 };
  memory?: MemoryEstimate;
  step_time_s?: number;
  gemm_time_s?: number;
  elementwise_time_s?: number;
  mfu?: number;
  /** Model TFLOP/s per GPU of the answer's step, counted as flop_count says. */
  tflops_per_gpu?: number;
  /** How MFU and TFLOP/s count attention: "full" (the whole s x s product) or "causal" (half). */
  flop_count?: string;
  tokens_per_second_per_gpu?: number;
  rules?: RuleViolation[];
  provenance?: Provenance;
  /** The run, when one was described: then step_time_s, mfu, tokens/s and memory are its. */
  step?: StepBreakdown;
  /** One rank's kernels for one micro-batch, whether or not a run was described. */
  kernels?: { step_time_s?: number; mfu?: number; tokens_per_second_per_gpu?: number };
  /** Decode: bytes read per step over the step time and the GPU's bandwidth. */
  memory_bandwidth_utilization?: number;
  assumed?: Assumed;
  /** Without a run at TP t > 1 (training): the same model as a run on t GPUs, beside the kernels. */
  tensor_parallel_run?: StepBreakdown;
  /** A layout search (plan with GPUs and a global batch, or a run as given that does not fit):
   *  the best few layouts, rank 1 the answer (the fastest that fits). */
  layouts?: LayoutOption[];
  layouts_examined?: Int64;
  layouts_fit?: Int64;
}

/** A training step under parallelism (AnalyzeRequest.run): its components add up to step_time_s. */
export interface StepBreakdown {
  gpus?: Int64;
  nodes?: Int64;
  tensor_parallel?: Int64;
  pipeline_parallel?: Int64;
  data_parallel?: Int64;
  context_parallel?: Int64;
  expert_parallel?: Int64;
  microbatches?: Int64;
  global_batch?: Int64;
  compute_s?: number;
  recompute_s?: number;
  tp_comm_s?: number;
  ep_comm_s?: number;
  cp_comm_s?: number;
  offload_s?: number;
  pp_bubble_s?: number;
  pp_comm_s?: number;
  dp_comm_s?: number;
  optimizer_s?: number;
  step_time_s?: number;
  mfu?: number;
  /** MFU with attention's s × s products counted the other way from flop_count. */
  mfu_other_count?: number;
  tokens_per_second_per_gpu?: number;
  /** Tokens the whole step trains on: global_batch × the sequence length. */
  tokens_per_step?: Int64;
  assumptions?: string[];
  memory?: MemoryEstimate;
  sequence_parallel?: boolean;
  recompute?: string;
  zero_stage?: number;
  offload_activations?: boolean;
  /** Virtual pipeline stages per rank (the interleaved schedule), as given or as planned. */
  interleave?: Int64;
  /** Sequences per micro-batch: the model's, or as planned where the model leaves it unset. */
  micro_batch_size?: Int64;
  /** The planner's error band for this kind of run (measured / predicted - 1, p10 and p90). */
  error_band_p10?: number;
  error_band_p90?: number;
  error_band_kind?: string;
  error_band_runs?: number;
  error_band_gpus?: string[];
  error_band_gpu_checked?: boolean;
  /** Model TFLOP/s per GPU, counted as the answer's flop_count says. */
  tflops_per_gpu?: number;
  /** With RunConfig.train_tokens: the time they take and the GPU-hours, PREDICTED as the step. */
  train_tokens?: number;
  time_to_train_s?: number;
  gpu_hours?: number;
}

/** One layout of a layout search: rank 1 is the answer; `why` says what costs the others time. */
export interface LayoutOption {
  rank?: number;
  step?: StepBreakdown;
  why?: string;
}

export interface RunConfig {
  num_gpus?: number;
  global_batch?: number;
  zero_stage?: number;
  recompute?: string;
  tp_overlap?: number;
  sustained_gemm_stretch?: number;
  interleave?: number;
  no_pp_overlap?: boolean;
  overlap_grad_reduce?: boolean;
  zero3_prefetch?: boolean;
  eager?: boolean;
  /** The rotary embedding as its own kernels beside compiled ones (TorchTitan's complex RoPE). */
  rope_unfused?: boolean;
  moe_unfused_ops?: boolean;
  recompute_moe?: boolean;
  recompute_mla_up_proj?: boolean;
  mtp_layers?: number;
  fsdp_shard?: number;
  ep_overlap?: boolean;
  ep_dispatcher?: string;
  fp8_recipe?: string;
  /** How the loss runs: "fused" (the default) or "eager" (PyTorch's uncompiled FP32 cross_entropy). */
  loss?: string;
  /** Context parallelism's ring: "te" (the default, Transformer Engine's) or "torch" (PyTorch's context_parallel). */
  cp_ring?: string;
  fp8_param_gather?: boolean;
  network?: string;
  sequence_parallel?: boolean;
  offload_activations?: boolean;
  plan?: boolean;
  keep_degrees?: boolean;
  train_tokens?: number;
}

export interface Candidate {
  rank?: number;
  baseline?: boolean;
  model: ModelSpec;
  params?: { total_params?: Int64; active_params?: Int64 };
  memory?: MemoryEstimate;
  param_change?: number;
  step_time_s?: number;
  tokens_per_second_per_gpu?: number;
  speedup?: number;
  speedup_uncertainty?: number;
  mfu?: number;
  source?: Source;
  reasons?: string[];
  beats_baseline?: boolean;
  time_per_output_token_s?: number;
  memory_bandwidth_utilization?: number;
  /** Of a PREDICTED row's step, the share its measured GEMMs take (the budget ran out first). */
  measured_share?: number;
  /** Each change (or coupled bundle: its parts) against the baseline and what it accounts for. */
  knob_gains?: { change?: string; gain?: number; uncertainty?: number; parts?: string[]; required?: boolean }[];
  /** Of the response's tensor_parallel_degrees, those this row is legal for. */
  tensor_parallel_legal?: Int64[];
}

export interface Refusal {
  rule?: string;
  count?: Int64;
  unit?: string;
  description?: string;
  loosen_with?: string;
}

export interface StreamMessage {
  progress?: Progress;
  done?: boolean;
}

export interface RecommendResponse extends StreamMessage {
  candidates?: Candidate[];
  candidates_considered?: Int64;
  shapes_examined?: Int64;
  gemms_measured?: Int64;
  gemms_cached?: Int64;
  gemms_predicted?: Int64;
  gpu?: string;
  mode?: string;
  notes?: string[];
  verdict?: "VERDICT_UNSPECIFIED" | "VERDICT_KEEP" | "VERDICT_CHANGE" | "VERDICT_NO_CANDIDATES";
  verdict_reason?: string;
  refusals?: Refusal[];
  tensor_parallel_degrees?: Int64[];
  tensor_parallel_source?: string;
  speedup_basis?: string;
  /** What every candidate kept of the baseline, and what vary released. */
  held?: { name?: string; description?: string; released?: boolean }[];
  assumed?: Assumed;
}

export interface SweepPoint {
  value: Int64;
  valid?: boolean;
  invalid_reason?: string;
  time_s?: number;
  tflops?: number;
  mfu?: number;
  tokens_per_second_per_gpu?: number;
  total_params?: Int64;
  rules_broken?: string[];
  source?: Source;
  error_band_p10?: number;
  error_band_p90?: number;
}

export interface SweepResponse extends StreamMessage {
  points?: SweepPoint[];
  gpu?: string;
  vary?: string;
  mode?: string;
  gemms_measured?: Int64;
  gemms_cached?: Int64;
  gemms_predicted?: Int64;
  /** Model sweeps: what every point assumes besides the varied dimension. */
  assumed?: Assumed;
}

/** POST /v1/analyze: the model on one GPU, with the training run when one is described. */
export interface AnalyzeRequest {
  model: ModelSpec;
  gpu: string;
  run?: RunConfig;
  /** "full" or "causal" (how MFU counts attention); "" for the server's default. */
  flop_count?: string;
}

/** POST /v1/recommend: the model on one GPU, with the budget and the constraints' fields. */
export interface RecommendRequest {
  model: ModelSpec;
  gpu: string;
  mode: string;
  top: number;
  max_gpu_seconds?: number;
  [constraint: string]: unknown;
}

export interface ListModelsResponse {
  models?: ExampleModel[];
}

export interface SweepRequest {
  model: ModelSpec;
  gpu: string;
  vary: string;
  from: number;
  to: number;
  step: number;
  mode: string;
  max_gpu_seconds?: number;
}

export interface CatalogGpu {
  name: string;
  display_name?: string;
  architecture?: string;
  sm_count?: Int64;
  peak_bf16_tflops?: number;
  memory_bandwidth_gbps?: number;
  dtypes?: string[];
}

export interface WorkerDevice {
  id: string;
  device?: { name?: string; backend?: string; catalog_name?: string };
  up?: boolean;
  restarts?: Int64;
  last_restart_reason?: string;
}

export interface DevicesResponse {
  workers?: WorkerDevice[];
  catalog?: CatalogGpu[];
  cache_entries?: Int64;
  has_cache?: boolean;
}

export interface HealthResponse {
  advisor?: string;
  measure?: string;
  overall?: string;
}

export interface ExampleModel {
  file: string;
  spec: ModelSpec;
  /** The file's text when it is a Hugging Face config.json (the base of a drop-in export). */
  hf_config_json?: string;
}

async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    return errorFromJson(JSON.parse(text), res.status);
  } catch {
    return new ApiError(`HTTP ${res.status}: ${text.slice(0, 200)}`, "UNKNOWN", res.status);
  }
}

function errorFromJson(body: unknown, httpStatus: number): ApiError {
  const e = (body as { error?: Record<string, unknown> }).error ?? {};
  return new ApiError(
    String(e.message ?? `HTTP ${httpStatus}`),
    String(e.code ?? "UNKNOWN"),
    httpStatus,
    (e.field_violations as FieldViolation[] | undefined) ?? [],
    e.retry_after_s === undefined ? undefined : Number(e.retry_after_s),
  );
}

async function getJson<T>(route: Route & { method: "GET" }): Promise<T> {
  const res = await fetch(route.path, { method: route.method });
  if (!res.ok) throw await errorFrom(res);
  return (await res.json()) as T;
}

async function postJson<T>(route: Route & { method: "POST" }, body: unknown, signal?: AbortSignal): Promise<T> {
  const res = await fetch(route.path, {
    method: route.method,
    headers: { "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw await errorFrom(res);
  return (await res.json()) as T;
}

/**
 * POST /v1/export-model: a model as a file's text (format "hf": a config.json, over
 * `baseConfig` when given; "wavecrest": a spec). Errors are thrown as ApiError.
 */
export async function exportModel(
  model: unknown,
  format: "hf" | "wavecrest",
  baseConfig?: string,
): Promise<string> {
  const res = await fetch(ROUTES.exportModel.path, {
    method: ROUTES.exportModel.method,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      model,
      format,
      ...(format === "hf" && baseConfig ? { base_config_json: baseConfig } : {}),
    }),
  });
  if (!res.ok) throw await errorFrom(res);
  return res.text();
}

/** Splits a byte stream of newline-delimited JSON into parsed objects. */
export class NdjsonSplitter {
  private buffer = "";
  private readonly decoder = new TextDecoder();

  push(chunk: Uint8Array): unknown[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    return this.drain(false);
  }

  end(): unknown[] {
    this.buffer += this.decoder.decode();
    return this.drain(true);
  }

  private drain(final: boolean): unknown[] {
    const out: unknown[] = [];
    let nl: number;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) out.push(JSON.parse(line));
    }
    if (final && this.buffer.trim()) {
      out.push(JSON.parse(this.buffer));
      this.buffer = "";
    }
    return out;
  }
}

/**
 * Calls a streaming route. Progress messages go to onProgress; the message with done=true is
 * returned. An {"error": ...} line (an error after the stream began) is thrown as ApiError.
 */
async function postStream<T extends StreamMessage>(
  route: Route & { method: "POST" },
  body: unknown,
  onProgress: (p: Progress) => void,
  signal?: AbortSignal,
): Promise<T> {
  const path = route.path;
  const res = await fetch(path, {
    method: route.method,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok || !res.body) throw await errorFrom(res);
  const reader = res.body.getReader();
  const splitter = new NdjsonSplitter();
  let final: T | undefined;
  const handle = (messages: unknown[]) => {
    for (const m of messages) {
      if ((m as { error?: unknown }).error !== undefined) throw errorFromJson(m, res.status);
      const msg = m as T;
      if (msg.progress) onProgress(msg.progress);
      if (msg.done) final = msg;
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    handle(splitter.push(value));
  }
  handle(splitter.end());
  if (!final) throw new ApiError(`${path}: the stream ended without a result`, "UNAVAILABLE", 0);
  return final;
}

// ---- the routes, one function each ------------------------------------------------------------

/** GET /v1/health: the gRPC health service's view of the server, the advisor and measuring. */
export function fetchHealth(): Promise<HealthResponse> {
  return getJson<HealthResponse>(ROUTES.health);
}

/** GET /v1/devices: the workers, the GPU catalogue and the measurement store's size. */
export function listDevices(): Promise<DevicesResponse> {
  return getJson<DevicesResponse>(ROUTES.devices);
}

/** GET /v1/models: the example models the server offers. */
export function listModels(): Promise<ListModelsResponse> {
  return getJson<ListModelsResponse>(ROUTES.models);
}

/** POST /v1/parse-model: a model file's text (a spec or a Hugging Face config.json) as a spec. */
export function parseModel(text: string): Promise<ModelSpec> {
  return postJson<ModelSpec>(ROUTES.parseModel, text);
}

/** POST /v1/analyze: one GPU's answer for the model (and the run, when one is described). */
export function runAnalyze(request: AnalyzeRequest): Promise<AnalyzeResponse> {
  return postJson<AnalyzeResponse>(ROUTES.analyze, request);
}

/** POST /v1/recommend, streamed: progress to onProgress, the last message returned. */
export function streamRecommend(
  request: RecommendRequest,
  onProgress: (p: Progress) => void,
  signal?: AbortSignal,
): Promise<RecommendResponse> {
  return postStream<RecommendResponse>(ROUTES.recommend, request, onProgress, signal);
}

/** POST /v1/sweep, streamed: progress to onProgress, the last message (every point) returned. */
export function streamSweep(request: SweepRequest, onProgress: (p: Progress) => void): Promise<SweepResponse> {
  return postStream<SweepResponse>(ROUTES.sweep, request, onProgress);
}
