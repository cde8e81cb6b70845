"""PyTorch companion of `cargo run --release -p fusegraph --features cuda
--example train_bench -- --cuda`: the same training steps, timed the same
way (warm-up 5, then 100 timed steps, median/p10/p90, device synchronized
before the clock stops), into bench/results/train_torch.json.

Cases:
  mlp       784-2048-2048-10, batch 256, cross-entropy, Adam; f32 eager,
            bf16 autocast eager, bf16 autocast + torch.compile.
  resnet18  torchvision-style ResNet-18 (CIFAR stem: 3x3 conv, no max pool)
            on random 3x32x32 data (channels last), batch 256, SGD momentum
            0.9, lr 0.1; f32 eager, bf16 autocast eager, bf16 autocast +
            torch.compile, and bf16 autocast + torch.compile with
            mode="reduce-overhead" (its forward and backward replayed as
            CUDA graphs, as fusegraph's captured step is).

Run on the GPU machine: python3 bench/train/train_torch.py
  [--out PATH] [--skip-resnet] [--resnet-reps N (default 50)]
  [--cases TEXT (only the cases whose name contains TEXT)]
  (ResNet-18 compiles for minutes)
"""

import json
import pathlib
import platform
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def timed(step, reps=100, warmup=5):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return {
        "median_ms": statistics.median(times),
        "p10_ms": times[len(times) // 10],
        "p90_ms": times[(9 * len(times)) // 10],
        "reps": reps,
    }


def mlp():
    return nn.Sequential(
        nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10)
    )


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet18(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


def resnet18_step_flops(batch=256):
    """Convolution and classifier FLOPs of one training step (3x forward),
    counted as train_bench counts them."""
    total, side, cin = 2 * batch * 32 * 32 * 64 * 3 * 9, 32, 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            s = stride if block == 0 else 1
            out = side // s
            total += 2 * batch * out * out * cout * cin * 9  # c1
            total += 2 * batch * out * out * cout * cout * 9  # c2
            if s != 1 or cin != cout:
                total += 2 * batch * out * out * cout * cin  # 1x1 shortcut
            side, cin = out, cout
    return 3 * (total + 2 * batch * 512 * 10)


RESNET18_STEP_FLOPS = resnet18_step_flops()
RESNET_REPS = int(sys.argv[sys.argv.index("--resnet-reps") + 1]) if "--resnet-reps" in sys.argv else 50


CASES = sys.argv[sys.argv.index("--cases") + 1] if "--cases" in sys.argv else ""


def step_fn(model, opt, x, y, autocast, compiled):
    def fwd_bwd():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    # compiled: False, True (default mode) or a torch.compile mode name.
    if compiled:
        f = torch.compile(fwd_bwd, mode=None if compiled is True else compiled)
    else:
        f = fwd_bwd

    def step():
        opt.zero_grad(set_to_none=True)
        f()
        opt.step()

    return step


def out_path():
    if "--out" in sys.argv:
        return pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
    return pathlib.Path(__file__).resolve().parents[1] / "results" / "train_torch.json"


def save(out):
    """Written after every case, so a run cut short keeps what it measured."""
    out_path().write_text(json.dumps(out, indent=2))


def main():
    torch.manual_seed(0)
    dev = "cuda"
    out = {
        "machine": {
            "gpu": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "python": platform.python_version(),
        },
        "cases": [],
    }
    x = torch.randn(256, 784, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    for name, autocast, compiled in [
        ("mlp f32 eager", False, False),
        ("mlp bf16 autocast eager", True, False),
        ("mlp bf16 autocast torch.compile", True, True),
    ]:
        if CASES not in name:
            continue
        m = mlp().to(dev)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3, fused=True)
        r = timed(step_fn(m, opt, x, y, autocast, compiled))
        flops = 6 * 256 * (784 * 2048 + 2048 * 2048 + 2048 * 10)
        r.update(name=name, tflops=flops / (r["median_ms"] * 1e-3) / 1e12)
        out["cases"].append(r)
        save(out)
        print(r)
    xi = torch.randn(256, 3, 32, 32, device=dev)
    resnet_cases = [] if "--skip-resnet" in sys.argv else [
        ("resnet18 f32 eager", False, False),
        ("resnet18 bf16 autocast eager", True, False),
        ("resnet18 bf16 autocast torch.compile", True, True),
        ("resnet18 bf16 autocast torch.compile reduce-overhead", True, "reduce-overhead"),
    ]
    for name, autocast, compiled in resnet_cases:
        if CASES not in name:
            continue
        m = ResNet18().to(dev).to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        t0 = time.perf_counter()
        step = step_fn(m, opt, xi.to(memory_format=torch.channels_last), y, autocast, compiled)
        step()  # the first call compiles (minutes for torch.compile)
        torch.cuda.synchronize()
        first_s = time.perf_counter() - t0
        r = timed(step, reps=RESNET_REPS)
        r.update(name=name, first_step_s=first_s, tflops=RESNET18_STEP_FLOPS / (r["median_ms"] * 1e-3) / 1e12)
        out["cases"].append(r)
        save(out)
        print(r)
    save(out)
    print(f"wrote {out_path()}")


if __name__ == "__main__":
    main()
