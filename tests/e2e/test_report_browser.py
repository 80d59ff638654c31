"""`funclatency report` opened by a real browser: Debian's chromium, headless,
loads the HTML of a real run (target-app's slow_op and fast_op, with a mode
switch, and a longjmp workload's jump_out, whose abandoned calls are counted
lost). The DOM has one heatmap cell per non-empty (interval, row) with its
count in its tooltip, percentile paths with one point per interval, the lost
calls and the mode switch on the time axis; the screenshot shows the heatmap's
colours. An empty, a one-interval and a 10,000-interval run render too."""

import html.parser
import json
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import EXIT_TIMEOUT, build_dir, built, run_tool

CHROMIUM_TIMEOUT = 120  # seconds for one headless load
# Size bound of the 10,000-interval report: columns are capped at 600 per function.
MAX_LARGE_REPORT_BYTES = 3 * 1024 * 1024
# viridis ends: the heatmap's palette runs from dark purple to yellow.
PALETTE_ENDS = [(68, 1, 84), (253, 231, 37)]


@pytest.fixture(scope="session")
def chromium():
    path = shutil.which("chromium")
    if not path:
        pytest.fail("chromium is not installed (scripts/setup installs it)")
    return path


def chromium_args(chromium, tmp_path):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", f"--user-data-dir={tmp_path / 'chromium-profile'}"]


def dump_dom(chromium, tmp_path, page):
    """The DOM of `page` after chromium loaded it."""
    result = subprocess.run([*chromium_args(chromium, tmp_path), "--dump-dom",
                             page.as_uri()], capture_output=True, text=True,
                            timeout=CHROMIUM_TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "</html>" in result.stdout, result.stdout[-2000:]
    return result.stdout


def screenshot(chromium, tmp_path, page, out, height=2600):
    result = subprocess.run([*chromium_args(chromium, tmp_path), f"--screenshot={out}",
                             f"--window-size=1200,{height}", page.as_uri()],
                            capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT)
    assert result.returncode == 0 and out.is_file(), result.stderr[-3000:]
    return out


class ReportDom(html.parser.HTMLParser):
    """Sections (per function) with their heatmap cells, percentile paths,
    lost markers and mode-change lines, as chromium serialised them."""

    def __init__(self):
        super().__init__()
        self.sections = {}
        self._section = None
        self._open_title = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = a.get("class", "").split()
        if tag == "section" and "function" in classes:
            self._section = {"cells": [], "paths": {}, "lost": [], "modes": [], "heatmaps": 0}
            self.sections[a["data-symbol"]] = self._section
        elif self._section is None:
            return
        elif tag == "svg" and "heatmap" in classes:
            self._section["heatmaps"] += 1
        elif tag == "rect" and "cell" in classes:
            cell = {k: int(a[f"data-{k}"]) for k in ("first", "last", "row", "count")}
            cell["title"] = ""
            self._section["cells"].append(cell)
            self._open_title = cell
        elif tag == "path" and "pct" in classes:
            self._section["paths"][a["data-percentile"]] = (int(a["data-points"]), a["d"])
        elif tag == "path" and "lost" in classes:
            self._section["lost"].append(int(a["data-lost"]))
        elif tag == "line" and "mode-change" in classes:
            self._section["modes"].append(a["data-mode"])

    def handle_data(self, data):
        if self._open_title is not None:
            self._open_title["title"] += data

    def handle_endtag(self, tag):
        if tag == "rect":
            self._open_title = None


def usec_row(low_ns):
    low = low_ns // 1000
    return 0 if low < 2 else low.bit_length() - 1


def record_mixed_run(procs, tool, tmp_path):
    """A 10 s run at 0.5 s intervals of copies of target-app (started late and
    stopped early: fast_op goes events -> kernel -> events) and workload-longjmp
    (20 calls abandoned by longjmp: lost). Copies, so no other test's process
    of the same binary is traced."""
    app = tmp_path / "target-app"
    shutil.copy(built(build_dir() / "target-app"), app)
    jumper = tmp_path / "workload-longjmp"
    shutil.copy(built(build_dir() / "tests" / "programs" / "workload-longjmp"), jumper)
    app_proc = procs.spawn([app, "--wait-signal"])
    app_proc.wait_for_line("stdout", r"^ready pid=\d+", 10)
    jump = procs.start_workload(jumper, ["--calls", "200", "--abandon", "20"])
    traced = procs.start_tool(tool, ["--json", "-i", "0.5", "-d", "10", "--mode", "auto",
                                     "--auto-threshold", "1000", f"{app}:slow_op",
                                     f"{app}:fast_op", f"{jumper}:jump_out"])
    time.sleep(1.2)
    jump.start()
    time.sleep(1.0)
    app_proc.send(signal.SIGUSR1)
    time.sleep(3.5)
    app_proc.send(signal.SIGINT)
    assert app_proc.wait(EXIT_TIMEOUT) == 0, app_proc.describe()
    jump.finish()
    assert traced.wait(20) == 0, traced.describe()
    run = tmp_path / "run.ndjson"
    run.write_text(traced.text("stdout") + "\n")
    return run


def intervals_by_symbol(run):
    records = [json.loads(line) for line in run.read_text().splitlines() if line.strip()]
    by_symbol = {}
    for record in records:
        if record["type"] == "interval":
            by_symbol.setdefault(record["symbol"], []).append(record)
    return by_symbol


@pytest.mark.bpf
def test_chromium_renders_a_real_run(procs, tool, chromium, tmp_path):
    run = record_mixed_run(procs, tool, tmp_path)
    intervals = intervals_by_symbol(run)
    assert set(intervals) == {"slow_op", "fast_op", "jump_out"}, intervals.keys()
    assert all(len(records) >= 19 for records in intervals.values()), \
        {s: len(r) for s, r in intervals.items()}
    modes = "".join(r["mode"][0] for r in intervals["fast_op"])
    assert "ek" in modes, f"fast_op never switched to kernel mode: {modes}"
    assert sum(r["lost"] for r in intervals["jump_out"]) == 20

    page = tmp_path / "report.html"
    made = run_tool(tool, ["report", run, "-o", page])
    assert made.returncode == 0, made.stderr
    assert "http://" not in page.read_text().replace("http://www.w3.org/2000/svg", "")
    dom = ReportDom()
    dom.feed(dump_dom(chromium, tmp_path, page))
    assert set(dom.sections) == set(intervals)

    for symbol, records in intervals.items():
        section = dom.sections[symbol]
        expected = {}
        for index, record in enumerate(records):
            for low_ns, _, count in record["log2_buckets"]:
                expected[(index, usec_row(low_ns))] = count
        cells = {}
        for cell in section["cells"]:
            assert cell["first"] == cell["last"], f"{symbol}: columns summed for 20 intervals"
            key = (cell["first"], cell["row"])
            assert key not in cells, f"{symbol}: two cells for {key}"
            cells[key] = cell["count"]
            assert re.search(rf"\b{cell['count']} calls$", cell["title"]), cell
        assert cells == expected, symbol
        # One point per interval with calls, in each percentile path.
        with_calls = sum(1 for r in records if r["count"] > 0)
        for name in ("p50", "p95", "p99"):
            points, d = section["paths"][name]
            assert points == with_calls == len(re.findall(r"[ML]\d", d)), (symbol, name, d)
        assert sum(section["lost"]) == sum(r["lost"] for r in records), symbol
        assert len(section["lost"]) == sum(1 for r in records if r["lost"] > 0), symbol
    # The switches of fast_op, in order: to kernel (and back to events if it came back).
    switches = [m for prev, m in zip(modes, modes[1:]) if m != prev]
    assert dom.sections["fast_op"]["modes"] == [
        {"e": "events", "k": "kernel"}[m] for m in switches], modes

    # A screenshot that is not blank: many pixels in the heatmap's colours.
    from PIL import Image
    image = Image.open(screenshot(chromium, tmp_path, page, tmp_path / "report.png")).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours and len(colours) > 50, "screenshot has almost no colours"

    def near(rgb, target, tolerance=40):
        return all(abs(a - b) <= tolerance for a, b in zip(rgb, target))
    for end in PALETTE_ENDS:
        pixels = sum(count for count, rgb in colours if near(rgb, end))
        assert pixels > 200, f"no heatmap colour near {end} in the screenshot"
    white = sum(count for count, rgb in colours if rgb == (255, 255, 255))
    assert white < 0.97 * image.width * image.height, "screenshot is blank"


def synthetic_record(symbol, index, buckets, mode="events", lost=0):
    count = sum(c for _, _, c in buckets)
    seconds = 1767225600 + index
    return json.dumps({
        "type": "interval", "symbol": symbol, "binary": "/usr/bin/app", "mode": mode,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(seconds)),
        "count": count, "sum_ns": sum((lo + hi) // 2 * c for lo, hi, c in buckets),
        "min_ns": buckets[0][0] + 1 if buckets else 0, "max_ns": buckets[-1][1] if buckets else 0,
        "p50_ns": buckets[0][1] if buckets else 0, "p95_ns": buckets[-1][1] if buckets else 0,
        "p99_ns": buckets[-1][1] if buckets else 0, "lost": lost, "lost_unreturned": lost,
        "lost_depth": 0, "lost_ringbuf": 0, "log2_buckets": buckets,
        "future_field": {"ignored": True}})


def test_empty_one_interval_and_10000_interval_runs_render(tool, chromium, tmp_path):
    # 10,000 intervals of two functions; one with no calls at all.
    lines = []
    for i in range(10000):
        rows = [[256000, 511999, 10 + i % 7], [512000, 1023999, 1 + (i // 100) % 5]]
        if i % 1000 == 999:
            rows.append([8192000, 16383999, 2])
        lines.append(synthetic_record("busy", i, rows, "kernel" if 4000 <= i < 6000 else "events",
                                      lost=1 if i % 2500 == 0 else 0))
        lines.append(synthetic_record("idle", i, []))
    cases = {
        "large": "\n".join(lines),
        "one": synthetic_record("single", 0, [[2000, 3999, 5], [4000, 7999, 1]]),
        "empty": synthetic_record("never_called", 0, []),
    }
    for name, text in cases.items():
        run = tmp_path / f"{name}.ndjson"
        run.write_text(text + "\n")
        page = tmp_path / f"{name}.html"
        started = time.monotonic()
        made = run_tool(tool, ["report", run, "-o", page], timeout=60)
        assert made.returncode == 0, made.stderr
        assert time.monotonic() - started < 30, f"{name}: report took too long"
        size = page.stat().st_size
        assert size < MAX_LARGE_REPORT_BYTES, f"{name}: {size} bytes"
        dom = ReportDom()
        dom.feed(dump_dom(chromium, tmp_path, page))
        if name == "large":
            busy = dom.sections["busy"]
            assert len({c["first"] for c in busy["cells"]}) == 600  # columns, not intervals
            assert sum(c["count"] for c in busy["cells"] if c["row"] == 8) == \
                sum(10 + i % 7 for i in range(10000))
            assert busy["paths"]["p50"][0] == 600
            assert busy["modes"] == ["kernel", "events"]
            assert sum(busy["lost"]) == 4
            assert dom.sections["idle"]["cells"] == [] and dom.sections["idle"]["heatmaps"] == 0
        elif name == "one":
            assert [(c["row"], c["count"]) for c in dom.sections["single"]["cells"]] == \
                [(1, 5), (2, 1)]
            assert dom.sections["single"]["paths"]["p99"][0] == 1
        else:
            assert dom.sections["never_called"]["cells"] == []
            assert "No calls" in page.read_text()
