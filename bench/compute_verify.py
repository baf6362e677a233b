"""Checks libdt's MLP against PyTorch on the same numbers: dttrain --dump
writes one step's initial parameters, batch, loss and gradients; this script
loads the parameters into torch.nn.Linear layers, runs the same batch, and
compares the loss and every gradient (relative error of each tensor,
|g_dt - g_torch| / |g_torch|, must be below 1e-5).

    build/bin/dttrain --model mlp:64,32,16,10 --data digits --batch 16 --dump build/step.bin
    /usr/bin/python3 bench/compute_verify.py build/step.bin

Not a test of the suite (it needs PyTorch); bench/compute.sh runs it."""
import struct
import sys

import torch


def read_dump(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"DTDUMP1\0":
        sys.exit(f"{path}: not a dttrain dump")
    pos = 8

    def ints(n):
        nonlocal pos
        v = struct.unpack_from(f"<{n}q", data, pos)
        pos += 8 * n
        return list(v)

    def tensor(n, fmt="f", dtype=torch.float32):
        nonlocal pos
        v = struct.unpack_from(f"<{n}{fmt}", data, pos)
        pos += 4 * n
        return torch.tensor(v, dtype=dtype)

    layers = ints(1)[0]
    widths = ints(layers + 1)
    batch = ints(1)[0]
    nparams = sum(widths[i] * widths[i + 1] + widths[i + 1] for i in range(layers))
    params = tensor(nparams)
    x = tensor(batch * widths[0]).reshape(batch, widths[0])
    y = tensor(batch, "i", torch.int64)
    loss = tensor(1)[0].item()
    grads = tensor(nparams)
    return widths, params, x, y, loss, grads


def main():
    widths, params, x, y, dt_loss, dt_grads = read_dump(sys.argv[1])
    torch.manual_seed(0)
    layers, views, off = [], [], 0
    for i in range(len(widths) - 1):
        lin = torch.nn.Linear(widths[i], widths[i + 1])
        n_w, n_b = widths[i + 1] * widths[i], widths[i + 1]
        # libdt's layout per layer: weight (out, in) row-major, then bias (out)
        with torch.no_grad():
            lin.weight.copy_(params[off:off + n_w].reshape(widths[i + 1], widths[i]))
            lin.bias.copy_(params[off + n_w:off + n_w + n_b])
        views.append((f"fc{i + 1}.weight", lin.weight, off, n_w))
        views.append((f"fc{i + 1}.bias", lin.bias, off + n_w, n_b))
        off += n_w + n_b
        layers.append(lin)
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()

    worst = abs(dt_loss - loss.item()) / abs(loss.item())
    print(f"loss: libdt {dt_loss:.7f}  pytorch {loss.item():.7f}  relative {worst:.2e}")
    for name, p, o, n in views:
        g = p.grad.reshape(-1).double()
        d = dt_grads[o:o + n].double()
        rel = ((d - g).norm() / g.norm()).item() if g.norm() > 0 else (d.norm()).item()
        worst = max(worst, rel)
        print(f"{name:12s} {n:8d} values  relative error {rel:.2e}")
    ok = worst < 1e-5
    print(f"worst relative error {worst:.2e}: {'OK' if ok else 'FAIL'} (limit 1e-5)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
