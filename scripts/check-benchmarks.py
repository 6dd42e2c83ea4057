#!/usr/bin/env python3
"""Checks every command in BENCHMARKS.md without measuring anything.

A command is a line of a ```sh block (a trailing backslash continues it):
optional `NAME=value` environment assignments, then
`cargo bench -p PACKAGE --bench BENCH [cargo options] [-- ARGS]`, or
`bash reflector-bench/SCRIPT [ARGS]` for a measuring script of the bench crate.
A `cargo bench` anywhere else in the page (inline code, other blocks) is an
error: it would escape the check.

For each command:
1. `cargo bench --workspace --bench … --no-run --locked --profile dev` builds
   the bench, in the dev profile and with the whole workspace selected: it
   reuses the dependencies `cargo test --workspace` compiled (the same profile,
   and the same features, which cargo unifies over the selected packages and
   their dev-dependencies: with `-p PACKAGE` alone they differ and half the
   dependency graph is compiled again), where the bench profile's optimised
   build of them takes ~10 minutes on two cores; the code is the same, only the
   optimisation differs (`CHECK_BENCHMARKS_PROFILE=bench` builds in the bench
   profile). Commands that pass the same options besides `-p` and `--bench`
   (the same features) are built by one cargo invocation naming all their
   benches, so the dependencies are built at most once per feature set; if that
   build fails, each of its commands is built alone to name the one that fails.
   (`cargo check` would be cheaper but leaves no binary to parse the arguments
   with.) What this does not see: a bench that compiles only with a feature
   another workspace member turns on; `cargo bench -p PACKAGE --bench BENCH`
   itself does.
2. the arguments after `--` are parsed by the bench binary itself, run from its
   package's directory as `cargo bench` runs it:
   - a criterion bench (its source calls `criterion_main!`) runs with the
     arguments plus `--list`, and the filter must match at least one benchmark;
   - a bench with its own harness that has an argument-check mode (its source
     handles `--check-args`) runs with the arguments plus `--check-args`, which
     parses and validates them and exits;
   - any other bench is only built, and a command for it may pass no arguments.

A script command is run with its arguments plus `--check-args`: the script
validates them (and what it would build) and exits without measuring.

Usage: scripts/check-benchmarks.py [PAGE]   (default: BENCHMARKS.md)
Exits 1 naming each bad command (page line, command, reason).
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A bench binary's setup (building objects, starting the embedded server) runs
# before it lists or checks; nothing here should take longer.
ARG_CHECK_TIMEOUT_SECS = 300
# {manifest path: package name}, filled by main from `cargo metadata`.
PACKAGES = {}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class Command:
    """One command of the page: where it is, its environment, cargo options and bench arguments."""

    def __init__(self, line, text):
        self.line = line
        self.text = text
        self.env = {}
        self.cargo_options = []
        self.bench_args = []
        self.package = None
        self.bench = None
        # A `bash reflector-bench/…` command: the script's path in the repository.
        self.script = None

    def __str__(self):
        return f"line {self.line}: {self.text}"


def extract(page):
    """Returns the page's commands and the errors found while extracting them."""
    commands, errors = [], []
    lines = page.read_text().splitlines()
    in_sh, fence = False, None
    pending, pending_line = "", 0
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if fence is None and stripped.startswith("```"):
            fence = stripped
            in_sh = stripped[3:].strip() in ("sh", "bash", "shell")
            continue
        if fence is not None and stripped == "```":
            if pending:
                errors.append(f"line {pending_line}: a command ends in a backslash at the block's end")
            fence, in_sh, pending = None, False, ""
            continue
        if not in_sh:
            if "cargo bench" in line:
                errors.append(
                    f"line {number}: `cargo bench` outside a ```sh block escapes the check; "
                    "put the command in a ```sh block"
                )
            continue
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            pending_line = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        commands.append(parse(pending_line, pending + stripped, errors))
        pending = ""
    return [c for c in commands if c is not None], errors


def parse(line, text, errors):
    """Splits one command into environment, cargo options and bench arguments."""
    command = Command(line, text)
    try:
        words = shlex.split(text)
    except ValueError as e:
        errors.append(f"{command}: cannot split it as a shell command: {e}")
        return None
    while words and ASSIGNMENT.match(words[0]):
        name, value = words.pop(0).split("=", 1)
        command.env[name] = value
    if words[:1] == ["bash"] and len(words) >= 2 and words[1].startswith("reflector-bench/"):
        if not (ROOT / words[1]).is_file():
            errors.append(f"{command}: no script {words[1]}")
            return None
        command.script, command.bench_args = words[1], words[2:]
        return command
    if words[:2] != ["cargo", "bench"]:
        errors.append(
            f"{command}: only `cargo bench` commands (after optional NAME=value) may appear "
            "in a ```sh block; the checker cannot check anything else"
        )
        return None
    words = words[2:]
    if "--" in words:
        split = words.index("--")
        words, command.bench_args = words[:split], words[split + 1 :]
    command.cargo_options = words
    packages = option_values(words, ("-p", "--package"))
    benches = option_values(words, ("--bench",))
    if len(packages) != 1 or len(benches) != 1:
        errors.append(f"{command}: name exactly one package (-p) and one bench (--bench)")
        return None
    if "--no-run" in words:
        errors.append(f"{command}: `--no-run` measures nothing; the page's commands measure")
        return None
    command.package, command.bench = packages[0], benches[0]
    return command


def option_values(words, names):
    """The values of every `NAME VALUE` or `NAME=VALUE` option in `words`."""
    values = []
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                values.append(words[i + 1])
            elif word.startswith(name + "="):
                values.append(word[len(name) + 1 :])
    return values


def other_options(command):
    """The command's cargo options besides its package and bench (features and the like)."""
    words, rest, skip = command.cargo_options, [], False
    for i, word in enumerate(words):
        if skip:
            skip = False
        elif word in ("-p", "--package", "--bench"):
            skip = True
        elif not word.startswith(("--package=", "--bench=")):
            rest.append(word)
    return rest


def check_script(command):
    """Runs a script command with `--check-args`; returns an error or None."""
    argv = ["bash", command.script, *command.bench_args, "--check-args"]
    print(f"== {shlex.join(argv)}", flush=True)
    try:
        result = subprocess.run(argv, cwd=ROOT, env={**os.environ, **command.env},
                                capture_output=True, text=True, timeout=ARG_CHECK_TIMEOUT_SECS)
    except subprocess.TimeoutExpired:
        return f"{command}: `--check-args` did not finish in {ARG_CHECK_TIMEOUT_SECS} s"
    if result.returncode != 0:
        reason = [l.strip() for l in (result.stderr or result.stdout).splitlines() if l.strip()]
        return f"{command}: {reason[-1] if reason else f'exit {result.returncode}'}"
    print(f"ok   {command}", flush=True)
    return None


def group_by_options(commands):
    """The commands in lists that share their other cargo options, in page order."""
    groups = {}
    for command in commands:
        groups.setdefault(tuple(other_options(command)), []).append(command)
    return list(groups.values())


def build(options):
    """Builds the workspace's benches `options` select; returns {(package, bench): (executable, source)} or an error."""
    profile = os.environ.get("CHECK_BENCHMARKS_PROFILE", "dev")
    argv = ["cargo", "bench", "--workspace", *options, "--no-run", "--locked", "--profile", profile,
            "--message-format=json-render-diagnostics"]
    print(f"== {shlex.join(argv[:-1])}", flush=True)
    result = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        return None, f"`{shlex.join(argv)}` failed (exit {result.returncode}; cargo's message is above)"
    built = {}
    for line in result.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        target = message.get("target", {})
        if message.get("reason") == "compiler-artifact" and "bench" in target.get("kind", []):
            package = PACKAGES.get(message.get("manifest_path"))
            built[(package, target["name"])] = (message["executable"], Path(target["src_path"]))
    return built, None


def package_names():
    """{manifest path: package name} for the workspace's packages."""
    argv = ["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"]
    metadata = json.loads(subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout)
    return {p["manifest_path"]: p["name"] for p in metadata["packages"]}


def harness(source):
    """How a bench parses its arguments: `criterion`, `check-args`, or None (built only)."""
    text = source.read_text()
    if "criterion_main!" in text:
        return "criterion"
    if '"--check-args"' in text:
        return "check-args"
    return None


def check_args(command, executable, source):
    """Runs the bench binary's parse of the command's arguments; returns an error or None."""
    kind = harness(source)
    if kind is None:
        if command.bench_args:
            return (
                f"{command}: bench {command.bench} has no argument check (neither criterion "
                "nor a `--check-args` mode), so its commands may pass no arguments"
            )
        print(f"ok   {command} (built; it takes no arguments)")
        return None
    extra = "--list" if kind == "criterion" else "--check-args"
    argv = [executable, "--bench", *command.bench_args, extra]
    env = {**os.environ, **command.env}
    try:
        result = subprocess.run(
            argv,
            cwd=package_dir(source),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=ARG_CHECK_TIMEOUT_SECS,
        )
    except subprocess.TimeoutExpired:
        return f"{command}: `{extra}` did not finish within {ARG_CHECK_TIMEOUT_SECS} s"
    if result.returncode != 0:
        reason = [l.strip() for l in (result.stderr or result.stdout).splitlines() if l.strip()]
        said = " / ".join(reason[:3]) or f"exit {result.returncode}"
        return f"{command}: the bench rejects its arguments: {said}"
    if kind == "criterion":
        listed = [l for l in result.stdout.splitlines() if l.endswith(": benchmark")]
        if not listed:
            return f"{command}: the filter matches no benchmark of {command.bench}"
        print(f"ok   {command} ({len(listed)} benchmarks)")
    else:
        print(f"ok   {command} ({result.stdout.strip()})")
    return None


def package_dir(source):
    """The directory of the Cargo.toml above `source` (where `cargo bench` runs the binary)."""
    for parent in source.parents:
        if (parent / "Cargo.toml").exists():
            return parent
    return ROOT


def main():
    global PACKAGES
    PACKAGES = package_names()
    page = ROOT / (sys.argv[1] if len(sys.argv) > 1 else "BENCHMARKS.md")
    commands, errors = extract(page)
    if not commands and not errors:
        errors.append(f"{page.name} has no command in a ```sh block")
    scripts = [c for c in commands if c.script is not None]
    commands = [c for c in commands if c.script is None]
    for command in scripts:
        error = check_script(command)
        if error:
            errors.append(error)
    built = {}  # id(command) -> what its build produced, for commands that built
    for group in group_by_options(commands):
        options = []
        for bench in sorted({c.bench for c in group}):
            options += ["--bench", bench]
        options += other_options(group[0])
        group_built, error = build(options)
        if error is None:
            built.update((id(command), group_built) for command in group)
            continue
        print("== the shared build failed: each of its commands alone", flush=True)
        alone = {}
        for command in group:
            options = ["--bench", command.bench, *other_options(command)]
            key = tuple(options)
            if key not in alone:
                alone[key] = build(options)
            command_built, error = alone[key]
            if error is None:
                built[id(command)] = command_built
            else:
                errors.append(f"{command}: {error}")
    for command in commands:
        built_here = built.get(id(command))
        if built_here is None:
            continue
        target = built_here.get((command.package, command.bench))
        if target is None:
            errors.append(f"{command}: package {command.package} has no bench {command.bench}")
            continue
        error = check_args(command, *target)
        if error:
            errors.append(error)
    if errors:
        print(f"\n{page.name}: {len(errors)} bad command(s):", file=sys.stderr)
        for error in errors:
            print(f"  {error}", file=sys.stderr)
        sys.exit(1)
    print(f"{page.name}: all {len(commands) + len(scripts)} commands build and parse their arguments")


if __name__ == "__main__":
    main()
