"""The map of a verdict analysis on a Dask (distributed) cluster.

Reads a job (JSON): the scheduler's address, the path of the `verdict` the workers run, the
words of its `map` subcommand and the shards of the set (each its first file's index and its
files). Submits one task per shard; each runs `verdict WORDS FILES...` on a worker, where the
files are, with a deadline, and returns what it printed: one JSON line per rank. Writes each
shard's lines to OUT_DIR/shard-START.jsonl, all of them or none. Reduces nothing: verdict does.

Usage:
  python dask_map.py --job JOB.json --output OUT_DIR
Exit status 0 on success; on failure one line `error: ... (hint: ...)` on stderr, status 2.
"""
import argparse
import json
import os
import socket
import subprocess
import sys

try:
    from distributed import Client
except ImportError as e:
    print(f"error: missing Python package: {e} (hint: install `distributed` in VERDICT_PYTHON)",
          file=sys.stderr)
    sys.exit(2)


class Failure(Exception):
    """A failure reported as one `error: ...` line."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors too: one line, status 2
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def run_shard(binary, words, files, timeout):
    """On a worker: `verdict WORDS FILES...`; its stdout, or ("error", message, hint)."""
    host = socket.gethostname()
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        return ("error", f"the verdict binary `{binary}` is missing on worker {host}",
                "install verdict at that path on every worker, or name it with "
                "VERDICT_WORKER_BINARY")
    try:
        done = subprocess.run([binary, *words, *files], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return ("error", f"`verdict map` on worker {host} did not end within {timeout} s",
                "allow longer with VERDICT_ENGINE_TIMEOUT=SECONDS")
    if done.returncode != 0:
        lines = [l.strip() for l in done.stderr.decode("utf-8", "replace").splitlines()]
        lines = [l for l in lines if l]
        err = next((l for l in lines if l.startswith("error:")), lines[-1] if lines else "")
        err = err.removeprefix("error:").strip() or f"exit status {done.returncode}"
        hint = next((l.removeprefix("hint:").strip() + "; " for l in lines
                     if l.startswith("hint:")), "")
        hint += ("a worker reads each file at the path given to verdict: give the set by "
                 "absolute paths on a file system every worker mounts")
        return ("error", f"`verdict map` on worker {host}: {err}", hint)
    return ("ok", done.stdout)


def main():
    ap = Parser(description=__doc__.split("\n")[0])
    ap.add_argument("--job", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    try:
        with open(args.job) as f:
            job = json.load(f)
        address = job["scheduler"]
        try:
            client = Client(address, timeout=10)
        except (OSError, TimeoutError) as e:
            raise Failure(f"cannot reach the Dask scheduler at {address}: {e} (hint: check the "
                          "address, and that `dask scheduler` runs there)")
        with client:
            try:
                client.wait_for_workers(1, timeout=60)
            except TimeoutError:
                raise Failure(f"no Dask worker joined the scheduler at {address} in 60 s "
                              "(hint: start workers with `dask worker ADDRESS`)")
            futures = [client.submit(run_shard, job["binary"], job["words"], s["files"],
                                     job["timeout"], pure=False) for s in job["shards"]]
            results = client.gather(futures)
        for r in results:
            if r[0] == "error":
                raise Failure(f"{r[1]} (hint: {r[2]})")
        os.makedirs(args.output)
        for s, r in zip(job["shards"], results):
            with open(os.path.join(args.output, f"shard-{s['start']:06}.jsonl"), "wb") as f:
                f.write(r[1])
    except Exception as e:  # one line on stderr, status 2
        msg = " ".join(str(e).split()) if str(e) else type(e).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
