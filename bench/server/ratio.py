#!/usr/bin/env python3
"""Reads bench/server/run.sh's CSV (one file or more: several runs) on
stdin or from the files named, and prints a Markdown table of
revkv-server's requests per second over redis-server's, per test and
mode, one column per run, then the memory lines."""
import csv
import sys
from collections import defaultdict

runs = []  # per run: {(mode, test): {server: rps}}
memory = []
for name in sys.argv[1:] or ["-"]:
    f = sys.stdin if name == "-" else open(name)
    rates = defaultdict(dict)
    for row in csv.reader(f):
        if len(row) < 4 or row[0] == "server":
            continue
        server, mode, test = row[0], row[1], row[2]
        if mode.startswith("memory ") and not mode.startswith("memory P") or mode == "memory":
            memory.append((name, row))
            continue
        try:
            rates[(mode, test)][server] = float(row[3])
        except ValueError:
            continue
    runs.append(rates)

keys = []
for r in runs:
    for k in r:
        if k not in keys:
            keys.append(k)
print("| mode | test | " + " | ".join(f"run {i + 1}: revkv / redis rps, ratio" for i in range(len(runs))) + " |")
print("|---|---|" + "---:|" * len(runs))
for mode, test in keys:
    cells = []
    for r in runs:
        v = r.get((mode, test), {})
        if "revkv" in v and "redis" in v and v["redis"] > 0:
            cells.append(f"{v['revkv']:,.0f} / {v['redis']:,.0f}, **{v['revkv'] / v['redis']:.2f}×**")
        else:
            cells.append("")
    print(f"| {mode} | {test} | " + " | ".join(cells) + " |")
for name, row in memory:
    print(f"{name}: {','.join(row)}")
