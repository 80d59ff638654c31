"""The examples in README.md and docs/*.md, run: docs that cannot rot.

An example is a ```console block; each `$ ` line in it is a command, and the
lines after it, up to the next `$ `, the output the page shows. Every such
command runs here, in the order of its block, in one bash per block, from a
folder laid out like a checkout (`build/` holding the built tree, `deploy/`,
`docs/`...), and must exit 0; its output must have the shape of what the page
shows: every word of the shown output (paths, numbers, hex ids and units
left out) appears in the real output, a shown histogram means real histogram
rows, and a shown JSON record means a real one with at least its keys. So
renaming an option fails the command, and renaming a field, a metric or a
label fails the shape.

A comment line right before a block says what the block needs:
`<!-- doc-test: target-app -->` starts a target-app first (`$app` and
`pidof target-app` name it), `podman` and `prometheus` say the block runs those. Ports 9464 and
9090 are replaced by free ones, and paths under /tmp by the test's own folder,
so the examples run beside other tests. Background commands (`... &`) and
containers the block started are stopped at its end.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import build_dir, built, require_bpf_strictly

pytestmark = pytest.mark.bpf

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TAG = re.compile(r"<!--\s*doc-test:\s*([^>]*?)\s*-->")
HISTOGRAM_ROW = re.compile(r"^\s*\d+ -> \d+\s+\d+\s+\|", re.MULTILINE)
# Units vary with the values (1.2ms, 980.0us); the words around them do not.
UNITS = {"ns", "us", "ms", "s"}
BLOCK_TIMEOUT = 240  # seconds for one block (the Prometheus one waits 40 s)


def examples():
    """(page, line, tags, [(command, shown output)]) for every console block."""
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        index = 0
        while index < len(lines):
            if lines[index].strip() != "```console":
                index += 1
                continue
            start = index + 1
            previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            tag = TAG.search(previous)
            tags = set(tag.group(1).split()) if tag else set()
            commands = []
            index = start
            while index < len(lines) and lines[index].strip() != "```":
                line = lines[index]
                if line.startswith("$ "):
                    commands.append([line[2:], []])
                elif commands:
                    commands[-1][1].append(line)
                else:
                    raise AssertionError(f"{page.name}:{index + 1}: a console block must start "
                                         f"with a `$ ` command")
                index += 1
            found.append((page, start, tags, [(c, "\n".join(o)) for c, o in commands]))
            index += 1
    return found


EXAMPLES = examples()


def words(text: str) -> set:
    """The words of an output whose presence says its shape: field names,
    labels, metric names, fixed phrases; not paths, numbers, hex or units."""
    found = set()
    for line in text.splitlines():
        line = re.sub(r"/[\w.+@:-]*(?:/[\w.+@:-]*)*", " ", line)
        line = re.sub(r"\b(?:0x)?[0-9a-f]{6,}\b", " ", line)  # ids, addresses
        line = re.sub(r"\b\d+(?:\.\d+)?e[-+]?\d+\b", " ", line)  # 1.1e-22
        line = re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", " ", line)  # a time's T23 is no word
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_-]*", line):
            word = word.strip("-")
            if not word or word in UNITS:
                continue
            if re.search(r"\d", word) and re.fullmatch(r"x?[0-9a-f]+", word):
                continue
            found.add(word)
    return found


def json_records(text: str) -> list:
    records = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
    return records


def assert_same_shape(command: str, shown: str, real: str, where: str):
    missing = sorted(words(shown) - words(real))
    assert not missing, (f"{where}: `{command}` no longer prints {missing} (the page shows them); "
                         f"its output was:\n{real}")
    if HISTOGRAM_ROW.search(shown):
        assert HISTOGRAM_ROW.search(real), f"{where}: `{command}` printed no histogram:\n{real}"
    for record in json_records(shown):
        alike = [r for r in json_records(real) if r.get("type") == record.get("type")]
        assert any(set(record) <= set(r) for r in alike), (
            f"{where}: `{command}` printed no record with the keys {sorted(record)}:\n{real}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checkout_like(tmp_path: Path, target_app: Path, ports: dict) -> Path:
    """A folder the examples run in: ROOT's entries, `build/` the built tree
    with this worker's target-app, `deploy/` with the ports replaced."""
    work = tmp_path / "checkout"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in ("build", "deploy", ".git"):
            (work / entry.name).symlink_to(entry)
    build = work / "build"
    build.mkdir()
    for entry in build_dir().iterdir():
        if entry.name != "target-app":
            (build / entry.name).symlink_to(entry)
    shutil.copy2(target_app, build / "target-app")
    shutil.copytree(ROOT / "deploy", work / "deploy")
    for config in (work / "deploy").rglob("*.yml"):
        text = config.read_text()
        for old, new in ports.items():
            text = text.replace(old, new)
        config.write_text(text)
    # Every user may read it (a container's process reads build/ through a mount).
    for path in (tmp_path, work, build):
        path.chmod(0o755)
    return work


def needs(tags: set):
    """Skips (or fails, where BPF tests are required) a block whose tools
    are missing here."""
    missing = []
    if "podman" in tags:
        missing += [p for p in ("podman", "runc") if shutil.which(p) is None]
    if "prometheus" in tags:
        missing += [p for p in ("prometheus", "promtool", "curl") if shutil.which(p) is None]
    if missing:
        message = f"not installed: {missing} (scripts/setup installs them)"
        if require_bpf_strictly():
            pytest.fail(message)
        pytest.skip(message)


def script(commands, tags: set, label: str, ports: dict, tmp: Path) -> str:
    """One bash script for a block: each command between markers, its output
    and exit status; background jobs and labelled containers stopped at the
    end."""
    lines = [
        "set -u",
        # pidof names the block's own target-app (other tests run theirs),
        # in a background command's subshell too (which has no jobs).
        'pidof() { local p; if [ "$1" = target-app ] && [ -n "${FL_DOC_TARGET_PID:-}" ]; then '
        'echo "$FL_DOC_TARGET_PID"; return 0; fi; for p in $(jobs -p); do '
        '[ "$(basename "$(readlink /proc/$p/exe)")" = "$1" ] && { echo "$p"; return 0; }; done; '
        'command pidof "$@"; }',
        f'podman() {{ if [ "$1" = run ]; then shift; command podman run --label {label} "$@"; '
        'else command podman "$@"; fi; }',
        "finish() { kill $(jobs -p) 2>/dev/null; "
        f"ids=$(command podman ps -aq --filter label={label} 2>/dev/null); "
        '[ -n "$ids" ] && command podman rm -f -t 1 $ids >/dev/null 2>&1; wait; }',
        "trap finish EXIT",
    ]
    if "target-app" in tags:
        lines += ["build/target-app >/dev/null & app=$!", "FL_DOC_TARGET_PID=$app", "sleep 0.5"]
    for number, (command, _) in enumerate(commands):
        for old, new in ports.items():
            command = command.replace(old, new)
        command = command.replace("/tmp/", f"{tmp}/")
        if command.rstrip().endswith("&"):
            lines.append(command)
            continue
        lines += [f"echo '@@doc-test {number} start'", f"{{ {command}\n}} 2>&1",
                  f"echo \"@@doc-test {number} exit $?\""]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("page,line,tags,commands", EXAMPLES,
                         ids=[f"{p.name}:{line}" for p, line, _, _ in EXAMPLES])
def test_example_runs_as_shown(page, line, tags, commands, tmp_path, worker_copy):
    needs(tags)
    target_app = worker_copy(built(build_dir() / "target-app"))
    ports = {port: str(free_port()) for port in ("9464", "9090", "4318")}
    work = checkout_like(tmp_path, target_app, ports)
    label = f"funclatency-doc-test={uuid.uuid4().hex[:12]}"
    where = f"{page.relative_to(ROOT)}:{line}"
    result = subprocess.run(["bash", "-c", script(commands, tags, label, ports, tmp_path)],
                            cwd=work, capture_output=True, text=True, timeout=BLOCK_TIMEOUT,
                            stdin=subprocess.DEVNULL, env={**os.environ, "PWD": str(work)})
    outputs = dict(re.findall(r"^@@doc-test (\d+) start\n(.*?)^@@doc-test \1 exit",
                              result.stdout, re.MULTILINE | re.DOTALL))
    statuses = dict(re.findall(r"^@@doc-test (\d+) exit (\d+)$", result.stdout, re.MULTILINE))
    for number, (command, shown) in enumerate(commands):
        if command.rstrip().endswith("&"):
            continue
        key = str(number)
        assert key in statuses, f"{where}: `{command}` did not run:\n{result.stdout}{result.stderr}"
        real = outputs.get(key, "")
        assert statuses[key] == "0", f"{where}: `{command}` exited {statuses[key]}:\n{real}"
        assert_same_shape(command, shown, real, where)


def test_pages_have_examples():
    # Guards the parser: no block found would pass the test above vacuously.
    pages = {page.name for page, _, _, _ in EXAMPLES}
    assert "README.md" in pages and len(EXAMPLES) >= 4, [(p.name, line) for p, line, _, _ in EXAMPLES]
    assert all(commands for _, _, _, commands in EXAMPLES)


def test_shape_check_catches_a_renamed_field():
    shown = "count 10  avg 1.0ms  p95 2.0ms  lost 0\n  256 -> 511   3  |***"
    real = "count 10  avg 1.0ms  q95 2.0ms  lost 0\n  256 -> 511   3  |***"
    with pytest.raises(AssertionError, match="p95"):
        assert_same_shape("funclatency", shown, real, "here")
    assert_same_shape("funclatency", shown, shown.replace("1.0ms", "870.2us"), "here")


# A line that runs funclatency: env assignments, sudo, a path may come first.
COMMAND_START = re.compile(r"^\s*(?:\w+=\S+\s+)*(?:sudo\s+(?:-E\s+)?)?(?:\S*/)?funclatency\s")


def shown_commands():
    """(page, line, command) for each funclatency command in a ```sh block:
    commands a reader runs elsewhere (a cluster, a collector), not here."""
    found = []
    for page in PAGES:
        in_sh = False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if line.strip().startswith("```"):
                in_sh = line.strip() == "```sh" if not in_sh else False
                continue
            if in_sh:
                command = line.split("#")[0]
                if COMMAND_START.match(command):
                    found.append((page, number, command))
    return found


def test_commands_not_run_still_use_real_options(tool):
    """The examples in ```sh blocks are not run here; their options must
    exist all the same (a renamed option fails here)."""
    help_text = subprocess.run([str(tool), "--help"], capture_output=True, text=True).stdout
    known = set(re.findall(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)", help_text))
    commands = shown_commands()
    assert len(commands) >= 2, commands
    for page, number, command in commands:
        if re.search(r"funclatency\s+(report|diff)\b", command):
            continue
        after = command[COMMAND_START.match(command).end():]
        for word in after.split():
            option = word.split("=")[0]
            if re.fullmatch(r"--?[A-Za-z][A-Za-z0-9-]*", option):
                assert option in known, (f"{page.relative_to(ROOT)}:{number}: `{command.strip()}` "
                                         f"uses {option}, which funclatency --help does not list")

