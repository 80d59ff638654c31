"""The fleet path as a user deploys it, whole: the image built from
deploy/kubernetes/Dockerfile over the package `cpack` makes, the DaemonSet's
pod template (run by podman as deploy_pod.py translates it) beside two
containers of Debian's nginx (stripped, as shipped), the ConfigMap's
agent.yaml and a Secret the test makes, Debian's prometheus scraping the
pod over TLS with basic auth as deploy/prometheus/prometheus-kubernetes.yml
says, and every query of the Grafana dashboard run against what it scraped.

The ground truth is what nginx answered: a load generator counts the
requests it sent and got answered, nginx's access log counts them too, and
the agent's count of ngx_http_process_request per container must equal them.
Then a reload as Kubernetes does it (the ConfigMap's files swapped by a new
`..data` symlink, reload.sh), and a rolling update under load (the pod
stopped with SIGTERM, a new one started): no request fails, no breakpoint is
left in nginx while no agent runs, counting resumes, and Prometheus sees a
counter reset, not a spike.

The tests of this file run in order on one deployment (module fixtures).
Needs root, podman with runc, catatonit (the pause image of podman's pods),
debootstrap (the base image: minutes the first time, cached after,
deploy_images.py) and prometheus: scripts/setup deploy prometheus.
"""

import base64
import http.client
import crypt
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import build_dir, cgroup_v2_mount, free_port, wait_until
from dashboard import dashboard_queries, dashboard_values, dashboard_variables
import deploy_images
from tls_certs import make_ca_and_server_certificate

yaml = pytest.importorskip("yaml")
import deploy_pod  # noqa: E402 (needs yaml)

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PASSWORD = f"pw-{uuid.uuid4().hex}"
TRACED = "ngx_http_process_request"  # called once per request nginx answers
RUN_ID = uuid.uuid4().hex[:6]
START_TIMEOUT = 60.0  # seconds from the pod's start to the agent's probes attached
COUNT_TIMEOUT = 40.0  # the agent's interval (10 s) + a scrape, with room for load
SEED_QUERY = ("histogram_quantile(0.95, sum by (le, symbol) "
              "(rate(ebpf_function_latency_ms_bucket[1m])))")
RATE = 60  # requests a second each nginx gets from the load generator

pytestmark = [pytest.mark.bpf]


def podman(env, *args, timeout=120, check=True) -> str:
    result = subprocess.run(["podman", *map(str, args)], capture_output=True, text=True,
                            env=env, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        pytest.fail(f"podman {' '.join(map(str, args))} failed ({result.returncode}):\n"
                    f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return result.stdout.strip()


# --- The pieces -----------------------------------------------------------------


class Nginx:
    """One container of Debian's nginx on podman's bridge network."""

    def __init__(self, env, image, name):
        self.env = env
        self.name = name
        self.id = podman(env, "run", "--detach", "--name", name, image)
        self.ip = podman(env, "inspect", "--format", "{{.NetworkSettings.IPAddress}}", self.id)
        self.pid = int(podman(env, "inspect", "--format", "{{.State.Pid}}", self.id))
        if not wait_until(self._listening, 20.0, interval=0.1):
            pytest.fail(f"nginx {name} does not listen on {self.ip}:80:\n"
                        f"{podman(env, 'logs', self.id, check=False)}")

    def _listening(self):
        try:
            socket.create_connection((self.ip, 80), timeout=1.0).close()
            return True
        except OSError:
            return False

    def workers(self) -> list:
        """Host PIDs of the master's children (the workers serve requests)."""
        pids = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                text = status.read_text()
            except OSError:
                continue
            if re.search(rf"^PPid:\s+{self.pid}$", text, re.MULTILINE):
                pids.append(int(status.parent.name))
        return pids

    def access_log_lines(self) -> int:
        """Requests nginx has logged: one line each, written when answered."""
        path = Path(f"/proc/{self.pid}/root/var/log/nginx/access.log")
        return len(path.read_text().splitlines())


class Load:
    """Keeps one nginx busy at RATE requests a second over keep-alive
    connections; counts what it sent, what was answered (200) and what failed."""

    def __init__(self, ip, threads=3):
        self.ip = ip
        self.sent = self.answered = 0
        self.failures = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(threads,), daemon=True)
                         for _ in range(threads)]
        for thread in self._threads:
            thread.start()

    def _run(self, threads):
        connection = None
        pause = threads / RATE
        next_at = time.monotonic()
        while not self._stop.is_set():
            next_at += pause
            with self._lock:
                self.sent += 1
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(self.ip, 80, timeout=5)
                connection.request("GET", "/")
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    raise OSError(f"HTTP {response.status}")
                with self._lock:
                    self.answered += 1
            except (OSError, http.client.HTTPException) as error:
                with self._lock:
                    self.failures.append(repr(error))
                connection = None
            time.sleep(max(0.0, next_at - time.monotonic()))

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        return self


def burst(ip, count):
    """`count` requests, one connection; all must be answered."""
    connection = http.client.HTTPConnection(ip, 80, timeout=5)
    for _ in range(count):
        connection.request("GET", "/")
        response = connection.getresponse()
        response.read()
        assert response.status == 200
    connection.close()


class Prometheus:
    """Debian's prometheus scraping the agent with the scrape job of
    deploy/prometheus/prometheus-kubernetes.yml (see scrape_config)."""

    def __init__(self, folder: Path, config: dict):
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.fail("prometheus is not installed (scripts/setup prometheus)")
        self.config_path = folder / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config))
        check = subprocess.run(["promtool", "check", "config", self.config_path],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(folder / "prometheus.log", "w")
        self.process = subprocess.Popen(
            [binary, f"--config.file={self.config_path}",
             f"--storage.tsdb.path={folder / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_until(self._ready, 30.0, interval=0.2):
            pytest.fail(f"prometheus not ready:\n{(folder / 'prometheus.log').read_text()}")

    def _ready(self):
        assert self.process.poll() is None, "prometheus exited"
        try:
            urllib.request.urlopen(self.url + "/-/ready", timeout=1.0).read()
            return True
        except OSError:
            return False

    def reconfigure(self, config: dict):
        """A new config, read on SIGHUP (as a config reloader sidecar does)."""
        self.config_path.write_text(yaml.safe_dump(config))
        self.process.send_signal(signal.SIGHUP)

    def api(self, path, **params):
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params, doseq=True)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            reply = json.loads(response.read())
        assert reply["status"] == "success", reply
        return reply["data"]

    def query(self, expr) -> list:
        """[(labels, value)] of an instant query."""
        data = self.api("query", query=expr)
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()


def scrape_config(template: dict, target: str, node: str, secrets: Path) -> dict:
    """deploy/prometheus/prometheus-kubernetes.yml for one static target,
    changed only where the test must:
    1. kubernetes_sd_configs (no API server here) becomes a static target
       carrying the __meta_kubernetes_* labels the job's relabel_configs
       read, with the values pod discovery gives the agent's pod;
    2. the job's secret files are read from the test's folder (same names);
    3. a scrape every second instead of every 15 s, for the test's pace."""
    config = json.loads(json.dumps(template))
    (job,) = config["scrape_configs"]
    del job["kubernetes_sd_configs"]
    job["static_configs"] = [{"targets": [target], "labels": {
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "funclatency",
        "__meta_kubernetes_pod_container_port_name": "metrics",
        "__meta_kubernetes_pod_node_name": node}}]
    for section, key in (("basic_auth", "password_file"), ("tls_config", "ca_file")):
        job[section][key] = str(secrets / Path(job[section][key]).name)
    config["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    return config


class AgentPod:
    """The DaemonSet's pod, run by podman as deploy_pod.py translates it."""

    def __init__(self, deployment, name):
        self.deployment = deployment
        self.env = deployment.env
        self.name = name
        pod, container, args = deploy_pod.podman_commands(name, deployment.image,
                                                          deployment.volume.folder)
        podman(self.env, "pod", "create", *pod)
        self.container = container[container.index("--name") + 1]
        podman(self.env, "create", *container, *args)
        podman(self.env, "pod", "start", name)
        self.ip = self._ip()

    def _ip(self):
        infra = podman(self.env, "pod", "inspect", "--format", "{{.InfraContainerID}}", self.name)
        return podman(self.env, "inspect", "--format", "{{.NetworkSettings.IPAddress}}", infra)

    @property
    def pid(self):
        return int(podman(self.env, "inspect", "--format", "{{.State.Pid}}", self.container))

    def logs(self):
        return podman(self.env, "logs", self.container, check=False)

    def restarts(self):
        return int(podman(self.env, "inspect", "--format", "{{.RestartCount}}", self.container,
                          check=False) or 0)

    def scrape(self) -> str:
        """GET /metrics as Prometheus does: TLS to the pod's IP verifying the
        server name, basic auth."""
        context = ssl.create_default_context(cafile=str(self.deployment.secrets / "ca.crt"))
        with socket.create_connection((self.ip, 9464), timeout=5) as raw:
            name = self.deployment.server_name
            with context.wrap_socket(raw, server_hostname=name) as tls:
                auth = base64.b64encode(f"{self.deployment.user}:{PASSWORD}".encode()).decode()
                tls.sendall(f"GET /metrics HTTP/1.1\r\nHost: {name}\r\n"
                            f"Authorization: Basic {auth}\r\nConnection: close\r\n\r\n".encode())
                data = b""
                while chunk := tls.recv(65536):
                    data += chunk
        head, _, body = data.decode().partition("\r\n\r\n")
        assert head.startswith("HTTP/1.1 200"), head
        return body

    def metric(self, name) -> float:
        """The sum of a metric's samples in one scrape; -1 when the pod does
        not answer yet."""
        try:
            body = self.scrape()
        except (OSError, AssertionError):
            return -1
        return sum(float(line.split()[-1]) for line in body.splitlines()
                   if line.startswith(name + " ") or line.startswith(name + "{"))

    def wait_attached(self, functions):
        if not wait_until(lambda: self.metric("funclatency_attached_functions") >= functions,
                          START_TIMEOUT, interval=0.5):
            restarts = self.restarts()
            # A container that restarts at once has its log cleared at each
            # start: stopped, it keeps the last run's.
            podman(self.env, "pod", "stop", "--time", 10, self.name, check=False)
            pytest.fail(f"the agent has not attached {functions} functions in {START_TIMEOUT}s "
                        f"(restarts: {restarts}); its log:\n{self.logs()[-3000:]}")

    def exec(self, *args):
        return podman(self.env, "exec", self.container, *args)

    def stop(self):
        """As the kubelet stops a pod: SIGTERM, SIGKILL after the grace period."""
        podman(self.env, "pod", "stop", "--time", 10, self.name, timeout=60)
        return int(podman(self.env, "inspect", "--format", "{{.State.ExitCode}}", self.container))

    def remove(self):
        podman(self.env, "pod", "rm", "--force", self.name, check=False)


class Deployment:
    """What the fixture deployed, for the tests (attributes set there)."""


def require_tools():
    if os.geteuid() != 0:
        pytest.skip("runs containers with podman as root")
    cache = build_dir() / "CMakeCache.txt"
    if cache.is_file() and "FUNCLATENCY_SANITIZE:BOOL=ON" in cache.read_text():
        # The sanitizer build's binary needs its runtime, which no image has.
        pytest.skip("the image is built from the regular build, not the sanitizer build")
    missing = [p for p in ("podman", "runc", "catatonit", "debootstrap", "prometheus", "promtool",
                           "cpack") if shutil.which(p) is None
               and not Path(f"/usr/libexec/podman/{p}").exists()]
    if missing:
        pytest.fail(f"{' '.join(missing)} not installed (scripts/setup deploy prometheus)")


def pack(folder: Path) -> Path:
    config = build_dir() / "CPackConfig.cmake"
    if not config.is_file():
        pytest.fail(f"{config} is missing: configure the build with the top-level CMakeLists.txt")
    deploy_images.run(["cpack", "--config", config, "-G", "DEB", "-B", folder], None, timeout=300)
    (deb,) = folder.glob("funclatency_*.deb")
    return deb


def node_name():
    return socket.gethostname()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """Images, the Secret, the ConfigMap's volume, two nginx, the agent's pod
    and Prometheus; all removed at the end, the cached images kept."""
    require_tools()
    d = Deployment()
    d.folder = tmp_path_factory.mktemp("deploy")
    d.env = deploy_images.podman_env(d.folder)
    cleanups = []
    try:
        started = time.monotonic()
        deb = pack(d.folder / "package")
        base = deploy_images.base_image(d.env)
        nginx_image = deploy_images.nginx_image(base, d.env, d.folder)
        d.image = deploy_images.funclatency_image(
            deb, base, f"localhost/funclatency-test-{RUN_ID}:latest",
            DEPLOY / "kubernetes" / "Dockerfile", d.env, d.folder)
        cleanups.append(lambda: podman(d.env, "rmi", "--force", d.image, check=False))
        d.image_size = deploy_images.image_size(d.image, d.env)
        print(f"images ready in {time.monotonic() - started:.0f} s; "
              f"funclatency image {d.image_size / 1e6:.0f} MB")

        # The Secret: a CA, the agent's certificate for the name Prometheus
        # verifies, the bcrypt hash of the password; Prometheus' own Secret.
        template = yaml.safe_load((DEPLOY / "prometheus" / "prometheus-kubernetes.yml").read_text())
        job = template["scrape_configs"][0]
        # The name the agent's certificate carries and the user, as the job says.
        d.server_name = job["tls_config"]["server_name"]
        d.user = job["basic_auth"]["username"]
        d.secrets = d.folder / "secrets"
        d.secrets.mkdir()
        ca, cert, key = make_ca_and_server_certificate(d.secrets, d.server_name)
        shutil.copy(ca, d.secrets / Path(job["tls_config"]["ca_file"]).name)
        (d.secrets / Path(job["basic_auth"]["password_file"]).name).write_text(PASSWORD)
        bcrypt = crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
        d.secret = {
            "web-config.yml": ("tls_server_config:\n"
                               "  cert_file: /etc/funclatency/web/tls.crt\n"
                               "  key_file: /etc/funclatency/web/tls.key\n"
                               "  min_version: TLS12\n"
                               f"basic_auth_users:\n  {d.user}: {bcrypt}\n"),
            "tls.crt": cert.read_text(), "tls.key": key.read_text()}
        d.configmap = deploy_pod.configmap_files()
        d.volume = deploy_pod.KubeletVolume(d.folder / "config-volume")
        d.publish = lambda configmap: d.volume.write(deploy_pod.projected_files(
            deploy_pod.projected_volume(), configmap, d.secret))
        d.publish(d.configmap)

        prefix = f"fl-deploy-{RUN_ID}"
        names = [f"{prefix}-nginx-{n}" for n in range(2)]
        cleanups.append(lambda: podman(d.env, "rm", "--force", "--ignore", "--time", 0, *names,
                                       check=False))
        d.nginx = [Nginx(d.env, nginx_image, name) for name in names]
        d.nginx_binary = Path(f"/proc/{d.nginx[0].pid}/root/usr/sbin/nginx")

        # Every pod of this run, the rolling update's too, whatever failed.
        cleanups.append(lambda: [podman(d.env, "pod", "rm", "--force", name, check=False)
                                 for name in podman(d.env, "pod", "ps", "--format",
                                                    "{{.Name}}", check=False).split()
                                 if name.startswith(f"funclatency-{RUN_ID}")])
        d.pod = AgentPod(d, f"funclatency-{RUN_ID}a")
        d.node = node_name()
        d.prometheus_template = template
        d.prometheus = Prometheus(d.folder, scrape_config(template, f"{d.pod.ip}:9464", d.node,
                                                          d.secrets))
        cleanups.append(d.prometheus.stop)
        d.pod.wait_attached(3)
        print(f"deployed in {time.monotonic() - started:.0f} s")
        yield d
    finally:
        for cleanup in reversed(cleanups):
            cleanup()


def wait_query(prometheus, expr, predicate, timeout, what):
    """The query's samples once `predicate(samples)` holds; fails naming `what`."""
    seen = []

    def holds():
        seen[:] = prometheus.query(expr)
        return predicate(seen)

    if not wait_until(holds, timeout, interval=0.5):
        pytest.fail(f"{what}: {expr} gave {seen} after {timeout}s")
    return list(seen)


def counts_by_container(prometheus, symbol=TRACED) -> dict:
    samples = prometheus.query(
        f'sum by (container_id) (ebpf_function_latency_ms_count{{symbol="{symbol}"}})')
    return {labels.get("container_id", ""): value for labels, value in samples}


def dashboard_queries_for(instance):
    """(panel title, expr) of every dashboard query and (name, query) of every
    template variable, the host picked being this agent's instance."""
    values = dashboard_values(re.escape(instance))
    return dashboard_queries(values), dashboard_variables(values)


# --- The tests, in the order a user meets these steps ---------------------------


def test_every_request_is_counted_per_container(deployment):
    """The agent's count of ngx_http_process_request per nginx container is
    what nginx answered, exactly; the seed query answers per container."""
    d = deployment
    before = [box.access_log_lines() for box in d.nginx]
    # Steady load for longer than the agent's interval, so that rate() sees
    # the counts grow between scrapes; then quiet, to compare totals.
    loads = [Load(box.ip) for box in d.nginx]
    time.sleep(15)
    answered = [load.stop().answered for load in loads]
    failures = [f for load in loads for f in load.failures]
    assert not failures, failures[:5]
    logged = [box.access_log_lines() - b for box, b in zip(d.nginx, before)]
    assert logged == answered, f"nginx logged {logged} requests, the test got {answered} answered"
    want = {box.id: float(count) for box, count in zip(d.nginx, answered)}
    got = {}

    def counted():
        # Only these containers: the agent traces every nginx of the node.
        got.clear()
        got.update({k: v for k, v in counts_by_container(d.prometheus).items() if k in want})
        return got == want

    if not wait_until(counted, COUNT_TIMEOUT, interval=0.5):
        pytest.fail(f"the agent counted {got} {TRACED} calls by container_id; nginx answered "
                    f"{want}\n{d.pod.logs()[-2000:]}")
    # The seed's query, whole and per container.
    answer = wait_query(d.prometheus, SEED_QUERY, lambda s: any(
        l.get("symbol") == TRACED and v > 0 for l, v in s), 30, "seed query")
    print(f"{SEED_QUERY}: {answer}")
    for box in d.nginx:
        expr = SEED_QUERY.replace("_bucket[", f'_bucket{{container_id="{box.id}"}}[')
        samples = wait_query(d.prometheus, expr, lambda s: any(
            l.get("symbol") == TRACED and v > 0 for l, v in s), 30, f"nginx {box.name}")
        print(f"p95 in {box.name}: {samples}")


def test_every_dashboard_query_returns_data(deployment):
    """Each template variable has values, the host among them; each panel's
    queries return data (a rate needs two scrapes of a series: a panel gets
    until TIMEOUT to show some, with nginx kept busy meanwhile)."""
    d = deployment
    queries, variables = dashboard_queries_for(d.node)
    loads = [Load(box.ip) for box in d.nginx]
    empty = []
    try:
        def all_answer():
            empty[:] = []
            for name, definition in variables:
                match = re.fullmatch(r"label_values\((.*), (\w+)\)", definition)
                values = d.prometheus.api(f"label/{match.group(2)}/values",
                                          **{"match[]": match.group(1)})
                if not values or (name == "instance" and d.node not in values):
                    empty.append(f"template variable {name}: {definition} gives {values}")
            empty.extend(f"panel {title!r}: {expr}" for title, expr in queries
                         if not d.prometheus.query(expr))
            return not empty

        wait_until(all_answer, 30.0, interval=1.0)
    finally:
        for load in loads:
            load.stop()
    assert not empty, "these return nothing:\n" + "\n".join(empty)


def test_reload_as_kubernetes_does_it(deployment):
    """A ConfigMap update reaches the pod as the kubelet writes it; reload.sh
    applies it (a function added attaches); a broken file keeps the last good
    configuration."""
    d = deployment
    # One more function of nginx (a program is one target: its functions are
    # listed together).
    added = yaml.safe_load(d.configmap["agent.yaml"])
    (nginx,) = [t for t in added["targets"] if t["program"] == "/usr/sbin/nginx"]
    nginx["functions"].append("ngx_http_finalize_request")
    changed = dict(d.configmap, **{"agent.yaml": yaml.safe_dump(added)})
    d.publish(changed)
    out = d.pod.exec("sh", "/etc/funclatency/reload.sh")
    assert "sent SIGHUP" in out, out
    d.pod.wait_attached(4)
    burst(d.nginx[0].ip, 20)
    wait_query(d.prometheus, 'ebpf_function_latency_ms_count{symbol="ngx_http_finalize_request"}',
               lambda s: sum(v for _, v in s) >= 20, COUNT_TIMEOUT, "the added target")
    assert d.prometheus.query("funclatency_config_last_reload_successful")[0][1] == 1

    d.publish(dict(changed, **{"agent.yaml": "targets: [\n"}))
    d.pod.exec("sh", "/etc/funclatency/reload.sh")
    wait_query(d.prometheus, "funclatency_config_last_reload_successful",
               lambda s: s and s[0][1] == 0, 20, "a broken file")
    assert d.pod.metric("funclatency_attached_functions") >= 4, "the last good config was dropped"
    # (A target whose functions changed starts its histograms anew: absent is 0.)
    before = counts_by_container(d.prometheus).get(d.nginx[1].id, 0.0)
    burst(d.nginx[1].ip, 30)
    wait_query(d.prometheus, f'sum(ebpf_function_latency_ms_count{{symbol="{TRACED}",'
               f'container_id="{d.nginx[1].id}"}})', lambda s: s and s[0][1] == before + 30,
               COUNT_TIMEOUT, "counting after a broken reload")
    d.publish(d.configmap)  # the manifest's own, for the pods that follow


def nginx_functions(binary: Path) -> dict:
    """{name: file offset} of the functions agent.yaml's targets match, from
    the stripped binary's dynamic symbols."""
    out = subprocess.run(["nm", "-D", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    values = {p[2]: int(p[0], 16) for p in map(str.split, out.splitlines())
              if len(p) == 3 and p[2].startswith("ngx_http_")}
    segments = []
    for line in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            segments.append((int(parts[2], 16), int(parts[1], 16), int(parts[4], 16)))
    wanted = ("ngx_http_process_request", "ngx_http_process_request_uri",
              "ngx_http_process_request_header", "ngx_http_finalize_request")
    offsets = {}
    for name in wanted:
        value = values[name]
        offsets[name] = next(value - vaddr + offset for vaddr, offset, size in segments
                             if vaddr <= value < vaddr + size)
    return offsets


def patched_functions(box: Nginx, binary: Path, offsets: dict) -> list:
    """(pid, function, bytes) where a worker's code differs from the file."""
    patched = []
    with open(binary, "rb") as f:
        expected = {name: (f.seek(offset), f.read(8))[1] for name, offset in offsets.items()}
    for pid in box.workers():
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or not parts[5].endswith("/usr/sbin/nginx"):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            map_offset = int(parts[2], 16)
            for name, offset in offsets.items():
                if map_offset <= offset < map_offset + end - start:
                    with open(f"/proc/{pid}/mem", "rb") as mem:
                        mem.seek(start + offset - map_offset)
                        seen = mem.read(8)
                    if seen != expected[name]:
                        patched.append((pid, name, seen.hex()))
    return patched


def process_footprint(pid: int) -> dict:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1)) * 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"rss": rss, "cpu": cpu}


def bpf_map_bytes(pid: int) -> int:
    """Kernel memory of the BPF maps process `pid` holds: the `memlock` the
    kernel reports in /proc/PID/fdinfo of each map's descriptor, once per map."""
    maps = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:bpf-map":
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in info.splitlines() if ":\t" in line)
        maps[fields.get("map_id", fd.name)] = int(fields["memlock"])
    return sum(maps.values())


def cgroup_kernel_memory(pid: int) -> int:
    """Kernel memory charged to the memory cgroup of process `pid` (v1:
    memory.kmem.usage_in_bytes; v2: memory.stat's kernel), -1 if unknown."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "memory":
            usage = Path(f"/sys/fs/cgroup/memory{path}/memory.kmem.usage_in_bytes")
            return int(usage.read_text()) if usage.is_file() else -1
        if controllers == "":
            stat = Path(f"{cgroup_v2_mount()}{path}/memory.stat")
            if stat.is_file():
                for entry in stat.read_text().splitlines():
                    if entry.startswith("kernel "):
                        return int(entry.split()[1])
    return -1


def test_footprint_under_load(deployment):
    """The agent's RSS, BPF maps and CPU at 2 x RATE requests a second,
    within the DaemonSet's limits."""
    d = deployment
    loads = [Load(box.ip) for box in d.nginx]
    try:
        time.sleep(2)
        pid = d.pod.pid
        first, t0 = process_footprint(pid), time.monotonic()
        time.sleep(10)
        last, t1 = process_footprint(pid), time.monotonic()
    finally:
        answered = sum(load.stop().answered for load in loads)
    maps = bpf_map_bytes(pid)
    kernel = cgroup_kernel_memory(pid)
    cpu = (last["cpu"] - first["cpu"]) / (t1 - t0)
    functions = d.pod.metric("funclatency_attached_functions")
    print(f"footprint at {2 * RATE} requests/s over 2 nginx ({functions:.0f} functions traced): "
          f"RSS {last['rss'] / 2**20:.1f} MiB, BPF maps {maps / 2**20:.1f} MiB, "
          f"kernel memory of its cgroup {kernel / 2**20:.1f} MiB, "
          f"CPU {cpu * 1000:.0f} m; {answered} requests answered")
    limits = deploy_pod.manifest("funclatency-daemonset.yaml", "DaemonSet")["spec"]["template"][
        "spec"]["containers"][0]["resources"]["limits"]
    assert limits["memory"].endswith("Mi")
    assert last["rss"] + max(maps, 0) < int(limits["memory"][:-2]) * 2**20 / 2


def test_rolling_update_under_load(deployment):
    """The agent's pod stopped (SIGTERM) and a new one started while nginx
    serves: no request fails, no breakpoint stays in nginx between the two,
    counting resumes, Prometheus sees a reset."""
    d = deployment
    offsets = nginx_functions(d.nginx_binary)
    box = d.nginx[0]
    loads = [Load(b.ip) for b in d.nginx]
    try:
        time.sleep(3)
        assert patched_functions(box, d.nginx_binary, offsets), "no breakpoint while traced"
        gap_start = time.time()
        code = d.pod.stop()
        assert code == 0, f"the agent exited with {code} on SIGTERM:\n{d.pod.logs()[-2000:]}"
        left = patched_functions(box, d.nginx_binary, offsets)
        assert not left, f"breakpoints left in nginx while no agent runs: {left}"
        time.sleep(3)
        old = d.pod
        d.pod = AgentPod(d, f"funclatency-{RUN_ID}b")
        old.remove()
        d.prometheus.reconfigure(scrape_config(d.prometheus_template, f"{d.pod.ip}:9464", d.node,
                                               d.secrets))
        d.pod.wait_attached(3)
        # Counting resumes: Prometheus sees the new agent's count, below the
        # old one's (a reset), then growing.
        series = f'ebpf_function_latency_ms_count{{symbol="{TRACED}",container_id="{box.id}"}}'
        def reset_since_the_gap():
            window = int(time.time() - gap_start) + 5  # a scrape before the gap too
            samples = d.prometheus.query(f"resets({series}[{window}s])")
            return bool(samples) and samples[0][1] >= 1 and bool(
                d.prometheus.query(f"sum({series})"))

        if not wait_until(reset_since_the_gap, COUNT_TIMEOUT, interval=0.5):
            pytest.fail(f"Prometheus saw no counter reset of {series} after the update")
        first = d.prometheus.query(f"sum({series})")[0][1]
        wait_query(d.prometheus, f"sum({series})", lambda s: s and s[0][1] > first,
                   COUNT_TIMEOUT, "counting after the update")
    finally:
        for load in loads:
            load.stop()
    failures = [f for load in loads for f in load.failures]
    assert not failures, f"{len(failures)} requests failed during the update: {failures[:5]}"
    # A reset, not a spike: rate() across the gap never exceeds what was sent
    # (the agent publishes every 10 s: a 30 s window smooths its steps).
    data = d.prometheus.api("query_range", query=f"sum(rate({series}[30s]))",
                            start=gap_start - 10, end=time.time(), step=1)
    rates = [float(v) for result in data["result"] for _, v in result["values"]]
    assert rates and max(rates) < RATE * 1.5, f"rate() over the update: {rates}"
