"""Behavioural checks of rendered Helm output, run by scripts/check-helm.sh.

For each render named on the command line (its YAML in WORK/<name>.yaml), on a fresh
database of the test server:
  - runs the migration Job's container first, when the render has one (as the hook does);
  - for every Deployment, starts the real `tasklane` binary with that container's args
    and env, with the database Secret replaced by the test database's URL (a render with
    a direct URL, TASKLANE_DIRECT_DATABASE_URL, runs behind a real PgBouncer in
    transaction mode: its main key is the database through POOLER_URL, its direct key the
    database itself, for the migration Job and KEDA's query too), the listen
    address 0.0.0.0:<containerPort> by a free loopback port, the task-types path by the
    rendered ConfigMap's file, and the pod-name field by a made-up pod name; asserts that
    every probed path (liveness, readiness, startup) answers 200 on the probed port within
    READY_SECONDS, then sends SIGTERM and asserts exit status 0 within the pod's
    terminationGracePeriodSeconds;
  - runs the `helm test` pod's script against the live API process (must pass), against a
    server answering 503 and against a closed port (must fail);
  - runs each KEDA ScaledObject's postgresql query: it returns one integer, and with
    sequential scans off its plan reads a partial index of the claimable tasks
    (task_queue_claimable, task_queue_turns, task_queue_behind or task_queue_fallback).

A probe whose port is not the port the container listens on fails at once: nothing in the
pod would answer it. Every wait is bounded. Prints `ok   ...` / `FAIL ...` lines and
`PYRESULT <passed> <failed>` last.

argv: WORK BIN SERVER_URL POOLER_URL PSQL render... (POOLER_URL empty: no PgBouncer)
"""

import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import yaml

WORK, BIN, SERVER_URL, POOLER_URL, PSQL = sys.argv[1:6]
RENDERS = sys.argv[6:]
# Start-up (migrations included) on a loaded 2-core CI box; a probe that has not answered
# 200 by then never will.
READY_SECONDS = 60
# Variables whose rendered values point outside this machine; the check runs without them.
DROPPED = {"OTEL_EXPORTER_OTLP_ENDPOINT"}

results = []
# Processes started and not yet reaped: killed if this script is stopped (the caller's
# `timeout`), since they run in sessions of their own.
running = set()


def stop_all(signum, frame):
    for proc in [p for p in running if p.poll() is None]:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    sys.exit(f"stopped by signal {signum}")


signal.signal(signal.SIGTERM, stop_all)
signal.signal(signal.SIGINT, stop_all)


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else "\n     " + str(detail).replace("\n", "\n     ")))
    sys.stdout.flush()
    return ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(url, sql):
    out = subprocess.run([PSQL, url, "-qtAX", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return out.stdout.strip()


def base_env():
    """Only what a container would have besides its spec: no TASKLANE_* of this shell."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir()}


def log_tail(path, n=20):
    try:
        return re.sub(r"\x1b\[[0-9;]*m", "", "".join(open(path, errors="replace").readlines()[-n:]))
    except OSError:
        return ""


class Pod:
    """One Deployment's (or Job's) container, translated to a local process."""

    def __init__(self, render, obj, docs, stand_in, files):
        self.name = f"{render}: {obj['kind']} {obj['metadata']['name']}"
        self.spec = obj["spec"]["template"]["spec"]
        self.container = self.spec["containers"][0]
        self.problems = []
        self.ports = {p["name"]: p["containerPort"] for p in self.container.get("ports", [])}
        self.listen_port = None
        self.local_port = free_port()
        self.env = base_env()
        mounts = {m["mountPath"]: m["name"] for m in self.container.get("volumeMounts", [])}
        volumes = {v["name"]: v for v in self.spec.get("volumes", [])}
        configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
        for e in self.container.get("env", []):
            self.env_entry(e, stand_in, mounts, volumes, configmaps, files, obj["metadata"]["name"])

    def env_entry(self, e, stand_in, mounts, volumes, configmaps, files, owner):
        name = e["name"]
        if name in DROPPED:
            return
        if "value" in e:
            value = str(e["value"])
        else:
            src = e.get("valueFrom", {})
            if "secretKeyRef" in src and name in ("DATABASE_URL", "TASKLANE_DIRECT_DATABASE_URL"):
                value = stand_in(src["secretKeyRef"]["key"])
            elif src.get("fieldRef", {}).get("fieldPath") == "metadata.name":
                value = f"{owner}-check"
            else:
                self.problems.append(f"{name}: no local stand-in for {src}")
                return
        if name == "TASKLANE_LISTEN":
            host, _, port = value.rpartition(":")
            if host != "0.0.0.0":
                self.problems.append(f"TASKLANE_LISTEN {value}: not every interface")
            self.listen_port = int(port)
            value = f"127.0.0.1:{self.local_port}"
        if name == "TASKLANE_TASK_TYPES":
            value = self.mounted_file(value, mounts, volumes, configmaps, files)
        self.env[name] = value

    def mounted_file(self, path, mounts, volumes, configmaps, files):
        directory, _, base = path.rpartition("/")
        volume = volumes.get(mounts.get(directory, ""), {})
        cm = configmaps.get(volume.get("configMap", {}).get("name", ""))
        if cm is None or base not in cm.get("data", {}):
            self.problems.append(f"{path}: not a file of a mounted ConfigMap")
            return path
        local = os.path.join(files, f"{cm['metadata']['name']}-{base}")
        with open(local, "w") as f:
            f.write(cm["data"][base])
        return local

    def probes(self):
        """[(kind, path, local port)]; a probe on a port nothing listens on is a problem."""
        found = []
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            probe = self.container.get(kind)
            if not probe:
                continue
            get = probe.get("httpGet")
            if not get:
                self.problems.append(f"{kind}: not an httpGet probe")
                continue
            port = get["port"]
            port = self.ports.get(port) if isinstance(port, str) else port
            if port is None or port != self.listen_port:
                self.problems.append(f"{kind} {get['path']} probes port {get['port']} ({port}), "
                                     f"but the container listens on {self.listen_port}")
                continue
            found.append((kind, get["path"], self.local_port))
        return found

    def start(self, log):
        proc = subprocess.Popen([BIN] + self.container.get("args", []), env=self.env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        running.add(proc)
        return proc


def get_status(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def wait_200(proc, port, path, deadline):
    status = None
    while time.monotonic() < deadline and proc.poll() is None:
        status = get_status(port, path)
        if status == 200:
            return True, status
        time.sleep(0.2)
    return False, status if proc.poll() is None else f"process exited {proc.returncode}"


def stop(proc, grace):
    """SIGTERM, then at most `grace` seconds for the exit status; SIGKILL after."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        return None


def run_test_pod(test_pod, port):
    c = test_pod["spec"]["containers"][0]
    env = base_env()
    env.update({e["name"]: str(e["value"]) for e in c.get("env", [])})
    env.update(READYZ_HOST="127.0.0.1", READYZ_PORT=str(port))
    try:
        out = subprocess.run(c["command"] + c["args"], env=env, capture_output=True, text=True,
                             timeout=test_pod["spec"]["activeDeadlineSeconds"])
        return out.returncode, (out.stdout + out.stderr).strip()
    except subprocess.TimeoutExpired:
        return "timeout", ""


class Answer503(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_pod_negatives(test_pod):
    server = http.server.HTTPServer(("127.0.0.1", 0), Answer503)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rc, out = run_test_pod(test_pod, server.server_address[1])
        check("helm test pod fails on a /readyz answering 503", rc not in (0, "timeout"), f"{rc}: {out}")
    finally:
        server.shutdown()
    rc, out = run_test_pod(test_pod, free_port())
    check("helm test pod fails on a closed port", rc not in (0, "timeout"), f"{rc}: {out}")


def run_deployment(pod, test_pod, files):
    probes = pod.probes()
    if not check(f"{pod.name}: translates to a local process with its probes", not pod.problems and probes,
                 "; ".join(pod.problems) or "no probes"):
        return
    grace = pod.spec["terminationGracePeriodSeconds"]
    log_path = os.path.join(files, pod.name.replace(" ", "_").replace(":", "") + ".log")
    with open(log_path, "w") as log:
        proc = pod.start(log)
    try:
        # One deadline for all of a process's probes, so a process that never listens
        # costs READY_SECONDS once.
        deadline = time.monotonic() + READY_SECONDS
        for kind, path, port in probes:
            ok, status = wait_200(proc, port, path, deadline)
            check(f"{pod.name}: {kind} GET {path} answers 200 on the probed port within {READY_SECONDS} s",
                  ok, f"last answer: {status}\n{log_tail(log_path)}")
        if test_pod is not None and "api" in pod.env.get("TASKLANE_ROLES", "").split(","):
            rc, out = run_test_pod(test_pod, pod.local_port)
            check(f"{pod.name}: helm test pod passes against it", rc == 0, f"{rc}: {out}")
        start = time.monotonic()
        rc = stop(proc, grace)
        check(f"{pod.name}: exits 0 on SIGTERM within terminationGracePeriodSeconds {grace} s "
              f"(took {time.monotonic() - start:.1f} s)", rc == 0, f"exit: {rc}\n{log_tail(log_path)}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def run_job(pod, files):
    log_path = os.path.join(files, "migrate.log")
    with open(log_path, "w") as log:
        proc = pod.start(log)
    limit = min(pod.spec.get("activeDeadlineSeconds", 120), 120)
    try:
        rc = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        rc = "timeout"
    check(f"{pod.name}: `{' '.join(pod.container['args'])}` exits 0", rc == 0 and not pod.problems,
          f"exit {rc}; {pod.problems}\n{log_tail(log_path)}")


def keda_queries(render, docs, stand_in):
    auths = {d["metadata"]["name"]: d for d in docs if d["kind"] == "TriggerAuthentication"}
    for so in (d for d in docs if d["kind"] == "ScaledObject"):
        trigger = so["spec"]["triggers"][0]
        query = trigger["metadata"]["query"]
        auth = auths.get(trigger.get("authenticationRef", {}).get("name"), {})
        refs = [r for r in auth.get("spec", {}).get("secretTargetRef", []) if r["parameter"] == "connection"]
        db_url = stand_in(refs[0]["key"] if refs else "")
        try:
            value = psql(db_url, query)
            check(f"{render}: KEDA query returns one integer ({value})", value.isdigit(), query)
            plan = psql(db_url, f"SET enable_seqscan = off; EXPLAIN {query}")
            claimable = ("task_queue_claimable", "task_queue_turns", "task_queue_behind",
                         "task_queue_fallback")
            check(f"{render}: KEDA query reads a partial index of claimable tasks",
                  any(index in plan for index in claimable) and "Seq Scan" not in plan, plan)
        except Exception as e:  # noqa: BLE001 - any failure of the query fails the check
            check(f"{render}: KEDA query runs", False, f"{e}\n{query}")


def stand_ins(render, docs, db, db_url):
    """Secret key -> the local URL standing in for it. A render with a direct URL runs
    behind the pooler: its direct keys (those TASKLANE_DIRECT_DATABASE_URL names) are the
    database itself, every other key the database through PgBouncer."""
    direct_keys = {e["valueFrom"]["secretKeyRef"]["key"]
                   for d in docs if d["kind"] == "Deployment"
                   for e in d["spec"]["template"]["spec"]["containers"][0]["env"]
                   if e["name"] == "TASKLANE_DIRECT_DATABASE_URL" and "secretKeyRef" in e.get("valueFrom", {})}
    if not direct_keys:
        return lambda key: db_url
    check(f"{render}: a PgBouncer in transaction mode to run the pods behind (direct keys "
          f"{sorted(direct_keys)})", POOLER_URL,
          "no pgbouncer: install Debian's pgbouncer package (.ci/run does); the pods run direct")
    if not POOLER_URL:
        return lambda key: db_url
    pooled = POOLER_URL.rsplit("/", 1)[0] + "/" + db
    return lambda key: db_url if key in direct_keys else pooled


def main():
    for render in RENDERS:
        docs = [d for d in yaml.safe_load_all(open(f"{WORK}/{render}.yaml")) if d]
        db = "helm_" + render.replace("-", "_")
        db_url = SERVER_URL.rsplit("/", 1)[0] + "/" + db
        stand_in = stand_ins(render, docs, db, db_url)
        files = tempfile.mkdtemp(dir=WORK, prefix=f"run-{render}-")
        try:
            psql(SERVER_URL, f"DROP DATABASE IF EXISTS {db}")
            psql(SERVER_URL, f"CREATE DATABASE {db}")
        except Exception as e:  # noqa: BLE001
            check(f"{render}: create test database {db}", False, e)
            continue
        for job in (d for d in docs if d["kind"] == "Job"):
            run_job(Pod(render, job, docs, stand_in, files), files)
        tests = [d for d in docs if d["kind"] == "Pod"
                 and d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"]
        test_pod = tests[0] if tests else None
        deployments = [d for d in docs if d["kind"] == "Deployment"]
        check(f"{render}: has Deployments to run", deployments)
        for dep in deployments:
            run_deployment(Pod(render, dep, docs, stand_in, files), test_pod, files)
        if test_pod is not None:
            test_pod_negatives(test_pod)
        keda_queries(render, docs, stand_in)
    print(f"PYRESULT {sum(results)} {len(results) - sum(results)}")


main()
