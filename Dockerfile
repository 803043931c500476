# dedupd container image: build on Debian 12, run on Debian 12 slim.
#
#   docker build -t dedupd:0.1.0 .
#   docker run -v dedupd-data:/var/lib/dedupd -p 50051:50051 -p 9090:9090 dedupd:0.1.0
#
# No Docker engine runs in this project's CI: tests/deploy/runtime_layout_test.py
# reads this file (the runtime stage's install line, COPY lines, USER, VOLUME,
# ENTRYPOINT and CMD), lays the runtime files out in a directory the same way
# and runs the binary there as USER with a read-only root except the VOLUME.
# Keep those instructions one per line and ENTRYPOINT/CMD in JSON form.

# --- build: the same scripts as docs/development.md "Build" -----------------
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
# Release binaries only; tests and benchmarks are CI's job, not the image's.
RUN rm -rf build && TARGETS="dedupd dedupctl" scripts/build.sh \
      -DCMAKE_BUILD_TYPE=Release -DDEDUPD_BENCH=OFF \
 && strip build/server/dedupd build/client/dedupctl

# --- runtime: only the shared libraries the binaries load --------------------
FROM debian:12-slim AS runtime
COPY scripts/install-deps.sh /usr/local/lib/dedupd/install-deps.sh
RUN /usr/local/lib/dedupd/install-deps.sh --runtime && rm -rf /var/lib/apt/lists/*
# A fixed uid/gid, so volumes and Kubernetes' runAsUser/fsGroup agree.
RUN groupadd --system --gid 10001 dedupd \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/dedupd --no-create-home --shell /usr/sbin/nologin dedupd \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/dedupd \
 && install -d -m 0755 /etc/dedupd
COPY --from=build /src/build/server/dedupd /usr/local/bin/dedupd
COPY --from=build /src/build/client/dedupctl /usr/local/bin/dedupctl
# The default config (no host rules); Kubernetes mounts its ConfigMap here.
COPY deploy/common/dedupd.conf /etc/dedupd/dedupd.conf
USER 10001:10001
# The embedded RocksDB store: the only place dedupd writes.
VOLUME /var/lib/dedupd
# 50051: gRPC API (and gRPC health); 9090: Prometheus /metrics (HTTP).
EXPOSE 50051 9090
# Docker's health check: the gRPC listener accepts connections. That says
# the process is up, not that the store is open (dedupd listens first and
# answers NOT_SERVING while the store opens). Debian ships no gRPC health
# client; Kubernetes uses native gRPC probes (deploy/base/statefulset.yaml),
# which see NOT_SERVING while the store opens and while draining.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10m --retries=3 \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/50051"]
# SIGTERM drains calls in flight (--drain_timeout) and closes the store.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/dedupd", "--listen=0.0.0.0:50051", "--data_dir=/var/lib/dedupd", "--metrics_listen=0.0.0.0:9090"]
CMD ["--config=/etc/dedupd/dedupd.conf"]
