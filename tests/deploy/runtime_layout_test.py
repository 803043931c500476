#!/usr/bin/env python3
"""runtime_layout_test: the container image without Docker.

No Docker engine runs in CI, so this lays out the files the Dockerfile's
runtime stage would contain, in a directory:
  - the files of the packages `scripts/install-deps.sh --runtime` installs
    (the list its --print-runtime prints) plus the base packages every Debian
    image has, copied from this machine's dpkg database;
  - the runtime stage's COPY lines (from the build stage: this build tree);
then runs the image's ENTRYPOINT + CMD there (chroot) as the Dockerfile's USER,
in a mount namespace where that root is read-only and only the VOLUME is
writable, and checks that it serves (gRPC health SERVING, a claim, /metrics),
runs as that user without capabilities, stops cleanly on SIGTERM and wrote
nothing outside the volume. It also checks that every shared library the
binaries load comes from the runtime package list (or the base packages) and
that the list holds no package they do not load.

Needs root (mount namespaces, chroot, changing user); exits 77 (ctest: skipped)
otherwise.

Usage: runtime_layout_test.py --source_dir=DIR --build_dir=DIR
         --dedupctl=PATH --health_probe=PATH
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dockerfile import Dockerfile, parse_flags, port_of  # noqa: E402

# In every Debian image (debian:12-slim included) and not in the runtime
# list: the C library, the C++ runtime, libgcc.
BASE_PACKAGES = ["libc6", "libstdc++6", "libgcc-s1"]
# Left out of the layout, as debian:12-slim's dpkg excludes leave them out.
SKIPPED_PREFIXES = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/locale/",
                    "/usr/share/lintian/", "/usr/share/info/", "/usr/share/bug/")
DEVICES = ["null", "zero", "full", "random", "urandom"]

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout


def owning_packages(paths):
    """{path: dpkg package owning it or None}, trying the /usr-merged
    spellings; one dpkg-query call for all."""
    spellings = {}
    for path in paths:
        cands = [path, os.path.realpath(path)]
        for p in list(cands):
            cands.append(p[4:] if p.startswith("/usr/") else "/usr" + p)
        spellings[path] = cands
    every = sorted({c for cands in spellings.values() for c in cands})
    out = subprocess.run(["dpkg-query", "-S"] + every, capture_output=True, text=True).stdout
    owner = {}
    for line in out.splitlines():
        pkgs, sep, p = line.partition(": ")
        if sep and "," not in pkgs and not line.startswith("diversion"):
            owner[p.strip()] = pkgs.split(":")[0].strip()
    return {path: next((owner[c] for c in cands if c in owner), None)
            for path, cands in spellings.items()}


def ldd_paths(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    paths, missing = [], []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            if m.group(2) == "not":
                missing.append(m.group(1))
            else:
                paths.append(m.group(2))
    return paths, missing


def copy_package_files(package, root):
    for path in run(["dpkg-query", "-L", package]).splitlines():
        path = path.strip()
        if not path or path.startswith(SKIPPED_PREFIXES) or path.startswith("/etc/"):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            continue
        if not os.path.lexists(path):
            continue  # a diverted or deleted conffile
        dest = root + path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.lexists(dest):
            shutil.copy2(path, dest, follow_symlinks=False)


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def tree_snapshot(root, skip):
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == skip or dirpath.startswith(skip + "/"):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            snap[p] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_uid)
    return snap


class Sandboxed:
    """One process run as uid:gid in `root` (read-only) with `data` bound
    read-write at `volume`, in its own mount namespace."""

    CHROOT = shutil.which("chroot", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")

    def __init__(self, root, data, volume, uid, gid, argv):
        mounts = [
            f"mount --bind {root} {root}",
            f"mount -o remount,bind,ro {root}",
            f"mount --bind {data} {root}{volume}",
            f"mount -t proc proc {root}/proc",
            f"mount --rbind /sys {root}/sys",
            f"mount -o remount,bind,ro {root}/sys",
        ] + [f"mount --bind /dev/{d} {root}/dev/{d}" for d in DEVICES]
        script = " && ".join(mounts) + f' && exec {self.CHROOT} --userspec="$0" "$@"'
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": volume, "LANG": "C.UTF-8"}
        # unshare does not fork (a mount namespace needs none) and sh and
        # chroot exec: self.proc.pid is dedupd's pid.
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
             f"{uid}:{gid}", root] + argv,
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.cv.notify_all()

    def wait_for(self, pattern, timeout):
        """The first match of `pattern` in the output, or None on exit/timeout."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        with self.cv:
            i = 0
            while True:
                while i < len(self.lines):
                    line = self.lines[i]
                    i += 1
                    if line is None:
                        return None
                    m = regex.search(line)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def logs(self):
        with self.cv:
            return "\n".join(l for l in self.lines if l is not None)

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.reader.join(10)
        return code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source_dir", required=True)
    ap.add_argument("--build_dir", required=True)
    ap.add_argument("--dedupctl", required=True)
    ap.add_argument("--health_probe", required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: runtime_layout_test needs root (mount namespace, chroot, "
              "changing user); CI runs it as root")
        return 77

    df = Dockerfile.load(os.path.join(args.source_dir, "Dockerfile"))
    rt = df.final()
    build = df.stages[0]
    uid, gid = rt.user()
    check(uid != 0 and gid != 0, f"USER {uid}:{gid} is not root")
    volumes = rt.volumes()
    if not check(len(volumes) == 1, f"one VOLUME (the data dir): {volumes}"):
        return 1
    volume = volumes[0]
    entrypoint, cmd = rt.entrypoint(), rt.cmd()
    flags = parse_flags(entrypoint[1:] + cmd)
    check(flags.get("data_dir") == volume, f"ENTRYPOINT --data_dir={flags.get('data_dir')} is the VOLUME {volume}")
    for flag in ("listen", "metrics_listen"):
        check(flag in flags and port_of(flags[flag]) in rt.exposed_ports(),
              f"--{flag}={flags.get(flag)} is EXPOSEd ({rt.exposed_ports()})")
    check(any("install-deps.sh --runtime" in r for r in rt.all("RUN")),
          "the runtime stage installs with scripts/install-deps.sh --runtime")
    check(any("install-deps.sh" in r for r in build.all("RUN")) and
          any("scripts/build.sh" in r for r in build.all("RUN")),
          "the build stage runs scripts/install-deps.sh and scripts/build.sh")
    runtime_packages = run(["bash", os.path.join(args.source_dir, "scripts/install-deps.sh"),
                            "--print-runtime"]).split()
    check(len(runtime_packages) > 0, f"install-deps.sh --print-runtime lists {len(runtime_packages)} packages")

    # Map the COPY lines to files here: the build stage's WORKDIR is this
    # source tree and its build/ (scripts/build.sh's BUILD_DIR) this build tree.
    workdir = build.workdir().rstrip("/")
    copies = []  # (host path, destination in the image)
    for from_stage, sources, dest in rt.copies():
        for src in sources:
            if from_stage is None:
                host = os.path.join(args.source_dir, src)
            elif from_stage == build.name and src.startswith(workdir + "/build/"):
                host = os.path.join(args.build_dir, src[len(workdir + "/build/"):])
            elif from_stage == build.name and src.startswith(workdir + "/"):
                host = os.path.join(args.source_dir, src[len(workdir + "/"):])
            else:
                check(False, f"COPY --from={from_stage} {src}: not mapped to this tree")
                continue
            target = os.path.join(dest, os.path.basename(src)) if dest.endswith("/") else dest
            check(os.path.isfile(host), f"COPY source {src} is here as {host}")
            copies.append((host, target))
    if failures:
        print(f"{len(failures)} check(s) failed; the layout is not built")
        return 1
    binaries = [(h, t) for h, t in copies if is_elf(h)]
    check(any(t == entrypoint[0] for _, t in binaries), f"ENTRYPOINT {entrypoint[0]} is a COPYed binary")

    # (a) Every shared library the binaries load belongs to a runtime or base
    # package, and every runtime package is loaded by one of them.
    allowed = set(runtime_packages) | set(BASE_PACKAGES)
    used = set()
    for host, target in binaries:
        paths, missing = ldd_paths(host)
        check(not missing, f"{target}: ldd resolves every library (missing: {missing})")
        owners = owning_packages(paths)
        used |= set(owners.values())
        outside = {p: pkg for p, pkg in owners.items() if pkg not in allowed}
        check(paths and not outside,
              f"{target}: its {len(paths)} libraries come from runtime or base packages "
              f"{sorted(set(owners.values()))} (others: {outside})")
    unused = sorted(set(runtime_packages) - used)
    check(not unused, f"every runtime package is loaded by a binary (unused: {unused})")

    # (b) The layout, run read-only as USER.
    tmp = tempfile.mkdtemp(prefix="dedupd-runtime-layout-")
    try:
        root = os.path.join(tmp, "root")
        for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "proc", "sys", "dev", "tmp",
                  "etc", volume.lstrip("/")):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        for link, to in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"),
                         ("lib64", "usr/lib64")):
            os.symlink(to, os.path.join(root, link))
        for d in DEVICES:
            open(os.path.join(root, "dev", d), "w").close()
        os.chmod(root, 0o755)
        started = time.monotonic()
        for pkg in runtime_packages + BASE_PACKAGES:
            copy_package_files(pkg, root)
        print(f"laid out {len(runtime_packages + BASE_PACKAGES)} packages in {time.monotonic() - started:.1f} s")
        for host, target in copies:
            dest = root + target
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(host, dest)
        # ldd itself (libc-bin) is not in the image: only ld.so is needed to
        # list what the binary would load, and it is in libc6.
        for _, target in binaries:
            out = subprocess.run([Sandboxed.CHROOT, root, "/lib64/ld-linux-x86-64.so.2", "--list", target],
                                 capture_output=True, text=True)
            missing = [l.strip() for l in out.stdout.splitlines() if "not found" in l]
            check(out.returncode == 0 and not missing,
                  f"{target} finds every library inside the layout {missing} {out.stderr.strip()}")

        data = os.path.join(tmp, "data")
        os.makedirs(data)
        os.chown(data, uid, gid)
        os.chmod(data, 0o750)
        before = tree_snapshot(root, root + volume)

        # The sandbox must be real: the same user may not write to /tmp.
        probe = Sandboxed(root, data, volume, uid, gid,
                          [entrypoint[0], "--listen=127.0.0.1:0", "--data_dir=/tmp/store"])
        code = probe.stop(timeout=60) if probe.wait_for("serving on", 30) else probe.proc.wait(60)
        check(code != 0 and re.search(r"Read-only file system|Permission denied", probe.logs()) is not None,
              f"a store outside the VOLUME fails (exit {code}): {probe.logs()[-300:]}")

        argv = list(entrypoint)
        loopback = {"listen": "127.0.0.1:0", "metrics_listen": "127.0.0.1:0"}
        argv = [f"--{a[2:].split('=')[0]}={loopback[a[2:].split('=')[0]]}"
                if a.startswith("--") and a[2:].split("=")[0] in loopback else a
                for a in argv] + cmd
        server = Sandboxed(root, data, volume, uid, gid, argv)
        try:
            m = server.wait_for(r"serving on (\S+)", 60)
            if not check(m is not None, f"{' '.join(argv)} serves" + ("" if m else f": {server.logs()[-2000:]}")):
                return 1
            port = port_of(m.group(1))
            address = f"127.0.0.1:{port}"
            status = open(f"/proc/{server.proc.pid}/status").read()
            check(re.search(rf"^Uid:\s+{uid}\s+{uid}\s+{uid}\s+{uid}$", status, re.M) is not None and
                  re.search(rf"^Gid:\s+{gid}\s+{gid}\s+{gid}\s+{gid}$", status, re.M) is not None,
                  f"dedupd runs as {uid}:{gid}")
            check(re.search(r"^CapEff:\s+0+$", status, re.M) is not None, "dedupd has no capabilities")
            health = subprocess.run([args.health_probe, address], capture_output=True, text=True, timeout=30)
            check(health.returncode == 0 and health.stdout.strip() == "SERVING",
                  f"gRPC health: {health.stdout.strip()} {health.stderr.strip()}")
            url = "https://runtime-layout.example/page\n"
            for want in ("NEW", "SEEN"):
                r = subprocess.run([args.dedupctl, "url", "check", "--server", address],
                                   input=url, capture_output=True, text=True, timeout=60)
                check(r.returncode == 0 and re.search(rf'"verdict":\s*"{want}"', r.stdout) is not None, f"a claim answers {want}: {r.stdout.strip()} {r.stderr.strip()}")
            mm = server.wait_for(r"metrics on (\S+)", 10)
            if check(mm is not None, "the metrics endpoint is up"):
                body = urllib.request.urlopen(f"http://127.0.0.1:{port_of(mm.group(1))}/metrics",
                                              timeout=30).read().decode()
                check("dedupd_" in body, "/metrics serves dedupd_ metrics")
        finally:
            code = server.stop(timeout=90)
        logs = server.logs()
        check(code == 0, f"SIGTERM stops it with exit 0 (got {code})")
        check("stopped cleanly" in logs, "it logs 'stopped cleanly'")
        check("Read-only file system" not in logs, "it tried to write nowhere read-only")
        stored = [os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs]
        check(os.path.exists(os.path.join(data, "CURRENT")), f"the store is in the VOLUME ({len(stored)} files)")
        check(all(os.lstat(p).st_uid == uid for p in stored), f"every stored file belongs to uid {uid}")
        check(tree_snapshot(root, root + volume) == before, "nothing changed outside the VOLUME")
        if failures:
            print("dedupd output:\n" + logs[-3000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
