#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Train one model three ways, one process each, alternated: with PyTorch's
own caching allocator, with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync,
and with libaccel's pool as PyTorch's allocator (libaccel-torch.so through
torch.cuda.memory.CUDAPluggableAllocator). Same seed, same data, and
deterministic kernels: the losses must be identical bit for bit.

Reports each run's mean step time, peak reserved and peak allocated memory,
and the ratios to PyTorch's allocator; exits 1 if the losses differ or a
run fails. Needs a CUDA GPU, and torchvision for resnet18.

    tools/bench/torch_alloc_bench.py [--model resnet18|transformer]
        [--steps 300] [--warmup 20] [--batch 64] [--rounds 2]
        [--lib build/interop/libaccel-torch.so]
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

MODES = ("torch", "cudaMallocAsync", "accel")
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIB = os.path.join(HERE, "..", "..", "build", "interop",
                           "libaccel-torch.so")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=("resnet18", "transformer"),
                   default="resnet18")
    p.add_argument("--steps", type=int, default=300, help="timed steps")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2,
                   help="runs of each mode, alternated")
    p.add_argument("--lib", default=DEFAULT_LIB)
    p.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def use_accel_allocator(torch, lib):
    """libaccel's pool as the allocator: before any CUDA memory is taken."""
    alloc = torch.cuda.memory.CUDAPluggableAllocator(
        lib, "accel_torch_alloc", "accel_torch_free")
    torch.cuda.memory.change_current_allocator(alloc)
    return ctypes.CDLL(lib)


def make_model(torch, name):
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=1000)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    return torch.nn.Sequential(
        torch.nn.Embedding(8192, 512),
        torch.nn.TransformerEncoder(layer, num_layers=6),
        torch.nn.Linear(512, 8192))


def make_batch(torch, name, batch, gen):
    """Random data from a seeded generator on the GPU: the same every run."""
    if name == "resnet18":
        x = torch.randn(batch, 3, 224, 224, device="cuda", generator=gen)
        y = torch.randint(0, 1000, (batch,), device="cuda", generator=gen)
        return x, y
    x = torch.randint(0, 8192, (batch, 128), device="cuda", generator=gen)
    return x, torch.roll(x, -1, dims=1)


def train(torch, args, model, steps, losses, gen):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(steps):
        x, y = make_batch(torch, args.model, args.batch, gen)
        out = model(x)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())


def memory_peaks(torch, mode, lib):
    """Peak reserved and allocated bytes, by the allocator in use."""
    if mode == "accel":
        stat = lib.accel_torch_stat
        stat.restype = ctypes.c_size_t
        stat.argtypes = (ctypes.c_int, ctypes.c_char_p)
        dev = torch.cuda.current_device()
        return stat(dev, b"reserved_peak"), stat(dev, b"requested_peak")
    return torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()


def child(args):
    """One run in this process; prints its figures as one JSON line."""
    import torch
    lib = use_accel_allocator(torch, args.lib) if args.child == "accel" else None
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    # resnet18's pooling backward has no "deterministic" kernel, though
    # each input gets one gradient: warn only, and let the losses tell
    torch.use_deterministic_algorithms(True, warn_only=True)
    warnings.filterwarnings("ignore", message=".*deterministic.*")
    gen = torch.Generator(device="cuda").manual_seed(1)
    model = make_model(torch, args.model).cuda()
    losses = []
    train(torch, args, model, args.warmup, losses, gen)
    torch.cuda.synchronize()
    start = time.perf_counter()
    train(torch, args, model, args.steps, losses, gen)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    reserved, allocated = memory_peaks(torch, args.child, lib)
    print(json.dumps({
        "mode": args.child,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "step_ms": elapsed / args.steps * 1e3,
        "reserved_peak": reserved,
        "allocated_peak": allocated,
        "losses": [float(v).hex() for v in torch.stack(losses).tolist()],
    }))


def run_child(args, mode):
    env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8",
               PYTHONUNBUFFERED="1")
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if mode == "cudaMallocAsync":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode,
           "--model", args.model, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--batch", str(args.batch),
           "--lib", os.path.abspath(args.lib)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        sys.stderr.write(res.stdout + res.stderr)
        print(f"torch_alloc_bench: the {mode} run failed ({res.returncode})")
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


def report(args, runs):
    first = runs["torch"][0]
    print(f"# {args.model}, batch {args.batch}, {args.steps} timed steps after "
          f"{args.warmup}; {first['device']}, torch {first['torch']}; "
          f"{args.rounds} runs of each, alternated")
    base = statistics.median(r["step_ms"] for r in runs["torch"])
    base_reserved = runs["torch"][0]["reserved_peak"]
    print(f"{'allocator':<16} {'step ms':>9} {'x torch':>8} "
          f"{'reserved MiB':>13} {'x torch':>8} {'allocated MiB':>14}")
    for mode in (m for m in MODES if runs[m]):
        step = statistics.median(r["step_ms"] for r in runs[mode])
        reserved = max(r["reserved_peak"] for r in runs[mode])
        allocated = max(r["allocated_peak"] for r in runs[mode])
        print(f"{mode:<16} {step:9.3f} {step / base:8.3f} "
              f"{reserved / 2**20:13.1f} {reserved / base_reserved:8.3f} "
              f"{allocated / 2**20:14.1f}")


def main(argv):
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    if not os.path.exists(args.lib):
        print(f"torch_alloc_bench: {args.lib} is not built (make interop)")
        return 1
    runs = {mode: [] for mode in MODES}
    failed = set()
    for _ in range(args.rounds):
        for mode in MODES:
            r = None if mode in failed else run_child(args, mode)
            if r is None:
                failed.add(mode)
            else:
                runs[mode].append(r)
    if "torch" in failed:
        return 1
    report(args, runs)
    if failed:
        print("torch_alloc_bench: failed: " + ", ".join(sorted(failed)))
        return 1
    reference = runs["torch"][0]["losses"]
    differ = [f"{m} run {i + 1}" for m in MODES
              for i, r in enumerate(runs[m]) if r["losses"] != reference]
    if differ:
        print("torch_alloc_bench: the losses differ from PyTorch's allocator's in: "
              + ", ".join(differ))
        return 1
    print(f"losses identical in all {len(MODES) * args.rounds} runs "
          f"({len(reference)} steps; last {float.fromhex(reference[-1]):.6f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
