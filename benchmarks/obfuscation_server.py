"""Loopback load test of the obfuscation server (issue 8 goal: >= 50 requests/s of 64-token
inputs on 2 cores, MiniLM).

The server runs in a subprocess (``safeshare.obfuscate.server`` under uvicorn, MiniLM, max 64
tokens); this process prepares obfuscated 64-token requests with ``ObfuscatingClient``
(untrained transform: the server's cost does not depend on the transform), then sends them from
``--concurrency`` keep-alive connections until ``--requests`` are answered or ``--seconds``
pass, whichever is first.  It prints requests/s, latency percentiles, the server's CPU seconds,
and the load average (the machine is shared: read the figure against it).

    python benchmarks/obfuscation_server.py [--requests 600 --seconds 30 --concurrency 4]
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import numpy as np

TEXT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "text"
TOKENS = 64


def serve(port: int, parallel: int) -> None:
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.server import create_app
    from safeshare.obfuscate.server import serve as run

    app = create_app(load_model(max_length=TOKENS), parallel=parallel)
    run(app, port=port, torch_threads=1, log_level="warning")


def wait_until_up(url: str, process: subprocess.Popen, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"the server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/v1/info", timeout=5):
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)
    sys.exit(f"the server did not answer within {timeout} s")


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def texts_of_64_tokens(count: int) -> list[str]:
    lines = (TEXT / "sms_spam_collection.tsv").read_text(encoding="utf-8").splitlines()
    messages = [line.split("\t", 1)[1] for line in lines if "\t" in line]
    out, start = [], 0
    while len(out) < count:  # join consecutive messages until well past 64 tokens
        out.append(" ".join(messages[start : start + 8]))
        start += 8
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port, args.parallel)
        return
    url = f"http://127.0.0.1:{args.port}"
    command = [sys.executable, __file__, "--serve", "--port", str(args.port)]
    server = subprocess.Popen([*command, "--parallel", str(args.parallel)])
    try:
        wait_until_up(url, server)
        run_load(url, server.pid, args)
    finally:
        server.terminate()
        server.wait(30)


def run_load(url: str, server_pid: int, args: argparse.Namespace) -> None:
    from safeshare.obfuscate.client import ObfuscatingClient
    from safeshare.obfuscate.model import load_model
    from safeshare.obfuscate.transform import ObfuscationTransform

    model = load_model(max_length=TOKENS)
    client = ObfuscatingClient(ObfuscationTransform.for_model(model), url, model=model)
    texts = texts_of_64_tokens(32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # every text is cut to 64 tokens
        started = time.perf_counter()
        bodies = [client.request_body([text]) for text in texts]
        obfuscate_ms = 1000 * (time.perf_counter() - started) / len(texts)
    assert all(b'"shape": [1, 64, 384]' in body for body in bodies)
    print(
        f"request: 1 text x {TOKENS} tokens x 384 float16 = {len(bodies[0])} bytes of JSON; "
        f"client-side obfuscation {obfuscate_ms:.1f} ms a text (not in the rate below)"
    )
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    failures: list[int] = []
    issued = 0
    lock = threading.Lock()
    load_before = os.getloadavg()
    cpu_before = cpu_of(server_pid)
    start = time.perf_counter()
    deadline = start + args.seconds

    def worker(index: int) -> None:
        nonlocal issued
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"Content-Type": "application/json"}
        while time.perf_counter() < deadline:
            with lock:
                if issued >= args.requests:
                    break
                issued += 1
                body = bodies[issued % len(bodies)]
            sent = time.perf_counter()
            connection.request("POST", "/v1/embed", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            with lock:
                latencies.append(time.perf_counter() - sent)
                if response.status != 200:
                    failures.append(response.status)
        connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    server_cpu = cpu_of(server_pid) - cpu_before
    load_after = os.getloadavg()
    done = len(latencies)
    ms = 1000 * np.asarray(latencies)
    print(
        f"{done} requests in {elapsed:.1f} s from {args.concurrency} connections, server "
        f"parallel {args.parallel} x 1 torch thread: "
        f"{done / elapsed:.1f} requests/s (goal >= 50); {len(failures)} failed"
    )
    print(
        f"latency ms: median {np.median(ms):.1f}, p95 {np.percentile(ms, 95):.1f}, "
        f"max {ms.max():.1f}; server CPU {server_cpu:.1f} s ({server_cpu / done * 1000:.1f} ms "
        "a request)"
    )
    print(
        f"cores {os.cpu_count()}; load average before {load_before[0]:.2f} "
        f"(5 min {load_before[1]:.2f}), after {load_after[0]:.2f}: other work shares the cores"
    )


if __name__ == "__main__":
    main()
