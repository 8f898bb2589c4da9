#!/usr/bin/env python3
"""Writes an nsys-style SQLite trace (the `gen-large` kind) as PyTorch profiler (Kineto) JSON.

    bench/to_kineto.py TRACE.sqlite OUT.json[.gz]

The same events, as `torch.profiler` lays them out: kernels (`kernel`, pid = device, tid =
stream, `args.device`/`stream`/`correlation`, the demangled name), copies and sets
(`gpu_memcpy` named by copy kind, `gpu_memset`, `args.bytes`), runtime calls (`cuda_runtime`
on the calling pid/tid with `args.correlation`), NVTX push/pop and start/end ranges
(`user_annotation` on their pid/tid), `baseTimeNanoseconds` from the session start's UTC.
`ts`/`dur` are the ns written as µs with three decimals, exactly (integer arithmetic). Rows
are streamed table by table; the output is gzip when its name ends in `.gz`.

The Python standard library only, so that the workload verdict reads as SQLite and as Kineto
is one workload, written twice.
"""

import gzip
import json
import sqlite3
import sys

KINDS = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
         8: "DtoD", 9: "HtoH", 10: "PtoP"}


def micros(ns):
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def tables(c):
    return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def write(src, dst):
    c = sqlite3.connect(f"file:{src}?mode=ro&immutable=1", uri=True)
    have = tables(c)
    base = 0
    if "TARGET_INFO_SESSION_START_TIME" in have:
        base = c.execute("SELECT min(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0] or 0
    names = dict(c.execute("SELECT id, value FROM StringIds"))
    out = gzip.open(dst, "wt", compresslevel=1) if str(dst).endswith(".gz") else open(dst, "w")
    with out:
        out.write('{"schemaVersion": 1, "traceEvents": [\n')
        first = True

        def event(cat, name, pid, tid, start, end, args):
            nonlocal first
            out.write(("" if first else ",\n") + json.dumps(
                {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid},
            )[:-1] + f', "ts": {micros(start)}, "dur": {micros(end - start)}, "args": {json.dumps(args)}}}')
            first = False

        for s, e, dev, stream, corr, name in c.execute(
            'SELECT start, "end", deviceId, streamId, correlationId, demangledName '
            "FROM CUPTI_ACTIVITY_KIND_KERNEL"
        ):
            event("kernel", names[name], dev, stream, s, e,
                  {"device": dev, "stream": stream, "correlation": corr})
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in have:
            for s, e, dev, stream, corr, nbytes, kind in c.execute(
                'SELECT start, "end", deviceId, streamId, correlationId, bytes, copyKind '
                "FROM CUPTI_ACTIVITY_KIND_MEMCPY"
            ):
                event("gpu_memcpy", f"Memcpy {KINDS.get(kind, 'Unknown')} (Device -> Device)", dev,
                      stream, s, e, {"device": dev, "stream": stream, "correlation": corr,
                                     "bytes": nbytes})
        if "CUPTI_ACTIVITY_KIND_MEMSET" in have:
            for s, e, dev, stream, corr, nbytes in c.execute(
                'SELECT start, "end", deviceId, streamId, correlationId, bytes '
                "FROM CUPTI_ACTIVITY_KIND_MEMSET"
            ):
                event("gpu_memset", "Memset (Device)", dev, stream, s, e,
                      {"device": dev, "stream": stream, "correlation": corr, "bytes": nbytes})
        for s, e, tid, corr, name in c.execute(
            'SELECT start, "end", globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME'
        ):
            event("cuda_runtime", names[name], (tid >> 24) & 0xFFFFFF, tid & 0xFFFFFF, s, e,
                  {"correlation": corr})
        if "NVTX_EVENTS" in have:
            for s, e, tid, text, text_id in c.execute(
                'SELECT start, "end", globalTid, text, textId FROM NVTX_EVENTS '
                'WHERE eventType IN (59, 60) AND "end" IS NOT NULL'
            ):
                text = text if text is not None else names.get(text_id, "")
                event("user_annotation", text, (tid >> 24) & 0xFFFFFF, tid & 0xFFFFFF, s, e, {})
        out.write(f'\n], "traceName": "{src.split("/")[-1]}", "baseTimeNanoseconds": {base}}}\n')


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    write(sys.argv[1], sys.argv[2])
