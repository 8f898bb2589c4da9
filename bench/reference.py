"""An independent reference for the benchmark's agreement checks (`bench/run --smoke`).

Reads an Nsight Systems SQLite export with the standard library alone (no verdict code, no
DuckDB) and computes, by brute force:

- the overlap breakdown of one device in a window with contain semantics: the kernels with
  start >= A and end <= B; compute = kernels whose short name does not contain "nccl"
  (case-insensitive), NCCL = those whose name does; C and N are the unions of their intervals;
  overlap = |C ∩ N|, compute_only = |C| - overlap, nccl_only = |N| - overlap, total = the span
  of the kept kernels (last end - first start), idle = total - |C ∪ N|;
- the number of kernels whose short name contains a text (case-sensitive) in a window with
  contain semantics, over every device.

Windows are `START:END` in seconds, parsed exactly as decimals. Times are integer ns.

    python3 bench/reference.py overlap TRACE --device 3 --window 60:70
    python3 bench/reference.py count TRACE --match flash_bwd --window 60:70
"""

import argparse
import json
import sqlite3
import sys
from decimal import Decimal


def parse_window(text):
    """`A:B` in decimal seconds -> (a_ns, b_ns), exactly."""
    a, b = text.split(":")
    scale = Decimal(1_000_000_000)
    a_ns, b_ns = Decimal(a) * scale, Decimal(b) * scale
    if a_ns != a_ns.to_integral_value() or b_ns != b_ns.to_integral_value():
        raise ValueError(f"window {text} is finer than 1 ns")
    return int(a_ns), int(b_ns)


def open_ro(path):
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def kernels(conn, window, device=None):
    """(start, end, short name) of the kernels fully inside the window, on one device or all."""
    a, b = window
    sql = (
        "SELECT k.start, k.[end], s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.shortName WHERE k.start >= ? AND k.[end] <= ?"
    )
    args = [a, b]
    if device is not None:
        sql += " AND k.deviceId = ?"
        args.append(device)
    return conn.execute(sql, args).fetchall()


def union(intervals):
    """The union of [start, end) intervals as a sorted list of disjoint intervals."""
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            if e > merged[-1][1]:
                merged[-1][1] = e
        else:
            merged.append([s, e])
    return merged


def length(intervals):
    return sum(e - s for s, e in intervals)


def intersection_length(xs, ys):
    """|X ∩ Y| of two sorted disjoint interval lists (two pointers)."""
    i = j = total = 0
    while i < len(xs) and j < len(ys):
        lo = max(xs[i][0], ys[j][0])
        hi = min(xs[i][1], ys[j][1])
        if hi > lo:
            total += hi - lo
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap(path, device, window):
    conn = open_ro(path)
    rows = kernels(conn, parse_window(window), device)
    conn.close()
    nccl = [(s, e) for s, e, name in rows if "nccl" in name.lower()]
    compute = [(s, e) for s, e, name in rows if "nccl" not in name.lower()]
    c, n = union(compute), union(nccl)
    both = intersection_length(c, n)
    busy = length(union(compute + nccl))
    total = (max(e for _, e, _ in rows) - min(s for s, _, _ in rows)) if rows else 0
    return {
        "compute_only_ns": length(c) - both,
        "nccl_only_ns": length(n) - both,
        "overlap_ns": both,
        "idle_ns": total - busy,
        "total_ns": total,
        "compute_kernels": len(compute),
        "nccl_kernels": len(nccl),
        "span_ns": [min(s for s, _, _ in rows), max(e for _, e, _ in rows)] if rows else None,
    }


def count(path, match, window):
    conn = open_ro(path)
    rows = kernels(conn, parse_window(window))
    conn.close()
    return sum(1 for _, _, name in rows if match in name)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("overlap")
    o.add_argument("trace")
    o.add_argument("--device", type=int, required=True)
    o.add_argument("--window", required=True)
    c = sub.add_parser("count")
    c.add_argument("trace")
    c.add_argument("--match", required=True)
    c.add_argument("--window", required=True)
    args = p.parse_args(argv)
    if args.cmd == "overlap":
        print(json.dumps(overlap(args.trace, args.device, args.window), indent=2))
    else:
        print(count(args.trace, args.match, args.window))


if __name__ == "__main__":
    main(sys.argv[1:])
