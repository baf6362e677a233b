"""One training step of the MLP 784-1024-1024-10 (ReLU, softmax cross-entropy,
plain SGD, float32) in PyTorch, timed as dttrain times libdt's: forward, loss,
backward and update of a batch already in memory, median over the steps.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/compute_torch.py \
        --batch 64 --steps 200 --lr 0.01

Prints one JSON object like dttrain --json. Run by bench/compute.sh."""
import argparse
import json
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widths", default="784,1024,1024,10")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    w = [int(v) for v in a.widths.split(",")]
    layers = []
    for i in range(len(w) - 1):
        layers.append(torch.nn.Linear(w[i], w[i + 1]))
        if i + 2 < len(w):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    loss_fn = torch.nn.CrossEntropyLoss()

    # a fixed pool of batches, like dttrain's synthetic set: no data loading in the timing
    pool = [(torch.randn(a.batch, w[0]), torch.randint(0, w[-1], (a.batch,))) for _ in range(8)]
    times, cpu, losses = [], [], []
    for step in range(a.steps + 5):
        x, y = pool[step % len(pool)]
        t0, c0 = time.perf_counter(), time.thread_time()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        dt, dc = time.perf_counter() - t0, time.thread_time() - c0
        if step >= 5:  # the first steps allocate and warm up
            times.append(dt)
            cpu.append(dc)
            losses.append(loss.item())
    ms = statistics.median(times) * 1e3
    print(json.dumps({
        "impl": "pytorch " + torch.__version__,
        "model": "mlp:" + a.widths, "batch": a.batch, "steps": a.steps,
        "threads": torch.get_num_threads(),
        "step_ms_median": round(ms, 4),
        "step_cpu_ms_median": round(statistics.median(cpu) * 1e3, 4),
        "samples_per_s": round(a.batch / (ms / 1e3), 1),
        "final_loss": round(sum(losses[-10:]) / len(losses[-10:]), 6),
    }))


if __name__ == "__main__":
    main()
