"""Network SRAM sizing speed: ResNet-50 over 20 SRAM sizes, best schedule per layer with estimated cycles.

    python bench/bench_network.py [--network resnet50] [--points 20] [--dask]

Side by side in one run: the same sweep in this process (1 worker) and on the process pool (2 workers; with
--dask also a local Dask cluster of 2 workers), each timed end to end (import of the network and its searches,
not Python's start-up). Prints the seconds, the speed-up, the seconds per search (a distinct layer shape or a
distinct chain, all sizes from one enumeration) and per layer and size, and checks that the executors' JSON is byte-identical. The aim is
under 30 s with the process pool on a 2-core machine (issue 12); ZigZag's LOMA mapper took about 2-8 s per layer
for one SRAM size on this machine (the context figure).
"""

from __future__ import annotations

import argparse
import json
import time

from dsasim.architect.studies.executor import open_executor
from dsasim.architect.studies.network import load_network
from dsasim.architect.studies.network_eval import sweep_network  # fusion on: chains swept as chains
from dsasim.architect.studies.sweep import parse_sizes
from dsasim.hardware import preset


def timed(network_name: str, sizes: list[int], executor_spec: str, jobs: int) -> tuple[float, str, int, int]:
    """(seconds, sweep JSON, searches (distinct layer shapes outside chains + distinct chains), layers) of one
    sweep on one executor."""
    start = time.perf_counter()
    executor = open_executor(executor_spec, jobs)
    try:
        network = load_network(network_name)
        sweep = sweep_network(network, [preset("blog")], sizes, executor, within=0.10)
    finally:
        executor.close()
    seconds = time.perf_counter() - start
    in_chain = {i for nc in network.chains for i in nc.members}
    searches = len({x.problem for i, x in enumerate(network.layers) if x.problem is not None and i not in in_chain})
    searches += len({nc.chain for nc in network.chains})
    return seconds, json.dumps(sweep.to_json()), searches, len(network.layers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--dask", action="store_true", help="also time a local Dask cluster of 2 workers")
    args = parser.parse_args()
    sizes = parse_sizes(f"64KiB:8MiB:{args.points}")
    runs = [("in process", "process", 1), ("process pool, 2 workers", "process", 2)]
    if args.dask:
        runs.append(("local Dask cluster, 2 workers", "dask", 2))
    results = []
    for label, spec, jobs in runs:
        seconds, js, shapes, layers = timed(args.network, sizes, spec, jobs)
        results.append((label, seconds, js))
        print(f"{args.network}, {len(sizes)} SRAM sizes, {label:30s} {seconds:6.1f} s  "
              f"({seconds / shapes:.2f} s per search of {shapes}: distinct layer shapes and chains, "
              f"{seconds / (layers * len(sizes)) * 1000:.1f} ms per layer and size over {layers} layers)")
    base = results[0][1]
    for label, seconds, _ in results[1:]:
        print(f"speed-up of {label}: {base / seconds:.2f}x")
    print("JSON byte-identical across executors:", all(js == results[0][2] for _, _, js in results))


if __name__ == "__main__":
    main()
