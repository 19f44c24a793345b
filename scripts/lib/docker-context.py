"""The Dockerfile and .dockerignore against what the build reads, statically (a release
build takes minutes; CI checks the inputs instead of building the image).

Usage: docker-context.py ROOT

Checks that the Dockerfile builds exactly `cargo build --release --locked` and installs
target/release/tasklane; that Cargo.toml's release profile ships a stripped binary
without debug info (symbols are for the `profiling` profile); and that .dockerignore
lets in every file the build reads: the manifest, lock file and build script, every
file of every target's directory (lib, bins, benches), every path the sources embed
(include_str!/include_bytes!, with concat! prefixes as directories, and refinery's
embed_migrations!) and every rerun-if-changed path of build.rs, checked against the
files git tracks. Prints ok/FAIL lines and `PYRESULT passed failed` last.
"""
import fnmatch
import os
import re
import subprocess
import sys
import tomllib

root = sys.argv[1]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else "\n     " + str(detail)))


dockerfile = open(os.path.join(root, "Dockerfile")).read()
# Join continuation lines, then find every cargo invocation.
joined = re.sub(r"\\\n\s*", " ", dockerfile)
cargo_cmds = [re.sub(r"\s+", " ", m).strip() for m in re.findall(r"\bcargo [^&\n]*", joined)]
check("Dockerfile: one cargo command, exactly `cargo build --release --locked`",
      cargo_cmds == ["cargo build --release --locked"], cargo_cmds)
check("Dockerfile: installs target/release/tasklane (the release profile's binary)",
      re.search(r"install [^\n]*target/release/tasklane ", joined) is not None)

with open(os.path.join(root, "Cargo.toml"), "rb") as f:
    manifest = tomllib.load(f)
release = manifest.get("profile", {}).get("release", {})
check("Cargo.toml [profile.release]: strip = true (or \"symbols\"), no debug info",
      release.get("strip") in (True, "symbols") and release.get("debug", False) in (False, 0, "none"), release)
profiling = manifest.get("profile", {}).get("profiling", {})
check("Cargo.toml [profile.profiling]: inherits release, keeps line tables and symbols",
      profiling.get("inherits") == "release" and profiling.get("debug") in (1, "limited", "line-tables-only", True)
      and profiling.get("strip", "none") in ("none", False), profiling)

# .dockerignore: gitignore-like patterns, later lines win, `!` re-includes.
patterns = []
for line in open(os.path.join(root, ".dockerignore")).read().splitlines():
    line = line.strip()
    if line and not line.startswith("#"):
        patterns.append((line.startswith("!"), line.lstrip("!").strip("/")))


def included(path):
    keep = True
    for negated, pattern in patterns:
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatchcase(p, pattern) for p in prefixes):
            keep = negated
    return keep


tracked = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
needed = {"Cargo.toml", "Cargo.lock"}
if os.path.exists(os.path.join(root, "build.rs")):
    needed.add("build.rs")
dirs = set()
lib = manifest.get("lib", {}).get("path", "src/lib.rs")
dirs.add(os.path.dirname(lib))
for target in manifest.get("bin", []) + manifest.get("bench", []) + manifest.get("test", []) + manifest.get("example", []):
    path = target.get("path") or f"benches/{target['name']}.rs"
    if target in manifest.get("test", []) or target in manifest.get("example", []):
        needed.add(path)
    else:
        dirs.add(os.path.dirname(path))
embedded = set()
for path in tracked:
    if not path.endswith(".rs") or not (path.startswith("src/") or path == "build.rs"):
        continue
    text = open(os.path.join(root, path)).read()
    base = os.path.dirname(path)
    for literal in re.findall(r'include_(?:str|bytes)!\(\s*"([^"]+)"', text):
        embedded.add(os.path.normpath(os.path.join(base, literal)))
    for prefix in re.findall(r'include_(?:str|bytes)!\(\s*concat!\(\s*"([^"]+)"', text):
        dirs.add(os.path.normpath(os.path.join(base, prefix)))
    for directory in re.findall(r'embed_migrations!\(\s*"([^"]+)"', text):
        dirs.add(directory.strip("/"))
    if path == "build.rs":
        for rerun in re.findall(r'rerun-if-changed=([^"\s]+)', text):
            (dirs if os.path.isdir(os.path.join(root, rerun)) else embedded).add(rerun.strip("/"))
needed |= embedded
for d in dirs:
    needed |= {p for p in tracked if p.startswith(d + "/")}
missing_files = sorted(p for p in needed if p not in tracked)
check(f"the build's inputs ({len(needed)} files) are tracked by git", not missing_files, missing_files)
excluded = sorted(p for p in needed if not included(p))
check(f".dockerignore lets in every file the build reads ({len(needed)})", not excluded, excluded[:20])
leaked = sorted(p for p in ("target/x", ".git/HEAD", "tests/it/main.rs", "docs/api.md") if included(p))
check(".dockerignore keeps target/, .git, tests and docs out of the context", not leaked, leaked)

print(f"PYRESULT {sum(results)} {len(results) - sum(results)}")
