#!/usr/bin/env python3
"""render_test: `kubectl kustomize` of deploy/base and every deploy/overlays/*
renders offline, and what it renders fits the image and the binary:

  - kinds: one StatefulSet (1 replica), a headless and a client Service, a
    PodDisruptionBudget, a ConfigMap, a ServiceMonitor; selectors match the
    pod's labels;
  - the command line (the Dockerfile's ENTRYPOINT, then the container's args
    or the Dockerfile's CMD) uses only flags `dedupd --helpfull` lists;
  - --data_dir is the Dockerfile's VOLUME and a volumeClaimTemplate is mounted
    there; files the flags name (--config, --*_file) are on mounted volumes,
    required ones when they are Secrets and the flag is passed;
  - the gRPC probes (startup, readiness, liveness) ask the --listen port, or
    the plaintext --health_listen port when TLS is on; container ports,
    Services and the ServiceMonitor agree with --listen and --metrics_listen;
  - the security context (non-root as the Dockerfile's USER, read-only root,
    no privilege escalation, no capabilities, RuntimeDefault seccomp);
  - terminationGracePeriodSeconds exceeds --drain_timeout; memory limit
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
    want = {"StatefulSet": 1, "Service": 2, "PodDisruptionBudget": 1, "ConfigMap": 1, "ServiceMonitor": 1}
    kinds_ok = [check(counts.get(kind, 0) == n, f"{name}: {n} {kind} (rendered: {counts.get(kind, 0)})")
                for kind, n in want.items()]
    if not all(kinds_ok):
        return
    sts = by_kind["StatefulSet"][0]
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    check(spec.get("replicas") == 1, f"{name}: 1 replica (the store is embedded)")
    check(labels_match(spec["selector"]["matchLabels"], pod_labels), f"{name}: the StatefulSet selects its pods")
    containers = [c for c in pod["containers"] if c["name"] == "dedupd"]
    if not check(len(containers) == 1, f"{name}: one container named dedupd"):
        return
    c = containers[0]

    rt = df.final()
    entrypoint = c.get("command") or rt.entrypoint()
    args = c["args"] if "args" in c else rt.cmd()
    check(os.path.basename(entrypoint[0]) == "dedupd", f"{name}: the container runs dedupd ({entrypoint[0]})")
    flags = parse_flags(entrypoint[1:] + args)
    for flag in sorted(flags):
        if flag in helpfull:
            check(True, f"{name}: --{flag} is a dedupd flag")
        else:
            check(False, f"{name}: --{flag} is a dedupd flag (not in dedupd --helpfull)")

    # Data dir: the VOLUME, on the PVC.
    volume = (rt.volumes() or [None])[0]
    data_dir = flags.get("data_dir")
    check(data_dir == volume, f"{name}: --data_dir={data_dir} is the image's VOLUME {volume}")
    claims = {t["metadata"]["name"]: t for t in spec.get("volumeClaimTemplates", [])}
    mounts = {m["mountPath"].rstrip("/"): m for m in c.get("volumeMounts", [])}
    data_mount = mounts.get(data_dir)
    check(data_mount is not None and data_mount["name"] in claims and not data_mount.get("readOnly"),
          f"{name}: a volumeClaimTemplate is mounted read-write at {data_dir}")
    if data_mount and data_mount["name"] in claims:
        t = claims[data_mount["name"]]["spec"]
        check("ReadWriteOnce" in t.get("accessModes", []) and
              quantity_bytes(t["resources"]["requests"]["storage"]) >= 2**30,
              f"{name}: the data claim is ReadWriteOnce, >= 1Gi ({t['resources']['requests']['storage']})")

    # Files the flags name are on mounted volumes.
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    configmap = by_kind["ConfigMap"][0]
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
            check(vol["configMap"]["name"] == configmap["metadata"]["name"] and key in configmap.get("data", {}),
                  f"{name}: --{flag} is key {key} of the rendered ConfigMap {configmap['metadata']['name']}")
        else:
            check(False, f"{name}: --{flag}={path} is on a Secret or ConfigMap volume")
    if "config" in flags:
        key = os.path.basename(flags["config"])
        text = configmap.get("data", {}).get(key)
        if check(text is not None, f"{name}: the ConfigMap holds {key}"):
            ok, err = config_starts(dedupd, text)
            check(ok, f"{name}: dedupd starts with the ConfigMap's {key}" + ("" if ok else f": {err}"))

    # Ports and probes.
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    grpc_port = port_of(flags["listen"])
    check(ports.get("grpc") == grpc_port, f"{name}: container port grpc is --listen's {grpc_port}")
    tls = TLS_FLAG in flags
    if tls:
        if check("health_listen" in flags, f"{name}: TLS is on, so a plaintext --health_listen port is"):
            probe_port = port_of(flags["health_listen"])
            check(probe_port in ports.values(), f"{name}: the health port {probe_port} is a container port")
        else:
            probe_port = None
    else:
        probe_port = grpc_port
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = c.get(probe, {})
        check("grpc" in p and p["grpc"].get("port") == probe_port,
              f"{name}: {probe} is a gRPC probe of port {probe_port} ({p.get('grpc')})")
    startup = c.get("startupProbe", {})
    check(startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3) >= 600,
          f"{name}: the startup probe waits >= 10 min for a large store to open")
    metrics_port = port_of(flags["metrics_listen"]) if flags.get("metrics_listen") else None
    check(metrics_port is not None and ports.get("metrics") == metrics_port,
          f"{name}: container port metrics is --metrics_listen's {metrics_port}")

    services = by_kind["Service"]
    headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
    clients = [s for s in services if s["spec"].get("clusterIP") != "None"]
    check(len(headless) == 1 and len(clients) == 1, f"{name}: a headless and a client Service")
    check(bool(headless) and spec.get("serviceName") == headless[0]["metadata"]["name"],
          f"{name}: the StatefulSet's serviceName is the headless Service")
    for s in services:
        sname = s["metadata"]["name"]
        check(labels_match(s["spec"].get("selector"), pod_labels), f"{name}: Service {sname} selects the pod")
        for p in s["spec"]["ports"]:
            target = p.get("targetPort", p["port"])
            resolved = ports.get(target) if isinstance(target, str) else target
            check(resolved in ports.values(), f"{name}: Service {sname} port {p['name']} reaches a container port ({target})")
        check(any((ports.get(p.get("targetPort")) if isinstance(p.get("targetPort"), str) else p.get("targetPort")) == grpc_port
                  for p in s["spec"]["ports"]), f"{name}: Service {sname} serves the gRPC port")
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
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check(grace >= drain + 10, f"{name}: terminationGracePeriodSeconds {grace} >= --drain_timeout {drain:g}s + 10 s to close the store")
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
