#!/usr/bin/env python3
"""Checks that each workspace crate's declared `rust-version` is at least the highest
`rust-version` declared by any crate in its Linux dependency tree (normal and build
dependencies, as locked in Cargo.lock), and prints that floor for each crate.

Dependencies that declare no rust-version do not raise the floor. The language features the
crates use themselves are checked by building each crate with its declared toolchain
(`cargo +VERSION check`, all features) where rustup has that toolchain installed; where it has
not, the script says so and skips that build.
Exit status 1 if a crate claims less than its dependencies need or fails to build with it.
"""
import json
import os
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
        if declared:
            failed |= not build_with(pkg["name"], declared)
    sys.exit(1 if failed else 0)


def installed_toolchains():
    try:
        out = subprocess.run(["rustup", "toolchain", "list"], capture_output=True, text=True)
    except FileNotFoundError:
        return []
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def build_with(name, version):
    """`cargo +version check` of crate `name`; True if it builds or no such toolchain."""
    if not any(t.startswith(version + "-") or t == version for t in installed_toolchains()):
        print(f"  {name}: SKIPPED the build with Rust {version}: toolchain not installed "
              f"(rustup toolchain install {version} --profile minimal)")
        return True
    cmd = ["cargo", f"+{version}", "check", "--locked", "-p", name, "--all-features",
           "--target-dir", os.path.join("target", "msrv")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"  {name}: does NOT build with Rust {version}:\n{r.stderr[-3000:]}")
        return False
    print(f"  {name}: builds with Rust {version}")
    return True


if __name__ == "__main__":
    main()
