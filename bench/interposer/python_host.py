"""bench-interposer --python: the worker, a Python process calling NCCL the way PyTorch does:
through a framework's frames (python_host_framework.py stands in for torch.distributed) into a
C function called with the GIL released (ctypes.CDLL, as PyTorch's bindings release it).

    python3 python_host.py N     prints "op median p99" lines like the C++ worker
"""
import ctypes
import sys
import time

import python_host_framework as dist


def train_step(buf, comm, calls, samples):
    for i in range(calls):
        t0 = time.perf_counter_ns()
        dist.all_reduce(buf, comm)
        samples.append(time.perf_counter_ns() - t0)
        if i % 256 == 255:
            time.sleep(0.0005)


def bursts(buf, comm, n):
    means = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        for _ in range(256):
            dist.all_reduce(buf, comm)
        means.append((time.perf_counter_ns() - t0) * 10 // 256)
        time.sleep(0.0005)
    return means


def main():
    calls = int(sys.argv[1])
    comm = dist.init()
    buf = (ctypes.c_float * 1024)()
    samples = []
    train_step(buf, comm, calls, samples)
    samples.sort()
    print("AllReduce %d %d" % (samples[len(samples) // 2], samples[len(samples) * 99 // 100]))
    means = sorted(bursts(buf, comm, max(1, calls // 256)))
    print("burst:AllReduce %d 0" % means[len(means) // 2])
    dist.destroy(comm)


if __name__ == "__main__":
    main()
