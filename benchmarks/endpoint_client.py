"""How many concurrent streams and chunks per second dlbench's endpoint client sustains
on this machine, and how far its TTFT and TPOT stray from the scripted server's known
times as the load grows (docs/serving.md, "The client's own speed").

It runs the product's path, ``dlbench run -P exp.framework=endpoint``, as a closed loop
at each concurrency against the scripted server (``dlbench.frameworks.endpoint.scripted``,
a second process): every answer's first text comes TTFT_MS after its request starts, then
one token every GAP_MS. The error of a figure is the measured value less the scripted
one, so it holds both the client's delay and the scripted server's own lateness (both
run on this machine's cores); the client's CPU share and its lag (sent - scheduled) say
which of the two gave out first.

    python benchmarks/endpoint_client.py [--streams 16,64,128,256] [--prompt-tokens N] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

TTFT_MS, GAP_MS, TOKENS = 50.0, 10.0, 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", default="16,64,128,256")
    parser.add_argument("--prompt-tokens", type=int, default=32,
                        help="each prompt's length (32768: vLLM#39963's long prompts)")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.endpoint_servers import scripted_server

    out = Path(args.out or tempfile.mkdtemp(prefix="endpoint-client-")) / "runs"
    script = {"models": {"bench": {"ttft_ms": TTFT_MS, "gap_ms": GAP_MS}}}
    with scripted_server(script) as url:
        proc = subprocess.run(
            [sys.executable, "-m", "dlbench", "run", "-P", "exp.framework=endpoint",
             "-P", f"endpoint.url={url}", "-P", "endpoint.model=bench",
             "-P", "exp.phase=generate", "-V", f"exp.replica_batch=[{args.streams}]",
             "-P", f"exp.output_tokens={TOKENS}", "-P", f"exp.prompt_tokens={args.prompt_tokens}",
             "-P", "exp.scenario_min_duration=5", "-P", "exp.scenario_min_queries=100",
             "-P", "monitor.enabled=false", "--out", str(out)],
            capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return 1
    query = subprocess.run([sys.executable, "-m", "dlbench", "query", "--input", str(out),
                            "--format", "json"], capture_output=True, text=True, check=True)
    print(f"scripted: TTFT {TTFT_MS:g} ms, one token every {GAP_MS:g} ms, {TOKENS} tokens; "
          f"prompts of {args.prompt_tokens} tokens")
    print(f"{'streams':>7} {'chunks/s':>9} {'TTFT p99 err':>12} {'TPOT p99 err':>12} "
          f"{'ITL p99 err':>11} {'lag p99':>8} {'client CPU':>10} {'kept up':>7}")
    for r in json.loads(query.stdout)["data"]:
        chunks = r["results.output_tokens_per_s"]  # one token per chunk
        print(f"{r['exp.replica_batch']:>7} {chunks:>9.0f} "
              f"{r['results.ttft_p99'] - TTFT_MS:>9.2f} ms "
              f"{r['results.tpot_p99'] - GAP_MS:>9.2f} ms "
              f"{r['results.itl_p99'] - GAP_MS:>8.2f} ms {r['results.client_lag_p99']:>5.2f} ms "
              f"{r['results.client_cpu_percent']:>8.1f} % {r['results.client_kept_up']!s:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
