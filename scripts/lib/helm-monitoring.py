"""The chart's dashboard and alerts, checked structurally; writes what promtool checks.

Usage: helm-monitoring.py WORK DASHBOARD RUNBOOK

Reads the renders WORK/{default,monitoring,all-features}.yaml of scripts/check-helm.sh.
Checks that both objects are off by default and on when enabled; that the ConfigMap
carries the sidecar's label and exactly the committed dashboard; that every alert links
a section of docs/runbook.md that exists, has a summary and a severity, and that every
section of the runbook belongs to an alert. Writes
  WORK/rules.yaml            the PrometheusRule's groups (default thresholds, namespace
                             `tasks`), for `promtool check rules` and `promtool test rules`
  WORK/dashboard-rules.yaml  one recording rule per dashboard target, Grafana's variables
                             replaced by values PromQL parses, for `promtool check rules`
Prints ok/FAIL lines and `PYRESULT passed failed` last.
"""
import json
import re
import sys

import yaml

work, dashboard_path, runbook_path = sys.argv[1:4]
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else "\n     " + str(detail)))


def load(name):
    return [d for d in yaml.safe_load_all(open(f"{work}/{name}.yaml")) if d]


def of_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def dashboards(docs):
    return [d for d in of_kind(docs, "ConfigMap") if "tasklane.json" in d.get("data", {})]


default, monitoring, all_f = load("default"), load("monitoring"), load("all-features")
check("default: no PrometheusRule, no dashboard ConfigMap",
      not of_kind(default, "PrometheusRule") and not dashboards(default))

committed = json.load(open(dashboard_path))
for name, docs, extra in (("monitoring", monitoring, {}), ("all-features", all_f, {"grafana_folder": "Tasks"})):
    cms = dashboards(docs)
    cm = cms[0] if cms else {}
    check(f"{name}: one dashboard ConfigMap labelled grafana_dashboard: \"1\", holding dashboards/tasklane.json",
          len(cms) == 1 and cm["metadata"]["labels"].get("grafana_dashboard") == "1"
          and json.loads(cm["data"]["tasklane.json"]) == committed
          and cm["metadata"].get("annotations", {}) == extra, cm.get("metadata"))

# Runbook sections: `## Title` -> GitHub's anchor.
def anchor(title):
    return re.sub(r"[^a-z0-9 -]", "", title.strip().lower()).replace(" ", "-")

runbook = open(runbook_path).read()
sections = {anchor(m) for m in re.findall(r"^## (.+)$", runbook, re.M)}

rules = of_kind(monitoring, "PrometheusRule")
check("monitoring: one PrometheusRule (monitoring.coreos.com/v1)",
      len(rules) == 1 and rules[0]["apiVersion"] == "monitoring.coreos.com/v1", [r.get("apiVersion") for r in rules])
groups = rules[0]["spec"]["groups"] if rules else []
alerts = [r for g in groups for r in g["rules"] if "alert" in r]
linked = set()
for a in alerts:
    ann = a.get("annotations", {})
    link = ann.get("runbook", "")
    section = link.partition("#")[2]
    linked.add(section)
    check(f"{a['alert']}: summary, description, severity, runbook {link} is a section of docs/runbook.md",
          ann.get("summary") and ann.get("description") and a.get("labels", {}).get("severity")
          and link.startswith("docs/runbook.md#") and section in sections, a)
check("every section of docs/runbook.md is an alert's runbook", sections <= linked, sorted(sections - linked))
expected = {"TasklaneQueueNotDraining", "TasklaneTasksFailing", "TasklaneLeasesLost", "TasklaneCircuitOpen",
            "TasklaneWebhookDeliveriesFailing", "TasklaneWebhookBacklogGrowing", "TasklanePoolSaturated",
            "TasklaneNoQueueSampler", "TasklaneEmergencyStopOn", "TasklaneVacuumHorizonHeld"}
check(f"the {len(expected)} alerts, and only them", {a["alert"] for a in alerts} == expected,
      sorted({a["alert"] for a in alerts} ^ expected))
check("alerts select the release's namespace",
      all('namespace="tasks"' in a["expr"] for a in alerts), [a["expr"] for a in alerts])
yaml.safe_dump({"groups": groups}, open(f"{work}/rules.yaml", "w"), sort_keys=False)

# all-features: values reach the rule (labels, severity, extra labels, URL, thresholds).
af = of_kind(all_f, "PrometheusRule")
af_alerts = {r["alert"]: r for g in (af[0]["spec"]["groups"] if af else []) for r in g["rules"]}
qa = af_alerts.get("TasklaneQueueNotDraining", {})
check("all-features: rule labels, severity, alert labels, runbook_url and thresholds from values",
      af and af[0]["metadata"]["labels"].get("release") == "prometheus"
      and qa.get("labels") == {"severity": "page", "team": "tasks"}
      and qa["annotations"].get("runbook_url") == "https://docs.example.com/tasklane/runbook#queue-not-draining"
      and qa["expr"].endswith("> 300")
      and af_alerts["TasklaneCircuitOpen"]["expr"].endswith("> 300"), qa)

# The dashboard's targets as recording rules, so promtool parses every expression.
VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
             "$namespace": ".*", "$task_type": ".*"}
targets = []
def walk(panels):
    for p in panels:
        walk(p.get("panels", []))
        for t in p.get("targets", []):
            targets.append((p["title"], t["expr"]))
walk(committed["panels"])
records = []
for n, (title, expr) in enumerate(targets):
    for var, value in VARIABLES.items():
        expr = expr.replace(var, value)
    records.append({"record": f"dashboard:target_{n}", "expr": expr})
def without_defined(expr):
    for name in list(VARIABLES) + ["$namespace", "$task_type"]:
        expr = expr.replace(name, "")
    return expr


left = [e for _, e in targets if re.search(r"\$\w+", without_defined(e))]
check(f"dashboard: {len(targets)} targets use only the variables it defines", targets and not left, left)
names = {v["name"] for v in committed["templating"]["list"]}
check("dashboard: variables datasource, namespace, task_type", names == {"datasource", "namespace", "task_type"}, names)
yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}, open(f"{work}/dashboard-rules.yaml", "w"))

print(f"PYRESULT {sum(results)} {len(results) - sum(results)}")
