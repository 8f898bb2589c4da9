"""Reduces of verdict's analyses on a Dask (distributed) cluster.

`--analysis nccl-skew` (the default): the cross-rank reduce of `nccl-skew`, below.
`--analysis overlap`: each rank's unions of its kernel intervals and its counts, from the
`intervals` table (rank, start, end, nccl, counted; one row per kernel a rank keeps in the
window, clipped), written as ranks.parquet (rank, compute_busy, nccl_busy, all_busy,
compute_kernels, nccl_kernels, lo, hi); the reference is src/analysis/overlap.sql.

The nccl-skew reduce:

Reads the `keyed` table (one row per compared NCCL kernel of one rank: rank, grp,
a, b, row, start, end, name, sel, held) from the Parquet files of an input
directory, groups the rows of all ranks by key (grp, a, b), keeps the complete
keys as collective instances, places them against the window (inside, cut,
overlap or outside) and writes four tables to the output directory:

  instances.parquet  one row per complete key that is not outside
  members.parquet    one row per (kept instance, member rank) with its wait
  ranks.parquet      per rank: unmatched, wait, matched, last, first
  totals.parquet     one row: nccl, wait, mismatches

The reference definition is the SQL in src/analysis/nccl_skew.sql beside the
Rust form of the same reduce; this file is its Dask form. The rows are shuffled
on the cluster so that all rows of a key share a partition; per-key figures are
computed partition by partition and per-rank figures are tree reductions. Only
the per-group member counts and the final tables come back to this process.
Integer columns stay int64 throughout (timestamps are ~1e18 ns, beyond float64
precision), and this is checked before writing.

Usage:
  python dask_reduce.py [--analysis nccl-skew|overlap] --scheduler tcp://HOST:PORT --input IN_DIR \
      --output OUT_DIR --params PARAMS.json
PARAMS.json: {"R": 4, "ordinal": true, "tile": false, "wstart": null,
              "wend": null, "counted_from": null}
Exit status 0 on success; on failure one line `error: ...` on stderr, status 2.
"""
import argparse
import glob
import json
import os
import sys

try:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    import dask
    import dask.dataframe as dd
    from distributed import Client
except ImportError as e:
    print(f"error: missing Python package: {e}", file=sys.stderr)
    sys.exit(2)

KEY = ["grp", "a", "b"]
INT, STR, BOOL = pa.int64(), pa.string(), pa.bool_()
KEYED = pa.schema([("rank", INT), ("grp", STR), ("a", INT), ("b", INT), ("row", INT),
                   ("start", INT), ("end", INT), ("name", INT), ("sel", BOOL), ("held", BOOL)])
SCHEMAS = {
    "instances": pa.schema([("grp", STR), ("a", INT), ("b", INT), ("n", INT), ("smin", INT),
                            ("smax", INT), ("emin", INT), ("emax", INT), ("first_row", INT),
                            ("place", STR), ("transfer", INT), ("last_rank", INT),
                            ("first_rank", INT), ("mismatch", BOOL)]),
    "members": pa.schema([("grp", STR), ("a", INT), ("b", INT), ("rank", INT), ("row", INT),
                          ("start", INT), ("end", INT), ("wait", INT), ("start_offset", INT),
                          ("end_offset", INT)]),
    "ranks": pa.schema([("rank", INT), ("unmatched", INT), ("wait", INT), ("matched", INT),
                        ("last", INT), ("first", INT)]),
    "totals": pa.schema([("nccl", INT), ("wait", INT), ("mismatches", INT)]),
}
INT_COLS = ["n", "smin", "smax", "emin", "emax", "transfer", "first_row", "last_rank",
            "first_rank", "dur", "wait", "start_offset", "end_offset"]
BIG = 2**63 - 1  # sentinel above any rank or row id, for "min over the rows where ..."


class Failure(Exception):
    """A failure reported as one `error: ...` line."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors too: one line, status 2
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def read_keyed(in_dir):
    """The keyed table as a Dask dataframe; partitions are read by the workers."""
    if not os.path.isdir(in_dir):
        raise Failure(f"input directory {in_dir} does not exist")
    files = sorted(glob.glob(os.path.join(in_dir, "*.parquet")))
    if not files:
        return dd.from_pandas(KEYED.empty_table().to_pandas(), npartitions=1)
    df = dd.read_parquet(files, columns=KEYED.names)
    for col, want in zip(KEYED.names, ("int64", None, "int64", "int64", "int64", "int64",
                                       "int64", "int64", "bool", "bool")):
        if want and str(df[col].dtype) != want:
            raise Failure(f"input column {col} has type {df[col].dtype}, expected {want}")
    return df


def annotate(part, members, p):
    """Attach to each row the figures of its key (pandas, on one shuffled partition).

    The partition holds every row of each of its keys, so per-key aggregates are
    groupby transforms. `members` is the (grp, n) table of the communicator and
    process-group rules (None under the ordinal rule). Adds n, smin, smax, emin,
    emax, first_row, transfer, last_rank, first_rank, mismatch, place (inside,
    cut, overlap, outside, or `incomplete` for a key that is not complete), and the
    member figures wait, start_offset, end_offset, dur. In tile mode a null wstart
    or wend leaves that side of the window open.
    """
    R, ordinal = p["R"], p["ordinal"]
    if ordinal:
        part = part.assign(n=R)
    else:
        part = part.merge(members, on="grp", how="inner")  # every grp is in members
    g = part.groupby(KEY, sort=False, dropna=False)
    dur = part["end"] - part["start"]
    by = [part[k] for k in KEY]
    t = lambda col, fn: col.groupby(by, sort=False, dropna=False).transform(fn)
    rmin = g["rank"].transform("min")
    part = part.assign(smin=g["start"].transform("min"), smax=g["start"].transform("max"),
                       emin=g["end"].transform("min"), emax=g["end"].transform("max"),
                       transfer=t(dur, "min"), mismatch=g["name"].transform("nunique") > 1,
                       first_row=t(part["row"].where(part["rank"] == rmin, BIG), "min"))
    part = part.assign(
        last_rank=t(part["rank"].where(part["start"] == part["smax"], BIG), "min"),
        first_rank=t(part["rank"].where(part["start"] == part["smin"], BIG), "min"))
    n = part["n"]
    complete = g["rank"].transform("nunique") == n
    if not ordinal and R >= 2:
        complete &= n >= 2
    if p["tile"]:
        inside = (part["smin"] < (BIG if p["wend"] is None else p["wend"])) & (
            part["emax"] > (-BIG - 1 if p["wstart"] is None else p["wstart"]))
        if p["counted_from"] is not None:
            inside &= part["smin"] >= p["counted_from"]
        some = inside
    else:
        inside = t(part["sel"] & part["held"], "sum") == n
        some = t(part["sel"].astype("int64"), "sum") > 0
    overlap = inside & (n >= 2) & (part["smax"] > part["emin"])
    place = pd.Series("outside", index=part.index, dtype=object)
    place[some] = "cut"
    place[inside] = "inside"
    place[overlap] = "overlap"
    place[~complete] = "incomplete"
    part = part.assign(place=place.astype(str), dur=dur, wait=dur - part["transfer"],
                       start_offset=part["start"] - part["smin"],
                       end_offset=part["end"] - part["emin"])
    if len(part):  # transforms of int64 stay int64; only an empty partition needs the cast
        bad = [c for c in INT_COLS if str(part[c].dtype) != "int64"]
        if bad:
            raise TypeError(f"columns {bad} are not int64")
    return part.astype({**{c: "int64" for c in INT_COLS}, "mismatch": "bool"})


def reduce(in_dir, p):
    """The four output tables as pandas frames (columns in spec order)."""
    R = p["R"]
    df = read_keyed(in_dir)
    members = None
    if not p["ordinal"]:
        # members(grp): distinct ranks with a row in grp. One row per group, so it is
        # brought back and handed to every partition as a plain pandas frame (joining it
        # lazily would give `rows` a second lineage, and dask would then realign the
        # filters below by index).
        members = df[["grp", "rank"]].drop_duplicates().groupby("grp")["rank"].count()
        members = members.to_frame("n").reset_index().compute()
    # All rows of a key in one partition, then per-key figures on each partition.
    rows = df.shuffle(on=KEY).map_partitions(annotate, members, p)
    shown = rows["place"].isin(["inside", "cut", "overlap"])
    inst = rows[(rows["row"] == rows["first_row"]) & shown]  # one row per instance
    kept = inst[inst["place"] == "inside"]
    mem = rows[rows["place"] == "inside"]
    lost = rows[rows["sel"] & (rows["place"] == "incomplete")]
    per_rank = dict(
        unmatched=lost.groupby("rank")["row"].count(),
        wait=mem.groupby("rank")["wait"].sum(), matched=mem.groupby("rank")["row"].count(),
        last=kept.groupby("last_rank")["row"].count(),
        first=kept.groupby("first_rank")["row"].count(),
        nccl=mem["dur"].sum(), twait=mem["wait"].sum(),
        mism=kept["mismatch"].astype("int64").sum())
    out_inst = inst[SCHEMAS["instances"].names]
    out_mem = mem[SCHEMAS["members"].names + ["smin", "first_row"]]
    inst_pd, mem_pd, small = dask.compute(out_inst, out_mem, per_rank)

    idx = pd.RangeIndex(R)

    def col(name):  # per-rank counts/sums, ranks without rows get 0
        s = small[name]
        if str(s.dtype) != "int64":
            raise Failure(f"per-rank {name} came out as {s.dtype}, not int64")
        return s.reindex(idx, fill_value=0).to_numpy()

    def one(name):
        v = small[name]
        if not isinstance(v, (int, np.integer)):
            raise Failure(f"total {name} came out as {type(v).__name__}, not an integer")
        return int(v)

    ranks = pd.DataFrame({"rank": idx.to_numpy(dtype="int64"),
                          "unmatched": col("unmatched"), "wait": col("wait"),
                          "matched": col("matched"), "last": col("last"), "first": col("first")})
    totals = pd.DataFrame({"nccl": [one("nccl")], "wait": [one("twait")],
                           "mismatches": [one("mism")]})
    kept_pd = inst_pd[inst_pd["place"] == "inside"].sort_values(["smin", "first_row"])
    rest_pd = inst_pd[inst_pd["place"] != "inside"].sort_values(["smin", "emax"] + KEY)
    inst_pd = pd.concat([kept_pd, rest_pd])
    mem_pd = mem_pd.sort_values(["smin", "first_row", "rank"])[SCHEMAS["members"].names]
    return {"instances": inst_pd, "members": mem_pd, "ranks": ranks, "totals": totals}


INTERVALS = pa.schema([("rank", INT), ("start", INT), ("end", INT), ("nccl", BOOL),
                       ("counted", BOOL)])
SCHEMAS["overlap"] = pa.schema([("rank", INT), ("compute_busy", INT), ("nccl_busy", INT),
                                ("all_busy", INT), ("compute_kernels", INT),
                                ("nccl_kernels", INT), ("lo", INT), ("hi", INT)])
UNION_COLS = SCHEMAS["overlap"].names


def union_length(start, end):
    """Length of the union of intervals (int64 arrays): in start order, an interval opens an
    island when it starts after every earlier one has ended."""
    if len(start) == 0:
        return 0
    order = np.lexsort((end, start))
    s, e = start[order], end[order]
    before = np.maximum.accumulate(e)
    opens = np.ones(len(s), dtype=bool)
    opens[1:] = s[1:] > before[:-1]
    island = np.cumsum(opens) - 1
    lo = s[opens]
    hi = np.zeros(island[-1] + 1, dtype=np.int64)
    np.maximum.at(hi, island, e)
    return int((hi - lo).sum())


def unions(part):
    """One row per rank of the partition (all rows of a rank are in it)."""
    rows = []
    for rank, r in part.groupby("rank", sort=True):
        st, en = r["start"].to_numpy("int64"), r["end"].to_numpy("int64")
        nc, co = r["nccl"].to_numpy(bool), r["counted"].to_numpy(bool)
        rows.append([rank, union_length(st[~nc], en[~nc]), union_length(st[nc], en[nc]),
                     union_length(st, en), int((co & ~nc).sum()), int((co & nc).sum()),
                     int(st.min()), int(en.max())])
    frame = pd.DataFrame(rows, columns=UNION_COLS)
    return frame.astype({c: "int64" for c in UNION_COLS})


def reduce_overlap(in_dir, p):
    """The `ranks` table of the overlap aggregates (every rank, zeros where it kept nothing)."""
    if not os.path.isdir(in_dir):
        raise Failure(f"input directory {in_dir} does not exist")
    files = sorted(glob.glob(os.path.join(in_dir, "*.parquet")))
    idx = pd.RangeIndex(p["R"])
    if files:
        df = dd.read_parquet(files, columns=INTERVALS.names)
        meta = pd.DataFrame({c: pd.Series(dtype="int64") for c in UNION_COLS})
        got = df.shuffle(on="rank").map_partitions(unions, meta=meta).compute()
    else:
        got = pd.DataFrame({c: pd.Series(dtype="int64") for c in UNION_COLS})
    got = got.set_index("rank").reindex(idx, fill_value=0).rename_axis("rank").reset_index()
    return {"ranks": got.astype({c: "int64" for c in UNION_COLS})}


def write(tables, out_dir, schemas=None):
    """Write each table as one Parquet file, refusing any int column that is not int64."""
    os.makedirs(out_dir, exist_ok=True)
    for name, frame in tables.items():
        schema = (schemas or SCHEMAS)[name]
        arrays = []
        for field in schema:
            s = frame[field.name]
            if field.type == INT and str(s.dtype) != "int64":
                raise Failure(f"{name}.{field.name} came out as {s.dtype}, not int64")
            if field.type == BOOL and str(s.dtype) != "bool":
                raise Failure(f"{name}.{field.name} came out as {s.dtype}, not bool")
            vals = s.astype(object).tolist() if field.type == STR else s.to_numpy()
            arrays.append(pa.array(vals, type=field.type))
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema),
                       os.path.join(out_dir, f"{name}.parquet"))


def load_params(path):
    with open(path) as f:
        p = json.load(f)
    for k in ("R", "ordinal", "tile"):
        if k not in p:
            raise Failure(f"params {path}: missing {k}")
    if not isinstance(p["R"], int) or p["R"] < 1:
        raise Failure(f"params {path}: R must be an integer >= 1")
    for k in ("wstart", "wend", "counted_from"):
        p.setdefault(k, None)
    return p


def main():
    ap = Parser(description=__doc__.split("\n")[0])
    for opt in ("--scheduler", "--input", "--output", "--params"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--analysis", choices=["nccl-skew", "overlap"], default="nccl-skew")
    args = ap.parse_args()
    try:
        p = load_params(args.params)
        try:
            client = Client(args.scheduler, timeout=10)
        except (OSError, TimeoutError) as e:
            raise Failure(f"cannot reach the Dask scheduler at {args.scheduler}: {e}")
        with client:
            try:
                client.wait_for_workers(1, timeout=60)
            except TimeoutError:
                raise Failure(f"no Dask worker joined the scheduler at {args.scheduler} in 60 s")
            if args.analysis == "overlap":
                tables = reduce_overlap(args.input, p)
            else:
                tables = reduce(args.input, p)
        schemas = {"ranks": SCHEMAS["overlap"]} if args.analysis == "overlap" else None
        write(tables, args.output, schemas)
    except Exception as e:  # one line on stderr, status 2
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
