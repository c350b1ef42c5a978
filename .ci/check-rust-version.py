#!/usr/bin/env python3
"""Checks that each workspace crate's declared `rust-version` is at least the highest
`rust-version` declared by any crate in its Linux dependency tree (normal and build
dependencies, as locked in Cargo.lock), and prints that floor for each crate.

Dependencies that declare no rust-version do not raise the floor; the compiler features the
crates use themselves are checked by building with that toolchain (`cargo +VERSION check`).
Exit status 1 if a crate claims less than its dependencies need.
"""
import json
import subprocess
import sys

TARGET = "x86_64-unknown-linux-gnu"


def version_key(v):
    return tuple(int(p) for p in v.split("."))


def main():
    meta = json.loads(
        subprocess.check_output(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--all-features",
             "--filter-platform", TARGET]
        )
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    failed = False
    for member in meta["workspace_members"]:
        pkg = packages[member]
        declared = pkg.get("rust_version")
        # Walk normal and build edges from the member (its dev-dependencies do not reach users).
        seen, stack = set(), [member]
        floor, who = "0.0", None
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            for dep in nodes[pid]["deps"]:
                kinds = {k["kind"] for k in dep["dep_kinds"]}
                if kinds <= {"dev"}:
                    continue
                stack.append(dep["pkg"])
        for pid in seen - {member}:
            p = packages[pid]
            rv = p.get("rust_version")
            if rv and version_key(rv) > version_key(floor):
                floor, who = rv, f"{p['name']} {p['version']}"
        ok = declared is not None and version_key(declared) >= version_key(floor)
        failed |= not ok
        print(
            f"{pkg['name']}: declares rust-version {declared}, dependencies need {floor}"
            + (f" ({who})" if who else "")
            + ("" if ok else "  <-- too low")
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
