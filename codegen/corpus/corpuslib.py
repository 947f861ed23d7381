"""Helpers shared by `run` and `timings` (standard library only).

- npm packages are fetched with `npm pack NAME@VERSION` into the cache and unpacked once;
- the generator is built with cargo (or taken from `--codegen`);
- generated crates are checked inside one throw-away cargo workspace with a shared target dir.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def log(msg: str) -> None:
    """Progress goes to stderr; summaries go to stdout."""
    print(msg, file=sys.stderr, flush=True)


class SetupError(Exception):
    """The measurement could not start (npm, cargo build, bad arguments): exit 2."""


def default_cache() -> Path:
    env = os.environ.get("BANKD_CORPUS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "bankd-corpus"


def default_target_dir(cache: Path) -> Path:
    """The cargo target dir every corpus script shares (BANKD_CORPUS_TARGET_DIR, or CACHE/target
    where CACHE is the default one): the generated crates' dependencies are built once."""
    env = os.environ.get("BANKD_CORPUS_TARGET_DIR")
    return Path(env) if env else cache / "target"


# --------------------------------------------------------------------------- npm packages


def npm_package(cache: Path, name: str, version: str) -> Path:
    """`npm pack NAME@VERSION` into CACHE, unpacked once; returns the unpacked `package/` dir.

    The unpacked copy is reused when present (a `.complete` marker is written last, so an
    interrupted unpack is redone).
    """
    slug = name.lstrip("@").replace("/", "-")
    dest = cache / f"{slug}-{version}"
    if (dest / ".complete").exists():
        return dest / "package"
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"{slug}-{version}.tgz"
    if not tarball.exists():
        log(f"fetch: npm pack {name}@{version}")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            proc = subprocess.run(
                ["npm", "pack", f"{name}@{version}", "--json", "--pack-destination", tmp],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise SetupError(f"npm pack {name}@{version} failed: {proc.stderr.strip()[-2000:]}")
            files = list(Path(tmp).glob("*.tgz"))
            if len(files) != 1:
                raise SetupError(f"npm pack {name}@{version} left {len(files)} tarballs")
            os.replace(files[0], tarball)
    log(f"fetch: unpacking {tarball.name}")
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(dest, filter="data")
    (dest / ".complete").write_text(f"{name}@{version}\n")
    return dest / "package"


# --------------------------------------------------------------------------- the generator


def build_codegen() -> Path:
    """`cargo build --release -p openapi-poem` in the repo (honours CARGO_TARGET_DIR)."""
    log("build: cargo build --release -p openapi-poem")
    proc = subprocess.run(
        ["cargo", "build", "--release", "-p", "openapi-poem", "--message-format", "json-render-diagnostics"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        raise SetupError("cargo build --release -p openapi-poem failed (see above); or pass --codegen PATH")
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "openapi-poem":
            if msg.get("executable"):
                return Path(msg["executable"])
    raise SetupError("cargo build did not report the codegen executable")


def resolve_codegen(path: str | None) -> Path:
    if path is None:
        return build_codegen()
    binary = Path(path).resolve()
    if not os.access(binary, os.X_OK):
        raise SetupError(f"--codegen {path}: not an executable file")
    return binary


def generate_args(binary: Path, runtime_path: str | None) -> list[str]:
    """Extra `codegen generate` arguments: `--runtime-path ABS` when asked for, and by default
    this checkout's runtime for a generator that writes crates outside its checkout with the
    runtime by version only (its `--help` says "registry"; the runtime is not taken from a
    registry here). An older generator writes its own checkout's runtime path: nothing to add.

    Refuses (SetupError) a runtime path that the binary does not know about, rather than letting
    every document fail on an unknown flag.
    """
    help_text = subprocess.run([str(binary), "generate", "--help"], capture_output=True, text=True).stdout
    if runtime_path is None:
        if "registry" not in help_text:
            return []
        runtime_path = str(REPO / "codegen" / "runtime")
    if "--runtime-path" not in help_text:
        raise SetupError(f"--runtime-path given but `{binary} generate --help` does not mention it")
    return ["--runtime-path", str(Path(runtime_path).resolve())]


# --------------------------------------------------------------------------- cargo workspace

# Tables that only mean something in a workspace root; a member that carries them makes cargo
# refuse ([workspace]) or warn and ignore them (the rest).
ROOT_ONLY_TABLES = ("workspace", "profile", "patch", "replace")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def sanitize_manifest(path: Path) -> list[str]:
    """Removes root-only tables (and `package.workspace`) from a member's Cargo.toml.

    Returns what was removed (for the report). Line-based: a table runs to the next header.
    """
    removed: list[str] = []
    out: list[str] = []
    table = ""
    skipping = False
    for line in path.read_text().splitlines(keepends=True):
        m = _HEADER.match(line)
        if m:
            table = m.group(1).strip()
            top = table.split(".")[0].strip('"')
            skipping = top in ROOT_ONLY_TABLES
            if skipping:
                removed.append(f"[{table}]")
        elif table == "package" and re.match(r"^\s*workspace\s*=", line):
            removed.append("package.workspace")
            continue
        if not skipping:
            out.append(line)
    if removed:
        path.write_text("".join(out))
    return removed


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON string escapes are valid TOML basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise ValueError(f"cannot write {v!r} as TOML")


DEPS_CRATE = "corpus-deps"


def write_deps_crate(ws: Path, member_dirs: list[Path]) -> None:
    """A member with the union of the members' `[dependencies]` (but the crates of types each
    generated crate holds under `parts/`) and an empty lib.

    Checking it first builds every dependency once, so that phase's time is measured on its own
    and a dependency failure is not blamed on the first generated crate.
    """
    deps: dict[str, object] = {}
    for d in member_dirs:
        manifest = tomllib.loads((d / "Cargo.toml").read_text())
        for name, spec in manifest.get("dependencies", {}).items():
            if name in deps or (isinstance(spec, dict) and spec.get("workspace")):
                continue
            if isinstance(spec, dict) and "path" in spec:
                path = (d / spec["path"]).resolve()
                if path.is_relative_to(d.resolve()):
                    continue  # the crate's own types, in crates of their own: part of what is timed
                spec = dict(spec, path=str(path))
            if name == "openapi-poem-runtime":
                # The crates are checked with their client (feature `client`): build its
                # dependencies here too.
                spec = dict(spec) if isinstance(spec, dict) else {"version": spec}
                spec["features"] = sorted(set(spec.get("features", [])) | {"client"})
            deps[name] = spec
    crate = ws / "deps"
    (crate / "src").mkdir(parents=True, exist_ok=True)
    (crate / "src" / "lib.rs").write_text("//! Builds the generated crates' dependencies once.\n")
    lines = [
        "[package]",
        f'name = "{DEPS_CRATE}"',
        'version = "0.0.0"',
        'edition = "2024"',
        "publish = false",
        "",
        "[dependencies]",
    ]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in deps.items()]
    (crate / "Cargo.toml").write_text("\n".join(lines) + "\n")


def write_workspace(ws: Path, members: list[str]) -> None:
    """`ws/Cargo.toml` listing MEMBERS (paths relative to ws), plus the repo's toolchain pin and
    lock file (so dependency versions, and so the shared target dir, stay the repo's)."""
    body = '[workspace]\nresolver = "3"\nmembers = [\n' + "".join(f"    {json.dumps(m)},\n" for m in members) + "]\n"
    (ws / "Cargo.toml").write_text(body)
    for name in ("rust-toolchain.toml", "Cargo.lock"):
        if (REPO / name).exists() and not (ws / name).exists():
            shutil.copyfile(REPO / name, ws / name)


def cargo_env(target_dir: Path) -> dict[str, str]:
    # No incremental data: every check is a one-off (the files are new each run), and it would
    # be hundreds of MB per generated crate in the shared target dir.
    return dict(os.environ, CARGO_TARGET_DIR=str(target_dir), CARGO_TERM_COLOR="never", CARGO_INCREMENTAL="0")


def forget_member(target_dir: Path, package: str) -> None:
    """Deletes a checked member's own artifacts from the shared target dir (the dependencies
    stay): they are never reused, since a run writes every crate anew."""
    stem = package.replace("-", "_")
    debug = target_dir / "debug"
    for pattern in (f"deps/lib{stem}-*", f"deps/{stem}-*", f".fingerprint/{package}-*", f"incremental/{stem}-*"):
        for path in debug.glob(pattern):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def cargo(args: list[str], ws: Path, target_dir: Path, timeout: float) -> tuple[int | None, str, float]:
    """Runs `cargo ARGS` in WS; returns (exit code or None on timeout, stderr, seconds)."""
    code, err, seconds, _, _ = cargo_measured(args, ws, target_dir, timeout)
    return code, err, seconds


def cargo_measured(args: list[str], ws: Path, target_dir: Path,
                   timeout: float) -> tuple[int | None, str, float, int, int]:
    """Runs `cargo ARGS` in WS; returns (exit code or None on timeout, stderr, seconds, peak RSS
    in bytes of the largest of cargo and every rustc it ran (Linux's wait4 reports the largest of
    a process and its waited-for descendants), and the peak of their RSS summed, sampled every
    0.1 s: what the machine needs when cargo runs several rustc side by side).

    cargo runs in its own process group, killed as a whole on timeout (or interrupt): killing
    only cargo would leave its rustc running, eating CPU and memory under the next checks.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        ["cargo", *args],
        cwd=ws,
        env=cargo_env(target_dir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    done = threading.Event()
    summed = [0]

    def sample() -> None:
        while not done.wait(0.1):
            summed[0] = max(summed[0], session_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    finally:
        timer.cancel()
        done.set()
    reader.join()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    code = None if timed_out.is_set() else proc.returncode
    return code, "".join(chunks), time.monotonic() - start, usage.ru_maxrss * 1024, summed[0]


def session_rss(sid: int) -> int:
    """Resident bytes of every process in session SID, summed (from /proc)."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the command: state ppid pgrp session ... (rss is field 24, index 21 here)
        if int(fields[3]) == sid:
            total += int(fields[21]) * page
    return total


def first_errors(stderr: str, n: int = 5) -> list[str]:
    """The first N error lines of `cargo --message-format short` output."""
    lines = []
    for line in stderr.splitlines():
        s = line.strip()
        if not s or "could not compile" in s or s.startswith("error: aborting"):
            continue
        if re.search(r"(^|: )error(\[E\d+\])?:", s):
            lines.append(s)
        if len(lines) >= n:
            break
    if not lines:  # no recognisable error line: show the tail instead
        lines = [s for s in stderr.strip().splitlines()[-n:]]
    return lines


def count_warnings(stderr: str) -> int:
    return sum(1 for line in stderr.splitlines() if re.search(r"(^|: )warning:", line) and "generated" not in line)


# --------------------------------------------------------------------------- formatting


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "n/a"


def describe(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    v = sorted(values)
    return {
        "n": len(v),
        "median": statistics.median(v),
        "mean": statistics.fmean(v),
        "p95": v[min(len(v) - 1, int(0.95 * len(v)))],
        "max": v[-1],
        "total": sum(v),
    }


def md_table(header: list[str], rows: list[list[object]]) -> str:
    def cell(x: object) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows]
    return "\n".join(out)
