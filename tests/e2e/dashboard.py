"""deploy/grafana/funclatency-dashboard.json's queries, their template
variables filled in as Grafana would, for the tests that run them against a
real Prometheus (test_prometheus.py: a host; test_deploy.py: the agent's pod).
One reader, so both tests run the queries the dashboard really has."""

import json
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "funclatency-dashboard.json"


def dashboard_values(instance: str = ".*") -> dict:
    """The variables' values: the prefix's default, the host picked (a regex),
    every function, $__rate_interval for a 15 s scrape (1m)."""
    return {"${prefix}": "ebpf_", "$instance": instance, "$symbol": ".*",
            "$__rate_interval": "1m"}


def fill(text: str, values: dict) -> str:
    for name, value in values.items():
        text = text.replace(name, value)
    return text


def dashboard_queries(values: dict) -> list:
    """(panel title, expr) of every panel's query."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = fill(target["expr"], values)
            assert "$" not in expr, f"unknown variable in {target['expr']}"
            queries.append((panel["title"], expr))
    return queries


def dashboard_variables(values: dict) -> list:
    """(name, query) of every template variable that is a query."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [(variable["name"], fill(variable["definition"], values))
            for variable in dashboard["templating"]["list"] if variable["type"] == "query"]
