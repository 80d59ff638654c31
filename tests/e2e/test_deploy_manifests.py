"""The Kubernetes deployment in deploy/kubernetes/ is what the API server
would accept and runs what the agent would load: every object validated
against the Kubernetes API's own OpenAPI schema (tests/k8s/validate.js, the
npm package kubernetes-models pinned by tests/k8s/package-lock.json, which
scripts/setup installs), a deliberately broken copy rejected, the ConfigMap's
agent.yaml checked by funclatency itself (--check-config), the ConfigMap's
reload.sh signalling only its own container's agent, and the Prometheus scrape
job speaking https with basic auth. No BPF: nothing is attached."""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import refusal_line, run_tool

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
VALIDATOR = ROOT / "tests" / "k8s" / "validate.js"
SCRAPE_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus-kubernetes.yml"
CONFIGMAP = "ConfigMap/funclatency-agent"


def manifest_files():
    return sorted(MANIFESTS.glob("*.yaml"))


@pytest.fixture(scope="module")
def node():
    path = shutil.which("node")
    if path is None:
        pytest.fail("node is not installed; run scripts/setup")
    if not (VALIDATOR.parent / "node_modules" / "kubernetes-models").is_dir():
        pytest.fail("tests/k8s/node_modules is missing; run scripts/setup "
                    "(npm ci --prefix tests/k8s)")
    return path


def validate(node, files):
    return subprocess.run([node, str(VALIDATOR), *map(str, files)], capture_output=True,
                          text=True, timeout=60)


def get(node, selector, key, files=None):
    result = subprocess.run([node, str(VALIDATOR), "--get", selector, key,
                             *map(str, files or manifest_files())],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def objects():
    """Every object of deploy/kubernetes/*.yaml, by "Kind/name"."""
    found = {}
    for path in manifest_files():
        for obj in yaml.safe_load_all(path.read_text()):
            if obj:
                found[f"{obj['kind']}/{obj['metadata']['name']}"] = obj
    return found


def broken_copy(tmp_path, file, old, new):
    """deploy/kubernetes/ copied to tmp_path with `old` replaced by `new` in `file`."""
    for path in manifest_files():
        shutil.copy(path, tmp_path / path.name)
    target = tmp_path / file
    text = target.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {file}"
    target.write_text(text.replace(old, new))
    return sorted(tmp_path.glob("*.yaml"))


# --- The Kubernetes API's schema ------------------------------------------------


def test_every_manifest_is_valid_against_the_kubernetes_schema(node):
    files = manifest_files()
    result = validate(node, files)
    assert result.returncode == 0, result.stdout + result.stderr
    valid = set(re.findall(r"^ok \S+: (\S+)$", result.stdout, re.MULTILINE))
    assert valid == set(objects()), result.stdout
    assert {"Namespace/funclatency", "ConfigMap/funclatency-agent", "Secret/funclatency-web",
            "DaemonSet/funclatency"} <= valid


@pytest.mark.parametrize("old, new, error", [
    # The schema: a boolean field given a string.
    ("hostPID: true", 'hostPID: "yes"', r"hostPID must be boolean"),
    # The schema: a quantity that is not one.
    ("memory: 512Mi", "memory: lots", r"limits/memory must match format \"quantity\""),
    # The schema: a container without a name.
    ("- name: funclatency\n          image:", "- image:", r"must have required property name"),
    # The API server, beyond the schema: a container without an image.
    ("          image: registry.example.com/funclatency:0.1.0\n", "", r"image: Required value"),
    # The kubelet: a projected key the Secret does not hold.
    ("- key: tls.key", "- key: server.key", r"Secret funclatency-web has no key server.key"),
], ids=["hostPID-string", "bad-quantity", "container-without-name", "container-without-image",
        "missing-secret-key"])
def test_a_broken_manifest_is_rejected(node, tmp_path, old, new, error):
    result = validate(node, broken_copy(tmp_path, "funclatency-daemonset.yaml", old, new))
    assert result.returncode == 1, result.stdout + result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("INVALID"))
    assert line.startswith("INVALID funclatency-daemonset.yaml: DaemonSet/funclatency: "), line
    assert re.search(error, line), line


def test_a_manifest_that_is_not_yaml_is_refused(node, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n")
    result = validate(node, [bad])
    assert result.returncode == 2 and "bad.yaml" in result.stderr, result.stderr


# --- The DaemonSet runs what the ConfigMap and the Secret hold --------------------


def test_daemonset_runs_the_agent_from_the_configmap_with_tls_and_auth(node):
    found = objects()
    pod = found["DaemonSet/funclatency"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["hostPID"] is True
    assert container["args"] == ["--config", "/etc/funclatency/agent.yaml"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert all(m.get("readOnly") for m in mounts.values())
    assert "subPath" not in mounts["/etc/funclatency"]  # ConfigMap updates must reach the pod
    assert volumes[mounts["/sys/fs/cgroup"]["name"]]["hostPath"]["path"] == "/sys/fs/cgroup"
    caps = container["securityContext"]["capabilities"]
    assert caps["drop"] == ["ALL"]
    assert set(caps["add"]) == {"BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["tcpSocket"]["port"] == "metrics"  # no credentials needed

    # Where the projected volume puts each key: /etc/funclatency/PATH.
    projected = {}
    for source in volumes[mounts["/etc/funclatency"]["name"]]["projected"]["sources"]:
        kind, ref = ("ConfigMap", source["configMap"]) if "configMap" in source \
            else ("Secret", source["secret"])
        for item in ref["items"]:
            projected["/etc/funclatency/" + item["path"]] = (f"{kind}/{ref['name']}", item["key"])
    assert projected["/etc/funclatency/agent.yaml"] == (CONFIGMAP, "agent.yaml")

    agent = yaml.safe_load(get(node, CONFIGMAP, "agent.yaml"))
    prometheus = agent["exporters"]["prometheus"]
    port = int(prometheus["listen"].rsplit(":", 1)[1])
    assert [p["containerPort"] for p in container["ports"] if p["name"] == "metrics"] == [port]
    # TLS and basic auth on by default: the web config and the files it names
    # come from the Secret.
    secret, key = projected[prometheus["web_config"]]
    web = yaml.safe_load(get(node, secret, key))
    assert web["basic_auth_users"], "basic auth is off"
    for field in ("cert_file", "key_file"):
        assert web["tls_server_config"][field] in projected, field
    # Programs named as the containers see them.
    for target in agent["targets"]:
        assert target["program"].startswith("/") and target["functions"], target


# --- The agent loads the ConfigMap's configuration --------------------------------


def test_agent_checks_the_configmaps_configuration(node, tool, tmp_path):
    config = tmp_path / "agent.yaml"
    config.write_text(get(node, CONFIGMAP, "agent.yaml"))
    result = run_tool(tool, ["--config", config, "--check-config"])
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"


def test_agent_refuses_a_target_without_functions(node, tool, tmp_path):
    text = get(node, CONFIGMAP, "agent.yaml")
    broken, count = re.subn(r"^\s*functions: .*\n", "", text, count=1, flags=re.MULTILINE)
    assert count == 1
    config = tmp_path / "agent.yaml"
    config.write_text(broken)
    line = refusal_line(run_tool(tool, ["--config", config, "--check-config"]))
    assert re.search(r"function", line), line


# --- reload.sh: SIGHUP to this container's agent, and only to it -----------------


def test_reload_script_signals_only_the_agent_of_its_own_mount_namespace(node, tmp_path):
    script = tmp_path / "reload.sh"
    script.write_text(get(node, CONFIGMAP, "reload.sh"))
    agent_exe = tmp_path / "funclatency"  # stands in for /usr/bin/funclatency
    shutil.copy("/bin/sleep", agent_exe)
    other_exe = tmp_path / "other"
    shutil.copy("/bin/sleep", other_exe)
    env = dict(os.environ, FUNCLATENCY_EXE=str(agent_exe))

    # SIGHUP as a real agent has it (the test may run under a parent that
    # ignores it, e.g. nohup, and an ignored signal is inherited across exec).
    def hup_default():
        signal.signal(signal.SIGHUP, signal.SIG_DFL)

    agent = subprocess.Popen([agent_exe, "60"], preexec_fn=hup_default)
    other = subprocess.Popen([other_exe, "60"], preexec_fn=hup_default)
    elsewhere = None
    if os.geteuid() == 0 and shutil.which("unshare"):
        # The same executable in another mount namespace: another pod's agent.
        elsewhere = subprocess.Popen(["unshare", "--mount", "--propagation", "private",
                                      agent_exe, "60"], preexec_fn=hup_default)
    try:
        time.sleep(0.3)
        result = subprocess.run(["sh", script], env=env, capture_output=True, text=True,
                                timeout=30)
        assert result.returncode == 0, result.stderr
        assert f"pid {agent.pid}" in result.stdout, result.stdout
        assert agent.wait(timeout=10) == -signal.SIGHUP
        assert other.poll() is None
        if elsewhere is not None:
            assert elsewhere.poll() is None, "signalled an agent of another mount namespace"

        # No agent left in this namespace: it says so and fails.
        result = subprocess.run(["sh", script], env=env, capture_output=True, text=True,
                                timeout=30)
        assert result.returncode == 1 and "no " in result.stderr, result.stderr
    finally:
        for process in (agent, other, elsewhere):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


# --- Prometheus scrapes it over https with basic auth -----------------------------


def test_prometheus_scrape_job_uses_https_and_basic_auth(tmp_path):
    job = yaml.safe_load(SCRAPE_CONFIG.read_text())["scrape_configs"][0]
    assert job["scheme"] == "https"
    assert job["basic_auth"]["username"] and job["basic_auth"]["password_file"]
    assert job["tls_config"]["ca_file"] and not job["tls_config"].get("insecure_skip_verify")
    # The name Prometheus verifies is the one the Secret's recipe certifies.
    secret_doc = (MANIFESTS / "funclatency-secret.example.yaml").read_text()
    assert f"subjectAltName=DNS:{job['tls_config']['server_name']}" in secret_doc
    user = job["basic_auth"]["username"]
    assert re.search(rf"^\s+{user}: ", secret_doc, re.MULTILINE), "no such basic_auth_users entry"

    # Debian's promtool has no Kubernetes discovery: check the rest of the job
    # with the discovery swapped for a static target.
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed; run scripts/setup (Debian's prometheus)")
    del job["kubernetes_sd_configs"]
    job["static_configs"] = [{"targets": ["10.0.0.1:9464"]}]
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"scrape_configs": [job]}))
    result = subprocess.run([promtool, "check", "config", config], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
