#!/usr/bin/env python3
"""Reference values of Holistic Trace Analysis (HTA) over the Kineto fixtures.

Run from the repository root, in an environment with `pip install HolisticTraceAnalysis`:

    python3 tests/kineto/hta_reference.py > tests/kineto/hta_reference.json

For each fixture folder (one trace per rank) it loads the traces with HTA as HTA reads them
(`ts`/`dur` as float µs; `HTA_DISABLE_NS_ROUNDING=1`, else HTA rounds every event inward to
whole µs) and keeps every GPU event: HTA's own filter drops the kernels launched after the
last `ProfilerStep` starts, which is a choice of HTA's, not of the trace. Over those events it
records HTA's temporal breakdown and communication/computation overlap (its own analyzer
functions) and the kernel count and summed `dur` per device and stream (from HTA's frame).

Beside HTA's numbers, it records how many `ts`/`dur` values of each file lose a ns through
a float (`int(float(text) * 1000)` against the decimal digits read exactly), with examples.
"""

import gzip
import json
import os
import platform
import re
import sys
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

import logging  # noqa: E402

logging.disable(logging.WARNING)

from hta.analyzers.breakdown_analysis import BreakdownAnalysis  # noqa: E402
from hta.analyzers.communication_analysis import CommunicationAnalysis  # noqa: E402
from hta.common.trace import Trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "kineto"
SETS = ["nccl_parser_config", "trace_filter"]


def load(folder: Path) -> Trace:
    t = Trace(trace_dir=str(folder))
    t.parse_traces()
    # HTA's `load_traces` also aligns ranks to 0 and filters kernels by the last
    # ProfilerStep; the alignment is kept (it is HTA's float arithmetic), the filter is not.
    t._align_all_ranks()
    t.is_parsed = True
    return t


def float_losses(path: Path) -> dict:
    raw = gzip.open(path).read().decode() if path.suffix == ".gz" else path.read_text()
    values = re.findall(r'"(ts|dur)": ?(-?[0-9][0-9.]*)', raw)
    lost = [s for _, s in values if int(float(s) * 1000) != int(Decimal(s) * 1000)]
    return {"values": len(values), "lose_1ns": len(lost), "examples": lost[:5]}


def exact_kernels(path: Path) -> list:
    """Kernel count and summed `dur` in ns per device and stream, from the decimal digits
    (Python's `Decimal`), without HTA."""
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    events = json.loads(raw, parse_float=Decimal)["traceEvents"]
    per = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            key = (int(e["args"]["device"]), int(e["args"]["stream"]))
            n, ns = per.get(key, (0, 0))
            per[key] = (n + 1, ns + int(Decimal(e["dur"]) * 1000))
    return [
        {"device": d, "stream": s, "count": n, "dur_ns": ns}
        for (d, s), (n, ns) in sorted(per.items())
    ]


def main() -> None:
    out = {
        "hta": version("HolisticTraceAnalysis"),
        "pandas": version("pandas"),
        "numpy": version("numpy"),
        "python": platform.python_version(),
        "mode": "HTA_DISABLE_NS_ROUNDING=1; every GPU event (no ProfilerStep filter)",
        "sets": {},
    }
    for name in SETS:
        folder = ROOT / name
        t = load(folder)
        sym = t.symbol_table.get_sym_table()
        temporal = BreakdownAnalysis.get_temporal_breakdown(t, visualize=False)
        overlap = CommunicationAnalysis.get_comm_comp_overlap(t, visualize=False)
        ranks = {}
        for rank, df in sorted(t.traces.items()):
            k = df[df["stream"].ne(-1)]
            k = k[[sym[c] == "kernel" for c in k["cat"]]]
            per = []
            for (pid, stream), g in k.groupby(["pid", "stream"]):
                per.append(
                    {
                        "device": int(pid),
                        "stream": int(stream),
                        "count": int(len(g)),
                        "dur_us": repr(float(g["dur"].sum())),
                    }
                )
            row = temporal[temporal["rank"] == rank].iloc[0]
            ranks[str(rank)] = {
                "kernels": per,
                "idle_us": repr(float(row["idle_time(us)"])),
                "compute_us": repr(float(row["compute_time(us)"])),
                "non_compute_us": repr(float(row["non_compute_time(us)"])),
                "kernel_time_us": repr(float(row["kernel_time(us)"])),
                # HTA returns the overlap as a percentage rounded to 2 decimals only.
                "comm_comp_overlap_pctg": repr(
                    float(overlap[overlap["rank"] == rank].iloc[0]["comp_comm_overlap_pctg"])
                ),
            }
        files = {
            p.name: {**float_losses(p), "exact_kernels": exact_kernels(p)}
            for p in sorted(folder.iterdir())
            if "json" in p.name
        }
        out["sets"][name] = {"ranks": ranks, "files": files}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
