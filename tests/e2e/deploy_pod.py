"""The DaemonSet's pod as podman runs it, derived from
deploy/kubernetes/funclatency-daemonset.yaml on every run, so the manifest
and what the deployment test runs cannot drift apart.

Why a translation and not `podman kube play`: podman 4.3 plays Pods, not
DaemonSets; it refuses projected volumes; and it ignores `hostPID` without a
word (its support came in 4.5), so a played pod runs the agent in a PID
namespace of its own, where it sees no other container's processes. So
podman_commands() turns the template into `podman pod create` and `podman
create --pod` options, field by field, each a named step below; a field it
does not know fails the test, so an edit of the manifest is either run as
written or reported, never dropped.

The projected volume becomes a host folder that KubeletVolume fills the way
the kubelet fills a ConfigMap or Secret volume (its atomic writer): the
files in a timestamped folder `..2026_...`, a `..data` symlink to it, and
each top-level name a symlink into `..data`; an update writes a new
timestamped folder and renames a new `..data` over the old one, so a reader
sees the old files or the new ones, never a mix.
"""

import datetime
import os
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"


def manifest(name: str, kind: str) -> dict:
    """The one object of `kind` in deploy/kubernetes/NAME."""
    documents = [d for d in yaml.safe_load_all((KUBERNETES / name).read_text()) if d]
    found = [d for d in documents if d.get("kind") == kind]
    assert len(found) == 1, f"want one {kind} in {name}, found {len(found)}"
    return found[0]


def configmap_files() -> dict:
    """{key: text} of the ConfigMap funclatency-agent."""
    return dict(manifest("funclatency-configmap.yaml", "ConfigMap")["data"])


class KubeletVolume:
    """A ConfigMap/Secret volume's folder as the kubelet keeps it (see above)."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.current = None  # the timestamped folder ..data points to

    def write(self, files: dict):
        """Publishes `files` ({relative path: (text, mode)}) at once."""
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("..%Y_%m_%d_%H_%M_%S.")
        payload = self.folder / f"{stamp}{uuid.uuid4().int % 10**10:010d}"
        payload.mkdir(mode=0o755)
        for relative, (text, mode) in files.items():
            path = payload / relative
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            path.write_text(text)
            os.chmod(path, mode)
        staged = self.folder / "..data_tmp"
        staged.unlink(missing_ok=True)
        staged.symlink_to(payload.name)
        os.rename(staged, self.folder / "..data")
        for top in {Path(relative).parts[0] for relative in files}:
            link = self.folder / top
            if not link.is_symlink():
                link.symlink_to(f"..data/{top}")
        if self.current is not None:
            for path in sorted(self.current.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
            self.current.rmdir()
        self.current = payload


def projected_files(volume: dict, configmap: dict, secret: dict) -> dict:
    """{path: (text, mode)} the projected volume `volume` holds, taken from
    its sources' items (keys, paths, modes) as the kubelet does."""
    default_mode = volume["projected"].get("defaultMode", 0o644)
    objects = {"configMap": configmap, "secret": secret}
    files = {}
    for source in volume["projected"]["sources"]:
        (kind, spec), = source.items()
        data = objects[kind]
        for item in spec["items"]:
            files[item["path"]] = (data[item["key"]], item.get("mode", default_mode))
    return files


def _cpu(quantity) -> float:
    text = str(quantity)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def _bytes(quantity: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    return int(quantity[:-2]) * units[quantity[-2:]] if quantity[-2:] in units else int(quantity)


def _unknown(where: str, fields: dict, known: set):
    extra = set(fields) - known
    assert not extra, (f"{where} has {sorted(extra)}, which tests/e2e/deploy_pod.py does not "
                       f"know how to run with podman: translate it there")


def template():
    return manifest("funclatency-daemonset.yaml", "DaemonSet")["spec"]["template"]


def podman_commands(pod_name: str, image: str, config_folder: Path):
    """(`podman pod create` options, `podman create` options up to and with
    the image, the container's arguments) of the DaemonSet's pod template."""
    spec = template()["spec"]
    labels = template()["metadata"]["labels"]
    pod = ["--name", pod_name, *(f"--label={k}={v}" for k, v in labels.items())]
    _unknown("the pod spec", spec, {
        "hostPID", "automountServiceAccountToken", "enableServiceLinks",
        "terminationGracePeriodSeconds", "tolerations", "containers", "volumes"})
    (container,) = spec["containers"]
    _unknown("the container", container, {
        "name", "image", "args", "ports", "readinessProbe", "livenessProbe",
        "securityContext", "resources", "volumeMounts"})
    options = ["--pod", pod_name, "--name", f"{pod_name}-{container['name']}"]
    # The node's PID namespace.
    if spec.get("hostPID"):
        options.append("--pid=host")
    # No API server here: no service account token to mount, no service
    # variables to set (automountServiceAccountToken, enableServiceLinks);
    # tolerations only steer scheduling, and there is one node.
    # The kubelet's grace period between SIGTERM and SIGKILL.
    options.append(f"--stop-timeout={spec.get('terminationGracePeriodSeconds', 30)}")
    # A pod's containers restart when they exit (restartPolicy Always).
    options.append("--restart=always")
    security = container["securityContext"]
    _unknown("the securityContext", security, {
        "runAsUser", "runAsNonRoot", "privileged", "readOnlyRootFilesystem", "capabilities",
        "seccompProfile", "appArmorProfile"})
    options.append(f"--user={security.get('runAsUser', 0)}")
    assert not security.get("privileged"), "a privileged pod is not what the README documents"
    if security.get("readOnlyRootFilesystem"):
        # Kubernetes mounts no tmpfs of its own on a read-only root (podman does).
        options += ["--read-only", "--read-only-tmpfs=false"]
    for capability in security["capabilities"].get("drop", []):
        options.append(f"--cap-drop={capability}")
    for capability in security["capabilities"].get("add", []):
        options.append(f"--cap-add={capability}")
    # RuntimeDefault is podman's default seccomp profile: no option.
    assert security.get("seccompProfile", {}).get("type") in (None, "RuntimeDefault")
    if security.get("appArmorProfile", {}).get("type") == "Unconfined":
        options.append("--security-opt=apparmor=unconfined")
    resources = container.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    # The kubelet's CPU shares for a request; the limits as cgroup limits.
    if "cpu" in requests:
        options.append(f"--cpu-shares={max(2, int(_cpu(requests['cpu']) * 1024))}")
    if "memory" in requests:
        options.append(f"--memory-reservation={_bytes(requests['memory'])}")
    if "cpu" in limits:
        options.append(f"--cpus={_cpu(limits['cpu'])}")
    if "memory" in limits:
        options.append(f"--memory={_bytes(limits['memory'])}")
    # The ports need no mapping: the pod's IP is reachable from the node, as
    # in a cluster. The tcpSocket probes are podman healthchecks, which need
    # systemd (absent in CI's containers): the test checks the port itself.
    volumes = {v["name"]: v for v in spec["volumes"]}
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        _unknown(f"volume {mount['name']}", volume, {"name", "hostPath", "projected"})
        if "hostPath" in volume:
            source = volume["hostPath"]["path"]
        else:
            # The projected volume (ConfigMap + Secret): a folder the test
            # fills as the kubelet would (KubeletVolume).
            source = str(config_folder)
        mode = "ro" if mount.get("readOnly") else "rw"
        options.append(f"--volume={source}:{mount['mountPath']}:{mode}")
    options.append(image)
    return pod, options, [str(a) for a in container.get("args", [])]


def projected_volume() -> dict:
    daemonset = manifest("funclatency-daemonset.yaml", "DaemonSet")
    (volume,) = [v for v in daemonset["spec"]["template"]["spec"]["volumes"] if "projected" in v]
    return volume
