#!/usr/bin/env python3
"""Times one rank's mixture-of-experts block, forward and backward, as PyTorch eager runs it, beside
the same block's expert GEMMs alone, at two micro-batch sizes: how much of the block is not its
GEMMs, and whether that part grows with the tokens (work on the GPU) or stays (a per-layer cost).
Issue 36's MoE diagnostic (bench/data/published-runs-nemo-h100.md) found Megatron-Core's published
MoE runs spending 20-80% of the predicted layer beyond the prediction, growing with the tokens;
this is the measurement that can say where, on one GPU, with no all-to-all.

The block on one rank of an expert-parallel group, routing balanced (as the published benchmarks
force it): T tokens of width h, a router GEMM (h x E) and its top-k, the T*k copies permuted into
expert order (index_select), each of the rank's experts' SwiGLU MLP on its T*k/E_local rows (up
h -> 2f, SiLU(gate) * up, down f -> h; balanced rows, so one bmm per projection), and the copies
weighted and summed back per token (index_add). "GEMMs alone": the two bmm's and the router GEMM on
tensors of the same shapes, forward and backward. Shapes: Qwen3-30B-A3B (h 2048, f 768, 128
experts, top 8; 8 local experts on EP 16) and GPT-OSS-120B (h 2880, f 2880, 128 experts, top 4;
16 local on EP 8), at 4096 and 16384 tokens. BF16, the method of sampling.py.

Usage: torch_moe_block.py OUT.csv   (writes OUT.csv and prints a table; exit 1 if nothing ran)
"""
import sys

import sampling

CONFIGS = (  # name, h, f, experts, top-k, local experts
    ("qwen3-30b-a3b-ep16", 2048, 768, 128, 8, 8),
    ("gpt-oss-120b-ep8", 2880, 2880, 128, 4, 16),
)
TOKENS = (4096, 16384)
HEADER = ["config", "tokens", "block_s", "gemms_s", "non_gemm_share", "block_samples",
          "gemm_samples", "device"]


def block_and_gemms(torch, h, f, experts, k, local, tokens):
    """Two closures, each one forward and backward: the whole block, and its GEMMs alone."""
    dt, dev = torch.bfloat16, "cuda"
    rows = tokens * k  # balanced: the rank's experts get every copy of its share of the tokens
    per = rows // local
    x = torch.randn(tokens, h, device=dev, dtype=dt, requires_grad=True)
    w_router = torch.randn(h, experts, device=dev, dtype=dt, requires_grad=True)
    w_up = (torch.randn(local, h, 2 * f, device=dev, dtype=dt) / h ** 0.5).requires_grad_()
    w_down = (torch.randn(local, f, h, device=dev, dtype=dt) / f ** 0.5).requires_grad_()
    # A fixed balanced routing: copy j of token t to local expert (t*k + j) mod local.
    expert_of = (torch.arange(rows, device=dev) % local)
    order = torch.argsort(expert_of, stable=True)
    token_of = (torch.arange(rows, device=dev) // k)[order]
    grad_out = torch.randn(tokens, h, device=dev, dtype=dt)

    def block():
        logits = x @ w_router
        probs, _ = torch.topk(torch.softmax(logits.float(), dim=-1), k, dim=-1)
        weight = probs.to(dt).reshape(-1)[order]
        copies = x.index_select(0, token_of).view(local, per, h)
        gate, up = torch.bmm(copies, w_up).chunk(2, dim=-1)
        out = torch.bmm(torch.nn.functional.silu(gate) * up, w_down).view(rows, h)
        y = torch.zeros(tokens, h, device=dev, dtype=dt).index_add(0, token_of,
                                                                    out * weight[:, None])
        y.backward(grad_out)

    a = torch.randn(local, per, h, device=dev, dtype=dt, requires_grad=True)
    m = torch.randn(local, per, f, device=dev, dtype=dt, requires_grad=True)
    g_up = torch.randn(local, per, 2 * f, device=dev, dtype=dt)
    g_down = torch.randn(local, per, h, device=dev, dtype=dt)
    g_router = torch.randn(tokens, experts, device=dev, dtype=dt)

    def gemms():
        torch.autograd.backward([x @ w_router, torch.bmm(a, w_up), torch.bmm(m, w_down)],
                                [g_router, g_up, g_down])

    return block, gemms


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    import torch
    cases = (((name, tokens),
              lambda c=(h, ffn, experts, k, local, tokens): block_and_gemms(torch, *c))
             for name, h, ffn, experts, k, local in CONFIGS for tokens in TOKENS)
    return 0 if sampling.whole_against_parts(argv[0], cases, HEADER) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
