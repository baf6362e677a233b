"""gpu_mlp_torch.py - PyTorch's MLP training step on the GPU, the peer of
bench/gpu_mlp_step.c: the same widths, batch and plain SGD, each step's
batch moved up and its loss read back (loss.item()), as gpu_mlp_step does;
fp32 products without TF32, as cuBLAS runs them there. Median of the timed
steps, after 5 of warm-up.

    python3 bench/gpu_mlp_torch.py [--widths 784,1024,1024,10] [--batch 256] [--steps 50]
"""
import argparse
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--widths", default="784,1024,1024,10")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=50)
    a = p.parse_args()
    try:
        import torch
    except ImportError:
        print("gpu_mlp_torch: skipped: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("gpu_mlp_torch: skipped: no GPU (torch.cuda.is_available() is False)")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    w = [int(v) for v in a.widths.split(",")]
    layers = []
    for i in range(len(w) - 1):
        layers.append(torch.nn.Linear(w[i], w[i + 1]))
        if i < len(w) - 2:
            layers.append(torch.nn.ReLU())
    dev = torch.device("cuda")
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = (torch.arange(a.batch * w[0]) * 2654435761 % 1000).float().div(1000).view(a.batch, w[0])
    y = torch.arange(a.batch) % w[-1]
    times = []
    for i in range(5 + a.steps):
        t0 = time.perf_counter()
        xb, yb = x.to(dev), y.to(dev)
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        lv = loss.item()
        if i >= 5:
            times.append(time.perf_counter() - t0)
    print("gpu_mlp_step torch widths=%s batch=%d median_ms=%.4f loss=%.4f"
          % (a.widths, a.batch, statistics.median(times) * 1e3, lv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
