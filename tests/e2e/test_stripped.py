"""funclatency stripped of its symbols, as the package ships it
(CPACK_STRIP_FILES), works in every mode that probes funclatency's own code:
the agent (--follow, --config), --calibrate and --subtract-overhead. A copy
of the build tree's binary is stripped with strip(1), so this runs in every
test run; test_package.py runs the installed package the same way."""

import shutil
import subprocess

import pytest

from agent_runs import (agent_config, agent_counts_match_truth, assert_calibrates,
                        assert_subtracts_overhead)
from conftest import build_dir, built

pytestmark = pytest.mark.bpf


@pytest.fixture(scope="module")
def stripped_tool(tmp_path_factory):
    if shutil.which("strip") is None:
        pytest.fail("strip is not installed (binutils)")
    source = built(build_dir() / "funclatency")
    stripped = tmp_path_factory.mktemp("stripped") / "funclatency"
    subprocess.run(["strip", "-o", str(stripped), str(source)], check=True, timeout=60)
    sections = subprocess.run(["readelf", "-S", "-W", str(stripped)], capture_output=True,
                              text=True, check=True).stdout
    assert ".symtab" not in sections, "strip left a symbol table"
    return stripped


def test_follow(procs, stripped_tool, private_app):
    agent_counts_match_truth(procs, stripped_tool, private_app,
                             ["--follow", f"{private_app}:slow_op", f"{private_app}:fast_op"])


def test_config(procs, stripped_tool, private_app, tmp_path):
    config = agent_config(tmp_path / "agent.yaml", private_app)
    agent_counts_match_truth(procs, stripped_tool, private_app, ["--config", config])


def test_calibrate(stripped_tool):
    assert_calibrates(stripped_tool)


def test_subtract_overhead(procs, stripped_tool, private_app):
    assert_subtracts_overhead(procs, stripped_tool, private_app)
