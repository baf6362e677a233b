"""Sharded data parallelism in PyTorch 1.13 over gloo, one process per rank,
one thread each: the side bench/zero.sh puts beside dttrain --fsdp and
--shard-optimizer. The MLP 784-1024-1024-10 with AdamW:

    OMP_NUM_THREADS=1 /usr/bin/python3 bench/zero_torch.py --mode zero1 --ranks 2

--mode ddp     DistributedDataParallel and AdamW (every state on every rank)
--mode zero1   DistributedDataParallel and ZeroRedundancyOptimizer(AdamW):
               ZeRO stage 1, each rank keeps the optimizer state of its
               part of the parameters
--mode fsdp    FullyShardedDataParallel (FULL_SHARD); PyTorch 1.13 does not
               run it on a CPU (see below): the script says why and exits 3
DDP buckets the gradients with gradient_as_bucket_view=True, so that the
gradients are views into the buckets rather than a second copy (PyTorch's
default keeps both): PyTorch's lowest memory for these modes.

Each rank times its steps (forward, loss, backward with the bucketed
allreduce, optimizer step) on batches already in memory; rank 0 prints one
JSON object: step_ms_median, step_cpu_ms_median (the CPU time of its process,
gloo's threads included), samples_per_s (ranks * batch / median step),
states_bytes (the bytes of its parameters, gradients and optimizer state
tensors after the last step: what ZeRO's formulas count) and rss_peak_kb
(its process's peak resident memory, the Python interpreter and libtorch
included).
"""
import argparse
import copy
import dataclasses
import json
import os
import resource
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


def import_fsdp():
    """torch.distributed.fsdp of Debian's python3-torch 1.13.1 does not import
    under Python 3.11: a dataclass field of torch.distributed._shard has a
    mutable default (a TensorProperties instance), which Python 3.11 refuses.
    For the import only, such defaults are made default factories."""
    original = dataclasses._get_field

    def lenient(cls, name, type_, *rest):
        try:
            return original(cls, name, type_, *rest)
        except ValueError as e:
            if "mutable default" not in str(e):
                raise
            f = cls.__dict__.get(name)
            value = f.default if isinstance(f, dataclasses.Field) else f
            setattr(cls, name, dataclasses.field(default_factory=lambda v=value: copy.deepcopy(v)))
            return original(cls, name, type_, *rest)

    dataclasses._get_field = lenient
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    finally:
        dataclasses._get_field = original
    return FullyShardedDataParallel


def wrap(model, a):
    if a.mode == "fsdp":
        return import_fsdp()(model)
    return torch.nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=True)


def optimizer(model, a):
    if a.mode == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        return ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                       lr=a.lr)
    return torch.optim.AdamW(model.parameters(), lr=a.lr)


def states_bytes(model, opt, a):
    """Parameters, gradients and the optimizer state this rank holds."""
    total = 0
    for p in model.parameters():
        total += p.numel() * p.element_size()
        if p.grad is not None:
            total += p.grad.numel() * p.grad.element_size()
    inner = opt.optim if a.mode == "zero1" else opt  # ZeRO: the local optimizer of the shard
    for state in inner.state.values():
        for v in state.values():
            if torch.is_tensor(v):
                total += v.numel() * v.element_size()
    return total


def run(rank, a, port, out):
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)  # the same initial model on every rank
    widths = [int(v) for v in a.widths.split(",")]
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    try:
        model = wrap(build(widths), a)
        opt = optimizer(model, a)
        loss_fn = torch.nn.CrossEntropyLoss()
        g = torch.Generator().manual_seed(a.seed * 1000 + rank)  # this rank's shard
        pool = [(torch.randn(a.batch, widths[0], generator=g),
                 torch.randint(0, widths[-1], (a.batch,), generator=g)) for _ in range(8)]
        times, cpu = [], []
        for step in range(a.steps + 5):
            x, y = pool[step % len(pool)]
            t0, c0 = time.perf_counter(), time.process_time()
            opt.zero_grad(set_to_none=False)  # gradients stay allocated, as libdt's do
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            if step >= 5:  # warm-up: allocation, DDP's first-iteration bucket rebuild
                times.append(dt)
                cpu.append(dc)
    except Exception as e:  # noqa: BLE001 - the reason is the result here
        if rank == 0:
            out.put({"framework": "pytorch", "mode": a.mode, "error": f"{type(e).__name__}: {e}"})
        dist.destroy_process_group()
        return
    med = statistics.median(times)
    if rank == 0:
        out.put({"framework": "pytorch", "torch": torch.__version__, "backend": "gloo",
                 "mode": a.mode, "ranks": a.ranks, "batch_per_rank": a.batch, "steps": a.steps,
                 "step_ms_median": med * 1e3,
                 "step_cpu_ms_median": statistics.median(cpu) * 1e3,
                 "samples_per_s": a.ranks * a.batch / med,
                 "states_bytes": states_bytes(model, opt, a),
                 "rss_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                 "final_loss": float(loss)})
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["ddp", "zero1", "fsdp"], default="zero1")
    ap.add_argument("--widths", default="784,1024,1024,10")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.ranks < 2:
        sys.exit("zero_torch.py: --ranks must be >= 2 (a process group of one shards nothing)")
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=run, args=(r, a, port, out)) for r in range(a.ranks)]
    for p in procs:
        p.start()
    res = out.get(timeout=600)
    for p in procs:
        p.join()
    print(json.dumps(res))
    if "error" in res:
        sys.exit(3)
    if any(p.exitcode != 0 for p in procs):
        sys.exit("zero_torch.py: a rank failed")


if __name__ == "__main__":
    main()
