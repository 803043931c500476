#!/usr/bin/env python3
"""render_test: `kubectl kustomize` of deploy/base and every deploy/overlays/*
renders offline, and what it renders fits the image and the binary:

  - kinds: the embedded store (deploy/base, deploy/overlays/production) is
    one StatefulSet (1 replica), a headless and a client Service, a
    PodDisruptionBudget, a ConfigMap, a ServiceMonitor; the Redis Cluster
    front ends (deploy/overlays/cluster) are one Deployment instead, with a
    headless client Service and a headless scrape Service, and a second
    ConfigMap (redis-nodes); selectors match the pod's labels;
  - the command line (the Dockerfile's ENTRYPOINT, then the container's args
    or the Dockerfile's CMD) uses only flags `dedupd --helpfull` lists
    (the Redis Cluster store's flags are skipped while the binary has none);
    every $(VAR) in it is an env var of the container;
  - embedded store: --data_dir is the Dockerfile's VOLUME and a
    volumeClaimTemplate is mounted there; the pod's name reaches
    --statefulset_pod_name (a second replica refuses to start); the PDB
    allows one eviction (drains are not blocked);
  - Redis Cluster: 3 replicas rolled with maxUnavailable 0 / maxSurge 1, a
    PDB of maxUnavailable 1, spread over nodes, no volume claim,
    --store=redis_cluster, --redis_nodes/--redis_user from ConfigMap
    redis-nodes, --redis_password_file from a required Secret;
  - files the flags name (--config, --*_file) are on mounted volumes,
    required ones when they are Secrets and the flag is passed;
  - the gRPC probes ask the --health_listen port when there is one, else the
    --listen port; TLS needs --health_listen (the probes speak plaintext);
    the embedded store has startup, readiness and liveness gRPC probes, the
    front ends a gRPC readiness probe and a liveness probe that is not gRPC
    health (a Redis outage must not restart them); container ports,
    Services and the ServiceMonitor agree with --listen and --metrics_listen;
  - the security context (non-root as the Dockerfile's USER, read-only root,
    no privilege escalation, no capabilities, RuntimeDefault seccomp);
  - terminationGracePeriodSeconds exceeds --shutdown_delay + --drain_timeout;
    memory limit
    exceeds the block cache;
  - the ConfigMap's config file is accepted by dedupd (it starts with it).

KUBECTL=/path/to/kubectl picks the kubectl (default: kubectl on PATH), e.g.
Debian 12's 1.20 (kustomize v2.0.3) against a newer one.

Usage: render_test.py --source_dir=DIR --dedupd=PATH
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dockerfile import Dockerfile, parse_flags, port_of  # noqa: E402

TLS_FLAG = "tls_cert_file"

# Flags of the Redis Cluster store, being added to dedupd in parallel with
# deploy/overlays/cluster: checked against --helpfull once the binary has
# --store, skipped (not failed) before.
REDIS_CLUSTER_FLAGS = {"store", "redis_nodes", "redis_user", "redis_password_file",
                       "redis_key_prefix", "redis_min_replicas_acked"}

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def seconds(duration):
    """Abseil duration text ("20s", "1m30s", "500ms") in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|h|m|s)", duration)
    if not parts or "".join(n + u for n, u in parts) != duration:
        raise ValueError(f"duration {duration!r}")
    return sum(float(n) * units[u] for n, u in parts)


def quantity_bytes(q):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i?|k)?", str(q))
    if not m:
        raise ValueError(f"quantity {q!r}")
    return float(m.group(1)) * units.get(m.group(2) or "", 1)


def quantity_cpu(q):
    q = str(q)
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def binary_flags(dedupd):
    out = subprocess.run([dedupd, "--helpfull"], capture_output=True, text=True, timeout=60)
    names = set(re.findall(r"^\s+--([A-Za-z0-9_]+) \(", out.stdout + out.stderr, re.M))
    if "listen" not in names or "data_dir" not in names:
        raise RuntimeError(f"{dedupd} --helpfull lists no --listen/--data_dir:\n{out.stdout[:500]}")
    return names


def config_starts(dedupd, config_text):
    """dedupd starts with this config file (then stops): the file parses."""
    with tempfile.TemporaryDirectory(prefix="dedupd-render-") as tmp:
        path = os.path.join(tmp, "dedupd.conf")
        with open(path, "w") as f:
            f.write(config_text)
        proc = subprocess.Popen([dedupd, "--listen=127.0.0.1:0", f"--data_dir={tmp}/data",
                                 f"--config={path}", f"--port_file={tmp}/port"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            # Bounded: 600 polls of 0.1 s.
            for _ in range(600):
                if os.path.exists(f"{tmp}/port") or proc.poll() is not None:
                    break
                try:
                    proc.wait(0.1)
                except subprocess.TimeoutExpired:
                    pass
            serving = os.path.exists(f"{tmp}/port") and proc.poll() is None
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
        return serving, err.strip()[-500:]


def labels_match(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_render(name, docs, df, helpfull, dedupd):
    print(f"--- {name}")
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    counts = {k: len(v) for k, v in by_kind.items()}
    # The Redis Cluster store runs as a Deployment, the embedded one as a StatefulSet.
    cluster = "Deployment" in by_kind
    workload_kind = "Deployment" if cluster else "StatefulSet"
    want = {workload_kind: 1, "Service": 2, "PodDisruptionBudget": 1, "ConfigMap": 2 if cluster else 1,
            "ServiceMonitor": 1, "StatefulSet" if cluster else "Deployment": 0, "PersistentVolumeClaim": 0}
    kinds_ok = [check(counts.get(kind, 0) == n, f"{name}: {n} {kind} (rendered: {counts.get(kind, 0)})")
                for kind, n in want.items()]
    if not all(kinds_ok):
        return
    workload = by_kind[workload_kind][0]
    spec = workload["spec"]
    pod = spec["template"]["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    if cluster:
        check(spec.get("replicas") == 3, f"{name}: 3 replicas (stateless front ends)")
        strategy = spec.get("strategy", {})
        rolling = strategy.get("rollingUpdate", {})
        check(strategy.get("type") == "RollingUpdate" and rolling.get("maxUnavailable") == 0 and
              rolling.get("maxSurge") == 1, f"{name}: rolling update, maxUnavailable 0, maxSurge 1 ({strategy})")
        spread = [t for t in pod.get("topologySpreadConstraints", [])
                  if t.get("topologyKey") == "kubernetes.io/hostname" and
                  labels_match(t.get("labelSelector", {}).get("matchLabels"), pod_labels)]
        check(len(spread) == 1 and spread[0].get("maxSkew") == 1,
              f"{name}: the pods spread over nodes (topologySpreadConstraints on kubernetes.io/hostname)")
    else:
        check(spec.get("replicas") == 1, f"{name}: 1 replica (the store is embedded)")
    check(labels_match(spec["selector"]["matchLabels"], pod_labels), f"{name}: the {workload_kind} selects its pods")
    containers = [c for c in pod["containers"] if c["name"] == "dedupd"]
    if not check(len(containers) == 1, f"{name}: one container named dedupd"):
        return
    c = containers[0]

    rt = df.final()
    entrypoint = c.get("command") or rt.entrypoint()
    args = c["args"] if "args" in c else rt.cmd()
    check(os.path.basename(entrypoint[0]) == "dedupd", f"{name}: the container runs dedupd ({entrypoint[0]})")
    flags = parse_flags(entrypoint[1:] + args)
    pending_store = "store" not in helpfull
    for flag in sorted(flags):
        if flag in helpfull:
            check(True, f"{name}: --{flag} is a dedupd flag")
        elif flag in REDIS_CLUSTER_FLAGS and pending_store:
            print(f"skip {name}: --{flag} (the Redis Cluster store's; this dedupd has no --store yet)")
        else:
            check(False, f"{name}: --{flag} is a dedupd flag (not in dedupd --helpfull)")
    env = {e["name"]: e for e in c.get("env", [])}
    for var in sorted(set(re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", " ".join(args)))):
        check(var in env, f"{name}: $({var}) in the args is an env var of the container")

    mounts = {m["mountPath"].rstrip("/"): m for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    configmaps = {m["metadata"]["name"]: m for m in by_kind["ConfigMap"]}
    if cluster:
        check_cluster_store(name, flags, env, mounts, volumes, configmaps, spec)
    else:
        check_embedded_store(name, flags, env, mounts, spec, rt)

    # Files the flags name are on mounted volumes.
    file_flags = {f: v for f, v in flags.items() if f == "config" or f.endswith("_file")}
    for flag, path in sorted(file_flags.items()):
        if flag == "port_file":
            continue
        owner = max((m for m in mounts if path.startswith(m + "/")), key=len, default=None)
        if not check(owner is not None, f"{name}: --{flag}={path} is on a mounted volume"):
            continue
        vol = volumes.get(mounts[owner]["name"], {})
        key = path[len(owner) + 1:]
        if "secret" in vol:
            check(vol["secret"].get("optional") is not True,
                  f"{name}: --{flag} reads Secret {vol['secret']['secretName']}, which is not optional")
            items = vol["secret"].get("items")
            check(items is None or any(i["path"] == key for i in items), f"{name}: Secret volume has {key}")
        elif "configMap" in vol:
            cm = configmaps.get(vol["configMap"]["name"], {})
            check(key in cm.get("data", {}),
                  f"{name}: --{flag} is key {key} of the rendered ConfigMap {vol['configMap']['name']}")
        else:
            check(False, f"{name}: --{flag}={path} is on a Secret or ConfigMap volume")
    if "config" in flags:
        key = os.path.basename(flags["config"])
        holders = [m for m in configmaps.values() if key in m.get("data", {})]
        if check(len(holders) == 1, f"{name}: a ConfigMap holds {key}"):
            ok, err = config_starts(dedupd, holders[0]["data"][key])
            check(ok, f"{name}: dedupd starts with the ConfigMap's {key}" + ("" if ok else f": {err}"))

    # Ports and probes.
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    grpc_port = port_of(flags["listen"])
    check(ports.get("grpc") == grpc_port, f"{name}: container port grpc is --listen's {grpc_port}")
    if TLS_FLAG in flags:
        check("health_listen" in flags, f"{name}: TLS is on, so a plaintext --health_listen port is")
    if "health_listen" in flags:
        probe_port = port_of(flags["health_listen"])
        check(probe_port in ports.values(), f"{name}: the health port {probe_port} is a container port")
    else:
        probe_port = grpc_port
    grpc_probes = ("readinessProbe",) if cluster else ("startupProbe", "readinessProbe", "livenessProbe")
    for probe in grpc_probes:
        p = c.get(probe, {})
        check("grpc" in p and p["grpc"].get("port") == probe_port,
              f"{name}: {probe} is a gRPC probe of port {probe_port} ({p.get('grpc')})")
    if cluster:
        live = c.get("livenessProbe", {})
        check(bool(live) and "grpc" not in live,
              f"{name}: the liveness probe is not gRPC health (NOT_SERVING while Redis is away must not restart pods)")
    else:
        startup = c.get("startupProbe", {})
        check(startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3) >= 600,
              f"{name}: the startup probe waits >= 10 min for a large store to open")
    metrics_port = port_of(flags["metrics_listen"]) if flags.get("metrics_listen") else None
    check(metrics_port is not None and ports.get("metrics") == metrics_port,
          f"{name}: container port metrics is --metrics_listen's {metrics_port}")

    services = by_kind["Service"]
    if cluster:
        check_cluster_services(name, services, ports, pod_labels, grpc_port, metrics_port)
    else:
        check_embedded_services(name, services, ports, pod_labels, grpc_port, spec)
    sm = by_kind["ServiceMonitor"][0]
    scraped = [s for s in services if labels_match(sm["spec"]["selector"].get("matchLabels"), s["metadata"].get("labels", {}))]
    check(len(scraped) == 1, f"{name}: the ServiceMonitor selects one Service ({[s['metadata']['name'] for s in scraped]})")
    if scraped:
        sm_ports = [e.get("port") for e in sm["spec"]["endpoints"]]
        svc_ports = {p["name"]: p.get("targetPort") for p in scraped[0]["spec"]["ports"]}
        check(all(ports.get(svc_ports.get(p)) == metrics_port for p in sm_ports),
              f"{name}: the ServiceMonitor scrapes the metrics port ({sm_ports})")
    pdb = by_kind["PodDisruptionBudget"][0]
    check(labels_match(pdb["spec"]["selector"]["matchLabels"], pod_labels), f"{name}: the PDB selects the pod")
    check(pdb["spec"].get("maxUnavailable") == 1 and "minAvailable" not in pdb["spec"],
          f"{name}: the PDB allows one eviction at a time, so node drains are not blocked ({pdb['spec']})")

    check_security_and_sizing(name, pod, c, flags, rt)


def check_embedded_store(name, flags, env, mounts, spec, rt):
    """The StatefulSet's store: on its volume claim, one replica enforced."""
    # Data dir: the VOLUME, on the PVC.
    volume = (rt.volumes() or [None])[0]
    data_dir = flags.get("data_dir")
    check(data_dir == volume, f"{name}: --data_dir={data_dir} is the image's VOLUME {volume}")
    claims = {t["metadata"]["name"]: t for t in spec.get("volumeClaimTemplates", [])}
    data_mount = mounts.get(data_dir)
    check(data_mount is not None and data_mount["name"] in claims and not data_mount.get("readOnly"),
          f"{name}: a volumeClaimTemplate is mounted read-write at {data_dir}")
    if data_mount and data_mount["name"] in claims:
        t = claims[data_mount["name"]]["spec"]
        check("ReadWriteOnce" in t.get("accessModes", []) and
              quantity_bytes(t["resources"]["requests"]["storage"]) >= 2**30,
              f"{name}: the data claim is ReadWriteOnce, >= 1Gi ({t['resources']['requests']['storage']})")

    # The pod's name reaches --statefulset_pod_name: dedupd-1, dedupd-2, ...
    # refuse to start instead of opening second and third stores.
    check(flags.get("statefulset_pod_name") == "$(POD_NAME)",
          f"{name}: --statefulset_pod_name=$(POD_NAME) ({flags.get('statefulset_pod_name')})")
    field = env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    check(field == "metadata.name", f"{name}: env POD_NAME is the pod's metadata.name ({field})")


def check_cluster_store(name, flags, env, mounts, volumes, configmaps, spec):
    """The Redis Cluster front ends: no volume; endpoint and password wired."""
    check(not spec.get("volumeClaimTemplates") and
          not any("persistentVolumeClaim" in v for v in volumes.values()),
          f"{name}: no volume claim (the store is the Redis Cluster)")
    check(flags.get("store") == "redis_cluster", f"{name}: --store=redis_cluster ({flags.get('store')})")
    for flag, var, key in (("redis_nodes", "REDIS_NODES", "nodes"), ("redis_user", "REDIS_USER", "user")):
        check(flags.get(flag) == f"$({var})", f"{name}: --{flag}=$({var}) ({flags.get(flag)})")
        ref = env.get(var, {}).get("valueFrom", {}).get("configMapKeyRef", {})
        cm = configmaps.get(ref.get("name"), {})
        check(ref.get("key") == key and cm.get("metadata", {}).get("name", "").startswith("redis-nodes") and
              bool(cm.get("data", {}).get(key)) and ref.get("optional") is not True,
              f"{name}: env {var} is key {key} of the rendered ConfigMap redis-nodes ({ref})")
    password = flags.get("redis_password_file", "")
    owner = max((m for m in mounts if password.startswith(m + "/")), key=len, default=None)
    secret = volumes.get(mounts[owner]["name"], {}).get("secret", {}) if owner else {}
    check(secret.get("secretName") == "dedupd-redis" and password == owner + "/password",
          f"{name}: --redis_password_file={password} is key password of Secret dedupd-redis")


def service_reaches(s, ports, port):
    """Service `s` has a port whose target is container port `port`."""
    return any((ports.get(p.get("targetPort")) if isinstance(p.get("targetPort"), str) else p.get("targetPort")) == port
               for p in s["spec"]["ports"])


def check_service_ports(name, services, ports, pod_labels):
    for s in services:
        sname = s["metadata"]["name"]
        check(labels_match(s["spec"].get("selector"), pod_labels), f"{name}: Service {sname} selects the pod")
        for p in s["spec"]["ports"]:
            target = p.get("targetPort", p["port"])
            resolved = ports.get(target) if isinstance(target, str) else target
            check(resolved in ports.values(), f"{name}: Service {sname} port {p['name']} reaches a container port ({target})")


def check_embedded_services(name, services, ports, pod_labels, grpc_port, spec):
    headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
    clients = [s for s in services if s["spec"].get("clusterIP") != "None"]
    check(len(headless) == 1 and len(clients) == 1, f"{name}: a headless and a client Service")
    check(bool(headless) and spec.get("serviceName") == headless[0]["metadata"]["name"],
          f"{name}: the StatefulSet's serviceName is the headless Service")
    check_service_ports(name, services, ports, pod_labels)
    for s in services:
        check(service_reaches(s, ports, grpc_port), f"{name}: Service {s['metadata']['name']} serves the gRPC port")


def check_cluster_services(name, services, ports, pod_labels, grpc_port, metrics_port):
    """Clients resolve the headless Service to every ready pod (DNS round robin)."""
    check(all(s["spec"].get("clusterIP") == "None" for s in services), f"{name}: both Services are headless")
    clients = [s for s in services if service_reaches(s, ports, grpc_port)]
    if check(len(clients) == 1 and clients[0]["metadata"]["name"] == "dedupd",
             f"{name}: Service dedupd serves the gRPC port ({[s['metadata']['name'] for s in clients]})"):
        check(clients[0]["spec"].get("publishNotReadyAddresses") is not True,
              f"{name}: Service dedupd lists ready pods only (NOT_SERVING pods get no calls)")
    check(any(service_reaches(s, ports, metrics_port) for s in services), f"{name}: a Service serves the metrics port")
    check_service_ports(name, services, ports, pod_labels)


def check_security_and_sizing(name, pod, c, flags, rt):
    # Security context (container level, falling back to the pod's).
    uid, gid = rt.user()
    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})

    def sc(key):
        return csc.get(key, psc.get(key))
    check(sc("runAsNonRoot") is True, f"{name}: runAsNonRoot")
    check(sc("runAsUser") == uid and sc("runAsGroup") in (None, gid),
          f"{name}: runs as the image's USER {uid}:{gid} ({sc('runAsUser')}:{sc('runAsGroup')})")
    check(psc.get("fsGroup") == gid, f"{name}: fsGroup {gid} makes the volume writable")
    check(csc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem")
    check(csc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation false")
    check(csc.get("privileged") in (None, False), f"{name}: not privileged")
    check("ALL" in csc.get("capabilities", {}).get("drop", []) and not csc.get("capabilities", {}).get("add"),
          f"{name}: drops ALL capabilities, adds none")
    check((sc("seccompProfile") or {}).get("type") == "RuntimeDefault", f"{name}: seccomp RuntimeDefault")

    # Shutdown and sizing.
    drain = seconds(flags.get("drain_timeout", "10s"))
    delay = seconds(flags.get("shutdown_delay", "0s"))
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check(grace >= delay + drain + 10,
          f"{name}: terminationGracePeriodSeconds {grace} >= --shutdown_delay {delay:g}s + --drain_timeout {drain:g}s + 10 s to close the store")
    res = c.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    for r in ("cpu", "memory"):
        check(r in req, f"{name}: requests {r}")
    check("memory" in lim and quantity_bytes(lim["memory"]) >= quantity_bytes(req.get("memory", 0)),
          f"{name}: memory limit >= request")
    if "cpu" in lim:
        check(quantity_cpu(lim["cpu"]) >= quantity_cpu(req.get("cpu", 0)), f"{name}: cpu limit >= request")
    cache = int(flags.get("block_cache_mb", "256")) * 2**20
    check("memory" in lim and quantity_bytes(lim["memory"]) > cache,
          f"{name}: memory limit exceeds the block cache ({cache >> 20} MiB)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source_dir", required=True)
    ap.add_argument("--dedupd", required=True)
    args = ap.parse_args()
    kubectl = os.environ.get("KUBECTL", "kubectl")
    version = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True)
    if not check(version.returncode == 0, f"{kubectl} runs (scripts/install-deps.sh installs kubernetes-client)"):
        return 1
    print(f"kubectl: {version.stdout.strip().splitlines()[0] if version.stdout.strip() else '?'}")
    df = Dockerfile.load(os.path.join(args.source_dir, "Dockerfile"))
    helpfull = binary_flags(args.dedupd)
    deploy = os.path.join(args.source_dir, "deploy")
    overlays = os.path.join(deploy, "overlays")
    targets = [os.path.join(deploy, "base")] + sorted(
        os.path.join(overlays, d) for d in os.listdir(overlays)
        if os.path.exists(os.path.join(overlays, d, "kustomization.yaml")))
    check(len(targets) >= 2, f"a base and at least one overlay ({len(targets)})")
    for target in targets:
        name = os.path.relpath(target, args.source_dir)
        r = subprocess.run([kubectl, "kustomize", target], capture_output=True, text=True, timeout=120)
        if not check(r.returncode == 0, f"{kubectl} kustomize {name} renders: {r.stderr.strip()[-500:]}"):
            continue
        docs = [d for d in yaml.safe_load_all(r.stdout) if d]
        check_render(name, docs, df, helpfull, args.dedupd)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
