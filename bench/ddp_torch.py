"""Data-parallel training of the MLP 784-1024-1024-10 with PyTorch's
DistributedDataParallel over gloo, one process per rank, one thread each:
the reference bench/ddp.sh puts beside dttrain --ranks.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/ddp_torch.py \
        --ranks 2 --batch 64 --steps 100

Each rank times its steps (forward, loss, backward with DDP's bucketed
allreduce, SGD update) on batches already in memory; rank 0 prints one JSON
object like dttrain --json: step_ms_median, step_cpu_ms_median (CPU time of
the rank's process, gloo's threads included), samples_per_s (ranks * batch /
median step). --ranks 1 runs the plain model, without DDP or a process group.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def build(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def run(rank, a, port, out):
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)  # the same initial model on every rank
    widths = [int(v) for v in a.widths.split(",")]
    model = build(widths)
    if a.ranks > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(a.seed * 1000 + rank)  # this rank's shard
    pool = [(torch.randn(a.batch, widths[0], generator=g),
             torch.randint(0, widths[-1], (a.batch,), generator=g)) for _ in range(8)]
    times, cpu = [], []
    for step in range(a.steps + 5):
        x, y = pool[step % len(pool)]
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP: bucket allreduces overlap the backward here
        opt.step()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if step >= 5:  # warm-up: allocation, DDP's first-iteration bucket rebuild
            times.append(dt)
            cpu.append(dc)  # the whole process: gloo's threads included
    med = statistics.median(times)
    if rank == 0:
        out.put({"framework": "pytorch", "torch": torch.__version__, "backend": "gloo",
                 "ranks": a.ranks, "batch_per_rank": a.batch, "steps": a.steps,
                 "step_ms_median": med * 1e3,
                 "step_cpu_ms_median": statistics.median(cpu) * 1e3,
                 "samples_per_s": a.ranks * a.batch / med,
                 "final_loss": float(loss)})
    if a.ranks > 1:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--widths", default="784,1024,1024,10")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.ranks < 1:
        sys.exit("ddp_torch.py: --ranks must be >= 1")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=run, args=(r, a, port, out)) for r in range(a.ranks)]
    for p in procs:
        p.start()
    res = out.get(timeout=600)
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        sys.exit("ddp_torch.py: a rank failed")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
