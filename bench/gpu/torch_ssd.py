#!/usr/bin/env python3
"""Times one Mamba-2 mixer's chunked scan (SSD), forward and backward, as a plain PyTorch chunked
implementation runs it, beside its four batched products alone: the measurement the planner's
hybrid pricing lacks (docs/cost-model.md, "Hybrid Mamba-2 layers"). The planner prices the scan
as its products, batched GEMMs of 128-row tiles: C·Bᵀ per group (Q × Q × N), the masked scores
times X per head (Q × P × Q), each chunk's state Bᵀ·X (N × P × Q) and the output from the carried
state C·h (Q × P × N); this says what those products take on the device, and what the rest of a
chunked scan (the decays, the mask, the state passing between chunks) adds. Megatron runs
mamba_ssm's Triton kernels, which fuse that rest: a figure for the diagnostic, not a target.

The scan of Dao and Gu 2024 (arXiv 2405.21060, sec. 6), written here from the paper's algorithm:
per chunk, the decay's cumulative sum, L = exp(segment sums) masked causal, Y_diag = (C·Bᵀ ∘ L)·X,
chunk states Bᵀ·(decay ∘ X), states passed between chunks by their decays, Y_off = C·state. Shapes:
Nemotron 3 Nano 30B-A3B's mixer on one GPU (64 heads of 64, 8 groups, state 128, chunks of 128),
8192 tokens; BF16 products, FP32 decays. Method: sampling.py's.

Usage: torch_ssd.py OUT.csv   (writes OUT.csv and prints a table; exit 1 if nothing ran)
"""
import sys

import sampling

CONFIGS = (  # name, batch, seq, heads, head dim, groups, state, chunk
    ("nemotron-3-nano-mixer", 1, 8192, 64, 64, 8, 128, 128),
)
HEADER = ["config", "tokens", "scan_s", "products_s", "non_product_share", "scan_samples",
          "product_samples", "device"]


def scan_and_products(torch, b, s, heads, p, groups, n, q):
    """Two closures, each one forward and backward: the chunked scan, and its products alone."""
    dt, dev = torch.bfloat16, "cuda"
    c = s // q
    rep = heads // groups
    x = torch.randn(b, c, q, heads, p, device=dev, dtype=dt, requires_grad=True)
    bm = torch.randn(b, c, q, groups, n, device=dev, dtype=dt, requires_grad=True)
    cm = torch.randn(b, c, q, groups, n, device=dev, dtype=dt, requires_grad=True)
    a = (-torch.rand(b, c, q, heads, device=dev, dtype=torch.float32) * 0.1).requires_grad_()
    causal = torch.tril(torch.ones(q, q, device=dev, dtype=torch.bool))
    grad_y = torch.randn(b, c, q, heads, p, device=dev, dtype=dt)

    def scan():
        cum = torch.cumsum(a, dim=2)                                   # b c q h
        seg = cum.unsqueeze(3) - cum.unsqueeze(2)                      # b c q q h
        decay = torch.exp(seg.masked_fill(~causal[None, None, :, :, None], float("-inf")))
        cb = torch.einsum("bcign,bcjgn->bcgij", cm, bm)                # C·Bᵀ per group
        cb = cb.repeat_interleave(rep, dim=2).permute(0, 1, 3, 4, 2)  # b c i j h
        y_diag = torch.einsum("bcijh,bcjhp->bcihp", (cb.float() * decay).to(dt), x)
        to_end = torch.exp(cum[:, :, -1:, :] - cum)                    # b c q h
        bh = bm.repeat_interleave(rep, dim=3)                          # b c q h n
        states = torch.einsum("bcjhn,bcjhp->bchnp", bh, (x.float() * to_end[..., None]).to(dt))
        chunk_decay = torch.exp(cum[:, :, -1, :])                      # b c h
        carried = [torch.zeros_like(states[:, 0])]
        for k in range(1, c):  # the state entering chunk k
            carried.append((carried[-1].float() * chunk_decay[:, k - 1, :, None, None]
                            + states[:, k - 1].float()).to(dt))
        carried = torch.stack(carried, dim=1)                          # b c h n p
        ch = cm.repeat_interleave(rep, dim=3)
        y_off = torch.einsum("bcihn,bchnp->bcihp", ch, carried)
        y_off = (y_off.float() * torch.exp(cum)[..., None]).to(dt)
        (y_diag + y_off).backward(grad_y)

    # The four products on tensors of the same shapes, as batched matmuls.
    bb = b * c
    cb_a = torch.randn(bb * groups, q, n, device=dev, dtype=dt, requires_grad=True)
    cb_b = torch.randn(bb * groups, n, q, device=dev, dtype=dt, requires_grad=True)
    sc = torch.randn(bb * heads, q, q, device=dev, dtype=dt, requires_grad=True)
    xs = torch.randn(bb * heads, q, p, device=dev, dtype=dt, requires_grad=True)
    bt = torch.randn(bb * heads, n, q, device=dev, dtype=dt, requires_grad=True)
    cs = torch.randn(bb * heads, q, n, device=dev, dtype=dt, requires_grad=True)
    hs = torch.randn(bb * heads, n, p, device=dev, dtype=dt, requires_grad=True)
    g_cb = torch.randn(bb * groups, q, q, device=dev, dtype=dt)
    g_p = torch.randn(bb * heads, q, p, device=dev, dtype=dt)
    g_s = torch.randn(bb * heads, n, p, device=dev, dtype=dt)

    def products():
        torch.autograd.backward(
            [torch.bmm(cb_a, cb_b), torch.bmm(sc, xs), torch.bmm(bt, xs), torch.bmm(cs, hs)],
            [g_cb, g_p, g_s, g_p])

    return scan, products


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    import torch
    cases = (((name, b * s),
              lambda c=(b, s, heads, p, groups, n, q): scan_and_products(torch, *c))
             for name, b, s, heads, p, groups, n, q in CONFIGS)
    return 0 if sampling.whole_against_parts(argv[0], cases, HEADER) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
