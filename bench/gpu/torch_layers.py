#!/usr/bin/env python3
"""Times, with PyTorch on one GPU, the layers that `wavecrest time --layers --format json` timed
whole, so that the two figures compare like with like:

- the same one-layer, one-rank shape (the LayerTiming's shape.layer: heads and widths per rank);
- the same work: transformer_layer = norm, QKV, attention, projection, residual, norm, MLP (GELU,
  or SwiGLU with gate and up fused or split), residual; forward, and backward when training (the
  output gradient given, every weight and the input requiring grad); fused_attention = torch's
  scaled_dot_product_attention (cuDNN backend, else flash) on Q, K, V; unfused_attention =
  score bmm, scale + causal mask + softmax, value bmm, with K and V repeated for grouped-query
  attention (Hugging Face's eager attention), and as GPT-NeoX and Megatron-LM run it (REFERENCES
  below: their score GEMM with the scale folded in, their softmax in the input type);
- the same method: the layer captured in a CUDA graph when torch can (eager otherwise, and the
  output says which), a blocking kernel (torch.cuda._sleep) before each sample's start event,
  about 200 ms of warm-up, then samples until (p90 - p10) / median is under the target after at
  least 300 ms sampled, or the budget.
What differs on purpose: PyTorch's own kernels (its norms, activations, softmax and attention
backends). The output records torch, CUDA, cuDNN and the attention backend used.

Unfused attention has three references, each a row's "references" entry (the first is the row's
median_s, the one compare_layers.py scores against; it prints the others beside it):
- "megatron-fused": the score GEMM as torch.baddbmm(beta=0, alpha=1/sqrt(d)) into [b·H, s, s] in
  the input type, one softmax kernel over it (FP32 inside, input type in and out), the value bmm.
  Megatron-LM's and GPT-NeoX's FusedScaleMaskSoftmax (scaled_upper_triang_masked_softmax) does the
  mask inside that one kernel; torch has no such kernel without compiling one, so here the mask is
  left out: the same passes over the scores and the same FLOPs as the fused kernel, the mask's
  compare-and-select (free beside the memory traffic) not done. The work wavecrest's layer engine
  does (docs/deployment.md, "Unfused attention").
- "neox-unfused": the same with the mask applied as GPT-NeoX does without its fused kernel
  (masked_fill_ in place, then softmax): one more read and write of the scores each way.
- "hf-eager": Hugging Face's eager attention: matmul, a separate scale, masked_fill, softmax.
Usage: torch_layers.py LAYERS.json OUT.json   (LAYERS.json: the CLI's JSON envelope)
"""
import json
import math
import sys

import torch
import torch.nn.functional as F

import sampling

DTYPES = {"DTYPE_BF16": torch.bfloat16, "DTYPE_FP16": torch.float16, "DTYPE_FP32": torch.float32,
          "bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def field(d, snake, default=None):
    """A proto-JSON field by its snake_case or camelCase name."""
    if snake in d:
        return d[snake]
    parts = snake.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    return d.get(camel, default)


def is_flash(spec):
    return field(spec, "attention", "ATTENTION_FLASH") in ("ATTENTION_FLASH", "flash")


class Layer:
    """One layer of the LayerTiming's shape, with inputs and the output gradient."""

    def __init__(self, kind, spec, dev, reference="megatron-fused"):
        self.kind = kind
        self.reference = reference  # how unfused attention runs: one of REFERENCES
        self.dtype = DTYPES[field(spec, "dtype", "DTYPE_BF16")]
        self.training = field(spec, "workload", "WORKLOAD_TRAINING") in ("WORKLOAD_TRAINING", "training")
        self.decode = field(spec, "workload", "") in ("WORKLOAD_DECODE", "decode")
        self.flash = is_flash(spec)
        self.b = int(field(spec, "micro_batch_size", 1))
        s = int(field(spec, "seq_length", 2048))
        self.kv_len = int(field(spec, "kv_cache_length", s)) if self.decode else s
        self.q_len = 1 if self.decode else s
        self.H = int(field(spec, "num_attention_heads"))
        self.Hkv = int(field(spec, "num_kv_heads", self.H))
        self.d = int(field(spec, "head_dim"))
        self.h = int(field(spec, "hidden_size"))
        self.f = int(field(spec, "ffn_hidden_size"))
        self.swiglu = field(spec, "mlp", "MLP_GELU") in ("MLP_SWIGLU", "swiglu")
        self.fused_gate_up = field(spec, "fused_gate_up", True) is not False
        self.rms = field(spec, "norm", "NORM_LAYER_NORM") in ("NORM_RMS_NORM", "rmsnorm")
        self.dev = dev
        self.backend = "math"
        g = self.training
        kw = dict(device=dev, dtype=self.dtype)

        def lin(out_f, in_f):
            m = torch.nn.Linear(in_f, out_f, bias=False, **kw)
            m.weight.requires_grad_(g)
            return m

        qkv_out = (self.H + 2 * self.Hkv) * self.d
        T = self.b * self.q_len
        if kind == "transformer_layer":
            norm = torch.nn.RMSNorm if self.rms else torch.nn.LayerNorm
            self.norm1 = norm(self.h, **kw)
            self.norm2 = norm(self.h, **kw)
            self.qkv = lin(qkv_out, self.h)
            self.proj = lin(self.h, self.H * self.d)
            if self.swiglu and not self.fused_gate_up:
                self.gate, self.up = lin(self.f, self.h), lin(self.f, self.h)
            else:
                self.up = lin(2 * self.f if self.swiglu else self.f, self.h)
            self.down = lin(self.h, self.f)
            self.x = torch.randn(self.b, self.q_len, self.h, **kw, requires_grad=g)
            self.dy = torch.randn(self.b, self.q_len, self.h, **kw)
        else:
            self.x = torch.randn(self.b, self.q_len, qkv_out, **kw, requires_grad=g)
            self.dy = torch.randn(self.b, self.q_len, self.H * self.d, **kw)
        if self.decode:
            self.k_cache = torch.randn(self.b, self.Hkv, self.kv_len, self.d, **kw)
            self.v_cache = torch.randn(self.b, self.Hkv, self.kv_len, self.d, **kw)
        del T

    def attention(self, qkv):
        b, s, H, Hkv, d = self.b, self.q_len, self.H, self.Hkv, self.d
        q, k, v = qkv.split([H * d, Hkv * d, Hkv * d], dim=-1)
        q = q.view(b, s, H, d).transpose(1, 2)
        if self.decode:
            k, v = self.k_cache, self.v_cache
        else:
            k = k.view(b, s, Hkv, d).transpose(1, 2)
            v = v.view(b, s, Hkv, d).transpose(1, 2)
        if self.flash:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=not self.decode,
                                               enable_gqa=H != Hkv)
        else:
            k = k.repeat_interleave(H // Hkv, dim=1)
            v = v.repeat_interleave(H // Hkv, dim=1)
            o = unfused_attention(q, k, v, not self.decode, self.reference)
        return o.transpose(1, 2).reshape(b, s, H * d)

    def forward(self):
        if self.kind != "transformer_layer":
            return self.attention(self.x)
        x = self.x
        a = self.proj(self.attention(self.qkv(self.norm1(x))))
        x1 = x + a
        n2 = self.norm2(x1)
        if self.swiglu and not self.fused_gate_up:
            m = F.silu(self.gate(n2)) * self.up(n2)
        elif self.swiglu:
            g, u = self.up(n2).chunk(2, dim=-1)
            m = F.silu(g) * u
        else:
            m = F.gelu(self.up(n2), approximate="tanh")
        return x1 + self.down(m)

    def step(self):
        y = self.forward()
        if self.training:
            y.backward(self.dy)


REFERENCES = ("megatron-fused", "neox-unfused", "hf-eager")


def causal_keep(s, kv_len, dev):
    """True where query i may see key j (j <= i + kv_len - s)."""
    return torch.ones(s, kv_len, device=dev, dtype=torch.bool).tril(kv_len - s)


def unfused_attention(q, k, v, causal, reference):
    """softmax(q·kᵀ/√d [causal]) · v on [b, H, s, d] tensors, as `reference` runs it."""
    b, H, s, d = q.shape
    kv_len = k.shape[2]
    scale = 1.0 / math.sqrt(d)
    if reference == "hf-eager":
        scores = torch.matmul(q, k.transpose(-1, -2)) * scale
        if causal:
            scores = scores.masked_fill(~causal_keep(s, kv_len, q.device), float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)
    if reference not in REFERENCES:
        raise ValueError(f"reference {reference!r}: one of {', '.join(REFERENCES)}")
    # Megatron-LM / GPT-NeoX: the scale folded into the score GEMM (baddbmm, beta 0), scores in
    # the input type, [b·H, s, kv] for the fused softmax.
    q3 = q.reshape(b * H, s, d)
    kt = k.reshape(b * H, kv_len, d).transpose(1, 2)
    scores = torch.baddbmm(torch.empty(b * H, s, kv_len, dtype=q.dtype, device=q.device), q3, kt,
                           beta=0.0, alpha=scale)
    if causal and reference == "neox-unfused":
        scores = scores.view(b, H, s, kv_len)
        scores.masked_fill_(~causal_keep(s, kv_len, q.device), float("-inf"))
        scores = scores.view(b * H, s, kv_len)
    probs = torch.softmax(scores, dim=-1)  # one kernel: input type in and out, FP32 inside
    return torch.bmm(probs, v.reshape(b * H, kv_len, d)).view(b, H, s, d)


def attention_backend(layer):
    """Runs the layer once under the fastest SDPA backend torch accepts; returns its name."""
    if not layer.flash:
        return f"unfused ({layer.reference})"
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        try:
            with sdpa_kernel([be]):
                layer.step()
            torch.cuda.synchronize()
            return name
        except RuntimeError:
            continue
    return "math"


def time_layer(layer, target=0.01, budget=2.0):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = attention_backend(layer)
    backends = {"cudnn": [SDPBackend.CUDNN_ATTENTION], "flash": [SDPBackend.FLASH_ATTENTION],
                "efficient": [SDPBackend.EFFICIENT_ATTENTION]}.get(backend, [SDPBackend.MATH])
    with sdpa_kernel(backends):
        for _ in range(3):  # warm the allocator and autograd before capture
            layer.step()
        torch.cuda.synchronize()
        run, how = layer.step, "eager"
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                layer.step()
            run, how = graph.replay, "graph"
        except RuntimeError:
            torch.cuda.synchronize()
        row = sampling.sample(run, target, budget)
    row.update(launch=how, attention_backend=backend)
    return row


def main(argv):
    doc = json.load(open(argv[1]))
    dev = torch.device("cuda")
    out = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name(0),
           "layers": []}
    for t in doc.get("layers", []):
        shape = t.get("shape", {})
        kind = {"LAYER_KIND_FUSED_ATTENTION": "fused_attention",
                "LAYER_KIND_UNFUSED_ATTENTION": "unfused_attention",
                "LAYER_KIND_TRANSFORMER": "transformer_layer"}.get(shape.get("kind"), shape.get("kind"))
        row = {"key": t.get("key"), "kind": kind}
        spec = shape.get("layer", {})
        try:
            if is_flash(spec):
                row.update(time_layer(Layer(kind, spec, dev)))
            else:
                # Each reference in turn; the first is the row's figure.
                row["references"] = {}
                for ref in REFERENCES:
                    try:
                        row["references"][ref] = time_layer(Layer(kind, spec, dev, ref))
                    except Exception as e:  # noqa: BLE001 - reported, the others go on
                        row["references"][ref] = {"error": f"{type(e).__name__}: {e}"}
                    torch.cuda.empty_cache()
                first = row["references"][REFERENCES[0]]
                row.update(first)
                row["reference"] = REFERENCES[0]
        except Exception as e:  # a layer torch cannot run is reported, the rest go on
            row["error"] = f"{type(e).__name__}: {e}"
        torch.cuda.empty_cache()
        out["layers"].append(row)
        print(json.dumps(row), flush=True)
    json.dump(out, open(argv[2], "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv)
