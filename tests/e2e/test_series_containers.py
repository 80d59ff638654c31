"""Containers by their cgroup: a target-app process in a cgroup v2 directory
named the way kubelet's systemd cgroup driver and containerd name a pod's
container (kubepods.slice/kubepods-burstable.slice/
kubepods-burstable-pod<uid with underscores>.slice/cri-containerd-<64 hex>.scope)
is reported by `--by cgroup` with its container id and pod UID (dashes, as
the API server writes it), its calls counted exactly against its own ground
truth; a process in a cgroup of no container gets neither field."""

import os
import uuid

import pytest

from conftest import cgroup_v2_mount, run_processes, totals

pytestmark = pytest.mark.bpf
MODES = ["events", "kernel"]
CALLS = 150


def pod_container_levels(pod_uid: str, container_id: str):
    """The cgroup directories, outermost first, of a containerd container of a
    burstable pod under kubelet's systemd driver."""
    return ("kubepods.slice", "kubepods-burstable.slice",
            f"kubepods-burstable-pod{pod_uid.replace('-', '_')}.slice",
            f"cri-containerd-{container_id}.scope")


def relative_cgroup(path):
    return "/" + str(path.relative_to(cgroup_v2_mount()))


@pytest.mark.parametrize("mode", MODES)
def test_containerd_pod_cgroup_names_its_container_and_pod(procs, tool, private_app, cgroups,
                                                            mode):
    pod_uid = str(uuid.uuid4())
    container_id = os.urandom(32).hex()
    # Nested in a directory of the test's own, so no real kubepods.slice is touched.
    container = cgroups("pod", *pod_container_levels(pod_uid, container_id))
    plain = cgroups("plain")
    records, truths = run_processes(procs, tool, private_app, [container, plain],
                                    ["--by", "cgroup"], mode, calls=CALLS)
    in_container, in_plain = truths.values()

    by_cgroup = {r["cgroup"]: r for r in totals(records)}
    assert set(by_cgroup) == {relative_cgroup(container), relative_cgroup(plain)}, by_cgroup
    record = by_cgroup[relative_cgroup(container)]
    assert record["container_id"] == container_id, record
    assert record["pod_uid"] == pod_uid, record
    assert record["mode"] == mode, record
    assert record["count"] == in_container["returned"] == CALLS, record
    assert record["lost"] == 0, record

    other = by_cgroup[relative_cgroup(plain)]
    assert "container_id" not in other and "pod_uid" not in other, other
    assert other["count"] == in_plain["returned"] == CALLS, other

    # Every interval record of the container's series names it too, and the
    # intervals add up to the total.
    intervals = [r for r in records
                 if r["type"] == "interval" and r.get("cgroup") == relative_cgroup(container)]
    assert intervals, records
    assert all(r.get("container_id") == container_id and r.get("pod_uid") == pod_uid
               for r in intervals), intervals
    assert sum(r["count"] for r in intervals) == CALLS
