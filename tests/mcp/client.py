"""`verdict mcp` driven by the official MCP Python SDK's client (the `mcp` package).

Run by tests/suite/mcp.rs: python3 client.py VERDICT ROOT OUTSIDE_TRACE ZH_TW_TOML

ROOT holds `megatron.sqlite` (a copy of the day26 trace) and `claims/day26.yaml`; the client
grants ROOT as its only root (MCP roots; the server has no --root). Every check runs twice:
over the revision the client negotiates by default (2026-07-28, stateless: the roots come as
input a call requires) and over the handshake (`mode="legacy"`, 2025-11-25: the server asks
for the roots after it). OUTSIDE_TRACE is the same
trace outside ROOT. Every structured result is validated against the tool's declared output
schema with `jsonschema`; the numbers checked are computed here, from the trace with SQL or
from the UI strings file, not taken from the server.
"""

import asyncio
import json
import pathlib
import sqlite3
import sys
import tomllib

import jsonschema
import mcp.types as types
from mcp import Client, StdioServerParameters

VERDICT, ROOT, OUTSIDE, ZH_TW = sys.argv[1:5]
ROOT = pathlib.Path(ROOT)
TRACE = ROOT / "megatron.sqlite"


def sql(query):
    db = sqlite3.connect(f"file:{TRACE}?mode=ro&immutable=1", uri=True)
    try:
        return db.execute(query).fetchall()
    finally:
        db.close()


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def list_roots(_context):
    return types.ListRootsResult(roots=[types.Root(uri=ROOT.resolve().as_uri(), name="traces")])


async def main(mode, protocol):
    server = StdioServerParameters(command=VERDICT, args=["mcp"])
    async with Client(server, list_roots_callback=list_roots, mode=mode) as client:
        check(client.protocol_version == protocol, f"protocol {client.protocol_version}")
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        check(
            sorted(tools) == sorted(["inspect", "analyses", "query", "check", "schema", "explain"]),
            f"tools {sorted(tools)}",
        )
        for t in tools.values():
            jsonschema.Draft202012Validator.check_schema(t.input_schema)
            jsonschema.Draft202012Validator.check_schema(t.output_schema)
        called = set()

        async def call(name, arguments, error=False):
            r = await client.call_tool(name, arguments)
            text = r.content[0].text if r.content else ""
            check(r.is_error == error, f"{name} {arguments}: is_error={r.is_error}: {text}")
            if not error:
                jsonschema.validate(r.structured_content, tools[name].output_schema)
                called.add(name)
            return r

        # inspect: the devices with kernels and the expected one without, by SQL.
        r = await call("inspect", {"trace": "megatron.sqlite", "expect-devices": "0-7"})
        present = [d for (d,) in sql("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")]
        check(r.structured_content["scope"]["devices"] == present, f"devices {present}")
        check(r.structured_content["scope"]["missing_devices"] == [0], "device 0 is missing")
        check(r.structured_content["values"]["kernels"] == sql("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0], "kernels")

        # analyses: the registry, whose query analyses are the query tool's enum.
        r = await call("analyses", {})
        names = [a["name"] for a in r.structured_content["analyses"] if a["query"]]
        check(names == tools["query"].input_schema["properties"]["analysis"]["enum"], f"query analyses {names}")

        # query: the kernels of device 4 in step 4 (clip: those that intersect it), by SQL.
        r = await call(
            "query",
            {"analysis": "kernels", "trace": "megatron.sqlite", "device": 4, "window": "39.964:46.123"},
        )
        (n,) = sql(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 4 "
            "AND start < 46123000000 AND end > 39964000000"
        )[0]
        check(r.structured_content["values"]["count"] == n, f"kernel count {n}")
        # Every analysis of the registry, each result valid against the output schema (whose
        # `allOf` requires the analysis's declared fields in `values`); device 4 in step 4.
        for name in names:
            if name == "compare":
                args = {
                    "of": "kernels",
                    "metric": "count",
                    "a": ["trace=megatron.sqlite", "devices=4", "window=39.964:46.123", "split=2"],
                    "b": ["trace=megatron.sqlite", "devices=4", "window=46.123:52.282", "split=2"],
                }
            else:
                args = {"trace": "megatron.sqlite", "device": 4, "window": "39.964:46.123"}
            r = await call("query", {"analysis": name, **args})
            check(r.structured_content["analysis"] == name, f"query {name}")
        # A cap: two kernel names kept, the cut stated, and still valid.
        r = await call(
            "query",
            {"analysis": "kernels", "trace": "megatron.sqlite", "device": 4, "max-rows": 2},
        )
        cut = r.structured_content.get("truncation")
        check(cut is not None and cut["rows_kept"] == 2, f"truncation {cut}")
        check(all(c["kept"] == 2 and c["total"] > 2 for c in cut["lists"]), f"lists {cut['lists']}")
        check("truncated" in r.content[0].text, "the summary says so")
        # A parameter of another analysis is refused.
        await call("query", {"analysis": "overlap", "trace": "megatron.sqlite", "device": 4, "stream": "56"}, error=True)

        # check, by path and inline: the article's five verdicts.
        r = await call("check", {"claims": "claims/day26.yaml"})
        verdicts = [(c["id"], c["verdict"]) for c in r.structured_content["results"]]
        check(
            verdicts
            == [
                ("exposed-comm", "supported"),
                ("flash-attention", "partially_supported"),
                ("tp8-gemm", "unverifiable"),
                ("recompute", "unverifiable"),
                ("rank-wait", "partially_supported"),
            ],
            f"verdicts {verdicts}",
        )
        text = (ROOT / "claims/day26.yaml").read_text()
        r = await call("check", {"yaml": text, "dir": "claims"})
        check(len(r.structured_content["results"]) == 5, "inline document")

        # schema: each one a valid JSON Schema; the day26 file is not checked by it (YAML).
        for what in ["claims", "eval", "evidence"]:
            r = await call("schema", {"what": what})
            jsonschema.Draft202012Validator.check_schema(r.structured_content["schema"])

        # explain: the texts of the zh-TW strings file, read here.
        zh = tomllib.loads(pathlib.Path(ZH_TW).read_text())
        r = await call("explain", {"key": "R2", "lang": "zh-TW"})
        check(r.structured_content["text"] == zh["legend.R2"], "legend R2")
        check(r.structured_content["gate"]["name"] == zh["gate.R2"], "gate R2's name")
        r = await call("explain", {"key": "gate.r2.devices_differ", "args": {"claim": "4", "evidence": "1"}})
        check(r.structured_content["text"] == "the claim speaks of devices 4, the evidence covers devices 1", r.structured_content["text"])
        await call("explain", {"key": "gate.r9.nothing"}, error=True)

        # A bad claims document: a tool error at its line and column (line 2, column 1: the
        # key `claimz` the format does not have).
        r = await call("check", {"yaml": "report: {id: x, languages: [en], title: {en: t}, question: {en: q}}\nclaimz: []\n"}, error=True)
        problem = r.structured_content["error"]["problems"][0]
        check((problem["line"], problem["column"]) == (2, 1), f"problem at {problem}")
        check("<inline>:2:1:" in r.content[0].text, r.content[0].text)

        # A path outside the granted root is refused, by inspect, query and check.
        for name, args in [
            ("inspect", {"trace": OUTSIDE}),
            ("query", {"analysis": "kernels", "trace": OUTSIDE}),
            ("check", {"claims": str(pathlib.Path(OUTSIDE).parent.parent.parent / "claims/day26-profile-blind.yaml")}),
        ]:
            r = await call(name, args, error=True)
            check("outside the roots" in r.content[0].text, r.content[0].text)

        check(called == set(tools), f"every tool called: {sorted(called)}")
    print(f"{mode}: {protocol}: all checks passed")


# The default negotiation reaches the stateless revision; `legacy` the handshake's.
asyncio.run(main("auto", "2026-07-28"))
asyncio.run(main("legacy", "2025-11-25"))
