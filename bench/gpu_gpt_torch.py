"""gpu_gpt_torch.py - PyTorch's tiny-GPT training step on the GPU, the peer
of bench/gpu_gpt_step.c: the same model as libdt's dt_gpt_create
(lib/nn/model.c, gpt_block.c): token and position embeddings; pre-norm
blocks, x + proj(attn(qkv(ln1(x)))) then + mproj(gelu(fc(ln2(x)))), GELU's
tanh form, causal multi-head attention, q, k and v side by side in one
C -> 3C product; a final layernorm and an UNTIED head without a bias;
GPT-2's initialisation. The same parameter count, printed by both. The
same batch, tokens and plain SGD; each step's tokens moved up and its loss
read back (loss.item()), as gpu_gpt_step does; fp32 products without TF32.
Median of the timed steps, after 5 of warm-up.

Attention is PyTorch's own scaled_dot_product_attention (its fused kernel
where one takes fp32); --attention math writes the T x T probabilities out
as libdt does, to tell the two apart.

    python3 bench/gpu_gpt_torch.py [--config 512,128,4,4,256] [--batch 8] [--steps 30]
                                   [--attention sdpa|math]
"""
import argparse
import math
import statistics
import sys
import time


def parse_config(p, text):
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        v = []
    if len(v) != 5 or min(v) < 1:
        p.error("--config %r: want VOCAB,CONTEXT,LAYERS,HEADS,CHANNELS, each >= 1" % text)
    if v[4] % v[3]:
        p.error("--config %r: %d channels do not split into %d heads" % (text, v[4], v[3]))
    return v


def build(torch, V, T, L, NH, C, attention):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)  # eps 1e-5, as LN_EPS
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.mproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def attn(self, x):
            B = x.shape[0]
            q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2)
                       for t in self.qkv(x).split(C, dim=2))
            if attention == "sdpa":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                s = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
                mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
                y = s.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C)
            self.lm_head = nn.Linear(C, V, bias=False)  # untied from wte, as libdt's
            # GPT-2's initialisation, as describe_gpt: normal(0, 0.02), the
            # projections into the residual stream by 1/sqrt(2 L)
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    nn.init.zeros_(p)
                elif ".ln" in name or name.startswith("lnf"):
                    nn.init.ones_(p)
                else:
                    std = 0.02 / math.sqrt(2 * L) if "proj.weight" in name else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx):
            pos = torch.arange(T, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for b in self.blocks:
                x = b(x)
            return self.lm_head(self.lnf(x))

    return GPT()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="512,128,4,4,256")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--attention", choices=("sdpa", "math"), default="sdpa")
    a = p.parse_args()
    V, T, L, NH, C = parse_config(p, a.config)
    if a.batch < 1 or a.steps < 1:
        p.error("--batch and --steps must be >= 1")
    try:
        import torch
    except ImportError:
        print("gpu_gpt_torch: skipped: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("gpu_gpt_torch: skipped: no GPU (torch.cuda.is_available() is False)")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    torch.manual_seed(1)
    model = build(torch, V, T, L, NH, C, a.attention).to(dev)
    params = sum(q.numel() for q in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # the tokens of gpu_gpt_step: one fixed stream, the labels its next tokens
    n = a.batch * T
    i = torch.arange(n + 1, dtype=torch.int64)
    stream = (i * 2654435761) % V
    x, y = stream[:n].view(a.batch, T), stream[1:].reshape(a.batch, T)
    times = []
    for s in range(5 + a.steps):
        t0 = time.perf_counter()
        xb, yb = x.to(dev), y.to(dev)
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(model(xb).view(n, V), yb.view(n))
        loss.backward()
        opt.step()
        lv = loss.item()
        if s >= 5:
            times.append(time.perf_counter() - t0)
    print("gpu_gpt_step torch config=%s batch=%d params=%d median_ms=%.4f loss=%.4f "
          "attention=%s" % (a.config, a.batch, params, statistics.median(times) * 1e3, lv,
                            a.attention))
    return 0


if __name__ == "__main__":
    sys.exit(main())
