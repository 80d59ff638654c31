"""A wrong deployment gets one clear line: exit 2, one line on stderr that
names what is wrong and what for, nothing reported and nothing left attached.
Each wrong deployment is made with the real means a container runtime uses:

- a capability missing: root with a bounding set of the DaemonSet's
  capabilities less one (setpriv --bounding-set), as a pod whose manifest
  lost one from `capabilities.add`;
- a seccomp profile that refuses bpf() (tests/programs/seccomp-refuse
  installs a filter returning EPERM or EACCES, then execs funclatency,
  which holds every capability);
- the Secret's files absent: agent.yaml's web_config naming a file that is
  not there, or a web config naming a certificate that is not there;
- the cgroup v2 tree not mounted: a mount namespace (unshare -m) with the
  cgroup2 mount unmounted, for series by cgroup.

And what is right is not refused: the DaemonSet's five capabilities trace
exactly; without CAP_SYS_ADMIN too, on this kernel; a profile refusing only
perf_event_open() too (uprobe_multi links need no perf event)."""

import os
import shutil
import signal
from pathlib import Path

import pytest

from conftest import (EXIT_TIMEOUT, assert_nothing_attached, assert_refused, build_dir, built,
                      cgroup_v2_mount, parse_json_records, run_tool, totals_by_symbol, wait_until)

pytestmark = pytest.mark.bpf

# The DaemonSet's securityContext.capabilities.add
# (deploy/kubernetes/funclatency-daemonset.yaml), as setpriv names them.
POD_CAPABILITIES = ("sys_admin", "bpf", "perfmon", "sys_ptrace", "dac_read_search")


@pytest.fixture(autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("sets capabilities, seccomp filters and mounts: needs root")


@pytest.fixture
def running_app(procs, private_app):
    return procs.start_workload(private_app, ["--rate", "200"], wait_signal=False)


def with_capabilities(caps):
    """setpriv arguments that start a command as root holding only `caps`."""
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv is not installed (util-linux)")
    bounding = ",".join(["-all", *(f"+{cap}" for cap in caps)])
    return ["setpriv", f"--bounding-set={bounding}", "--inh-caps=-all"]


def run_wrapped(wrapper, tool, args):
    return run_tool(Path(wrapper[0]), [*wrapper[1:], tool, *args])


def follow_args(app):
    return ["--follow", "--json", "-d", "2", f"{app}:slow_op"]


@pytest.mark.parametrize("dropped, named", [
    (["sys_ptrace"], r"CAP_SYS_PTRACE, to read /proc/PID/exe, maps and root"),
    (["dac_read_search"], r"CAP_DAC_READ_SEARCH, to read binaries and libraries"),
    (["sys_admin", "bpf"], r"CAP_BPF, to load the BPF programs"),
    (["sys_admin", "perfmon"], r"CAP_PERFMON, to attach tracing programs and uprobes"),
], ids=["sys_ptrace", "dac_read_search", "bpf", "perfmon"])
def test_agent_without_a_capability_names_it(tool, private_app, running_app, dropped, named):
    held = [cap for cap in POD_CAPABILITIES if cap not in dropped]
    result = run_wrapped(with_capabilities(held), tool, follow_args(private_app))
    assert_refused(result, r"^funclatency: the agent \(--follow, --config\) is missing ", named,
                   r"securityContext\.capabilities\.add")
    for cap in held:
        assert f"CAP_{cap.upper()}," not in result.stderr, result.stderr
    assert_nothing_attached(running_app, private_app, "slow_op")


def test_tracing_without_bpf_names_it_and_what_for(tool, private_app, running_app):
    result = run_wrapped(with_capabilities(["perfmon"]), tool,
                         ["-d", "1", "-p", running_app.pid, f"{private_app}:slow_op"])
    assert_refused(result, r"load BPF programs: Operation not permitted",
                   r"missing CAP_BPF, to load the BPF programs and create their maps: run as root")
    assert_nothing_attached(running_app, private_app, "slow_op")


def agent_counts(procs, wrapper, tool, app):
    """The agent under `wrapper` over one target-app run: (its slow_op
    calls, target-app's)."""
    agent = procs.spawn([*wrapper, tool, "--follow", "--json", "-i", "0.5", f"{app}:slow_op"])
    agent.wait_for_line("stderr", r"^Following ", 30)
    work = procs.start_workload(app, ["--calls", "200", "--rate", "1000"])
    assert wait_until(lambda: "functions attached in" in agent.text("stderr")
                      or "function attached in" in agent.text("stderr"), 30), agent.describe()
    work.start()
    truth = work.finish()
    assert agent.stop(signal.SIGTERM) == 0, agent.describe()
    records = parse_json_records(agent.text("stdout"))
    counted = sum(r["count"] for r in records if r["type"] == "interval" and "symbol" in r)
    lost = sum(r["lost"] for r in records if r["type"] == "interval" and "symbol" in r)
    assert lost == 0, agent.describe()
    return counted, truth.function("slow_op")["returned"]


@pytest.mark.parametrize("without", [None, "sys_admin"])
def test_the_pods_capabilities_are_enough(procs, tool, private_app, without):
    """The DaemonSet's set traces every call; CAP_SYS_ADMIN is there for
    kernels that require it for uprobes, and this one does not."""
    held = [cap for cap in POD_CAPABILITIES if cap != without]
    counted, made = agent_counts(procs, with_capabilities(held), tool, private_app)
    assert counted == made == 200


def seccomp_refusing(calls, errno_name):
    program = built(build_dir() / "tests" / "programs" / "seccomp-refuse", "seccomp-refuse")
    return [str(program), ",".join(calls), errno_name, "--"]


@pytest.mark.parametrize("errno_name, strerror", [("EPERM", "Operation not permitted"),
                                                  ("EACCES", "Permission denied")])
@pytest.mark.parametrize("how", ["pid", "agent"])
def test_seccomp_refusing_bpf_is_named(tool, private_app, running_app, errno_name, strerror, how):
    args = (follow_args(private_app) if how == "agent"
            else ["-d", "1", "-p", running_app.pid, f"{private_app}:slow_op"])
    result = run_wrapped(seccomp_refusing(["bpf"], errno_name), tool, args)
    assert_refused(result, rf"load BPF programs: {strerror}",
                   r"the capabilities are held: a seccomp profile or an LSM .* likely refuses "
                   r"bpf\(\)")
    assert_nothing_attached(running_app, private_app, "slow_op")


def test_seccomp_refusing_bpf_without_sys_admin_names_both(tool, private_app, running_app):
    wrapper = [*with_capabilities([c for c in POD_CAPABILITIES if c != "sys_admin"]),
               *seccomp_refusing(["bpf"], "EPERM")]
    result = run_wrapped(wrapper, tool, follow_args(private_app))
    assert_refused(result, r"may also want CAP_SYS_ADMIN", r"seccomp profile", r"bpf\(\)")
    assert_nothing_attached(running_app, private_app, "slow_op")


def test_seccomp_refusing_only_perf_event_open_traces_exactly(procs, tool, private_app):
    counted, made = agent_counts(procs, seccomp_refusing(["perf_event_open"], "EPERM"), tool,
                                 private_app)
    assert counted == made == 200


def agent_yaml(path: Path, app: Path, web_config: Path = None, by="cgroup") -> Path:
    text = (f"targets:\n  - name: app\n    program: {app}\n    functions: [slow_op]\n"
            f"by: [{by}]\n")
    if web_config:
        text += ("exporters:\n  prometheus:\n    listen: \"127.0.0.1:0\"\n"
                 f"    web_config: {web_config}\n")
    path.write_text(text)
    return path


def test_secret_not_mounted_is_named(tool, private_app, running_app, tmp_path):
    """The Secret's volume absent: agent.yaml names a web config that is not there."""
    web_config = tmp_path / "web" / "web-config.yml"
    config = agent_yaml(tmp_path / "agent.yaml", private_app, web_config)
    result = run_tool(tool, ["--config", config, "-d", "2"])
    assert_refused(result, rf"cannot read {web_config}: No such file or directory")
    assert_nothing_attached(running_app, private_app, "slow_op")


def test_secret_without_its_certificate_is_named(tool, private_app, running_app, tmp_path):
    """The Secret mounted without the certificate its web config names."""
    web = tmp_path / "web"
    web.mkdir()
    web_config = web / "web-config.yml"
    web_config.write_text("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n")
    config = agent_yaml(tmp_path / "agent.yaml", private_app, web_config)
    result = run_tool(tool, ["--config", config, "-d", "2"])
    assert_refused(result, rf"cannot read cert_file {web / 'tls.crt'}: No such file or directory")
    assert_nothing_attached(running_app, private_app, "slow_op")


def without_cgroup_tree():
    """unshare arguments: a mount namespace with the cgroup v2 mount
    unmounted, then the command."""
    mount = cgroup_v2_mount()
    if shutil.which("unshare") is None:
        pytest.fail("unshare is not installed (util-linux)")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'umount "{mount}" && exec "$@"', "sh"]


@pytest.mark.parametrize("how", ["config", "follow", "pid"])
def test_no_cgroup_tree_for_series_by_cgroup_is_named(tool, private_app, running_app, tmp_path,
                                                      how):
    args = {
        "config": ["--config", agent_yaml(tmp_path / "agent.yaml", private_app), "-d", "2"],
        "follow": follow_args(private_app),
        "pid": ["--by", "cgroup", "-d", "1", "-p", running_app.pid, f"{private_app}:slow_op"],
    }[how]
    result = run_wrapped(without_cgroup_tree(), tool, args)
    assert_refused(result, r"series by cgroup .* need the cgroup v2 tree, and /proc/mounts lists "
                           r"no cgroup2 file system", r"choose another --by")
    assert_nothing_attached(running_app, private_app, "slow_op")


def test_no_cgroup_tree_is_fine_without_series_by_cgroup(procs, tool, private_app):
    work = procs.start_workload(private_app, ["--calls", "100", "--rate", "1000"])
    traced = procs.start_tool(without_cgroup_tree()[0], [
        *without_cgroup_tree()[1:], tool, "--json", "--by", "pid", "-p", work.pid,
        f"{private_app}:slow_op"])
    work.start()
    truth = work.finish()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    total = totals_by_symbol(traced.text("stdout"))["slow_op"]
    assert total["count"] == truth.function("slow_op")["returned"] == 100, total
