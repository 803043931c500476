// dedupd: the deduplication server. Flags are read here only and copied into
// ServerOptions; see README.md "Configuration" for every flag.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/file_io.h"
#include "core/index/simhash_index.h"
#include "server/admin.h"
#include "server/auth.h"
#include "server/log.h"
#include "server/replica_guard.h"
#include "server/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "host:port for the gRPC API; port 0 picks a free port");
ABSL_FLAG(std::string, store, "rocksdb",
          "where the records live: rocksdb (embedded, in --data_dir; every layer) or "
          "redis_cluster (a Redis/Valkey/Kvrocks Cluster shared by several front ends; "
          "the URL and content layers so far: CheckChunks answers UNIMPLEMENTED)");
ABSL_FLAG(std::string, data_dir, "./data",
          "directory of the embedded RocksDB store (created if missing; unused with "
          "--store=redis_cluster)");
ABSL_FLAG(std::string, redis_nodes, "",
          "--store=redis_cluster: seed nodes HOST:PORT,... (any one reachable is enough; "
          "the others are found in the slot map)");
ABSL_FLAG(std::string, redis_user, "",
          "--store=redis_cluster: ACL user for AUTH (needs --redis_password_file)");
ABSL_FLAG(std::string, redis_password_file, "",
          "--store=redis_cluster: file holding the AUTH password (trailing newline "
          "stripped); empty: no AUTH");
ABSL_FLAG(bool, redis_tls, false,
          "--store=redis_cluster: TLS to every node (the nodes' tls-port), each node's "
          "certificate verified against --redis_tls_ca_file for the node's address (or "
          "--redis_tls_server_name)");
ABSL_FLAG(std::string, redis_tls_ca_file, "",
          "--redis_tls: PEM CA certificates the nodes' certificates must chain to; empty: the "
          "system's trust store");
ABSL_FLAG(std::string, redis_tls_cert_file, "",
          "--redis_tls: PEM client certificate chain sent to the nodes (mutual TLS: "
          "tls-auth-clients); needs --redis_tls_key_file; empty: none");
ABSL_FLAG(std::string, redis_tls_key_file, "",
          "--redis_tls: PEM private key (unencrypted) of --redis_tls_cert_file");
ABSL_FLAG(std::string, redis_tls_server_name, "",
          "--redis_tls: the name every node's certificate must carry (DNS or IP "
          "subjectAltName; a DNS name is sent as SNI too); empty: each node's own host as "
          "the slot map gives it, usually an IP address");
ABSL_FLAG(std::string, redis_key_prefix, "dedupd:",
          "--store=redis_cluster: prefix of every key, so deployments sharing a cluster "
          "never see each other's records (1-64 of A-Z a-z 0-9 . _ - :)");
ABSL_FLAG(int64_t, redis_min_replicas_acked, 0,
          "--store=redis_cluster: before answering NEW, WAIT until this many replicas of "
          "each written master have the write (0: no WAIT; a master failover may lose "
          "the last claims)");
ABSL_FLAG(absl::Duration, redis_chunk_lease, absl::Seconds(30),
          "--store=redis_cluster: how long a CheckChunks claim holds its document's lease; a "
          "front end that dies mid-claim blocks that document this long (2s to 1h)");
ABSL_FLAG(absl::Duration, redis_replica_ack_timeout, absl::Seconds(1),
          "--store=redis_cluster: how long one WAIT may block; a short count fails the "
          "batch UNAVAILABLE");
ABSL_FLAG(std::string, config, "",
          "config file (protobuf text format; README.md, Configuration); empty: "
          "built-in defaults");
ABSL_FLAG(std::string, port_file, "", "if set, write the bound port to this file once serving");
ABSL_FLAG(int64_t, max_batch_items, 10000, "most items per request");
ABSL_FLAG(int64_t, max_message_bytes, 16 << 20, "largest request or response message, in bytes");
ABSL_FLAG(int64_t, max_concurrent_rpcs, 256, "most calls in flight; more get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, worker_threads, 8,
          "threads that run calls' work (normalizing, store reads and writes)");
ABSL_FLAG(bool, sync_writes, false,
          "fsync the WAL before answering each claim batch (power-loss "
          "durability; a process crash loses nothing acknowledged either way)");
ABSL_FLAG(int64_t, block_cache_mb, 256, "RocksDB block cache, in MiB");
ABSL_FLAG(int64_t, write_buffer_mb, 64,
          "size of one RocksDB memtable, in MiB (up to 3 per column family exist at once)");
ABSL_FLAG(std::string, url_memtable, "hash",
          "how the URL records' memtables are kept: hash (appended, hash-indexed, "
          "sorted at flush: cheap inserts of random keys) or skiplist (RocksDB's "
          "default)");
ABSL_FLAG(std::string, url_compaction, "universal",
          "how the URL records are compacted: universal (tiered: fewer rewrites "
          "per record; a merge into the oldest run needs its size again in free "
          "disk) or leveled (RocksDB's default: more rewrites, little temporary "
          "space)");
ABSL_FLAG(std::string, content_compaction, "leveled",
          "how the content records (documents, chunk texts) are compacted: "
          "leveled or universal, as --url_compaction (universal: faster "
          "CheckChunks, slower CheckContent)");
ABSL_FLAG(int64_t, max_text_bytes, 8 << 20,
          "largest text of one CheckContent item, in bytes (larger: that "
          "item is INVALID)");
ABSL_FLAG(int64_t, simhash_shingle_words, 3,
          "words per SimHash shingle; persisted in the store, which refuses "
          "another value later");
ABSL_FLAG(int64_t, simhash_max_distance, 3,
          "largest Hamming distance the near-duplicate index answers exactly "
          "(and the largest max_hamming_distance an item may ask for)");
ABSL_FLAG(int64_t, simhash_index_blocks, 0,
          "blocks the near-duplicate index cuts fingerprints into (0 = "
          "simhash_max_distance + 1, the smallest; up to "
          "simhash_max_distance + 3 with at most 20 tables: more memory, "
          "faster queries at 10^8 fingerprints; docs/simhash_index.md)");
ABSL_FLAG(double, content_min_jaccard, 0.85,
          "MinHash near matching of CheckContent items that set no min_jaccard: the "
          "smallest estimated 3-word shingle Jaccard similarity that counts as near; 0 "
          "turns it off for them (SimHash only); else in [min_jaccard_floor, 1]");
ABSL_FLAG(double, chunk_min_jaccard, 0.8,
          "the same for CheckChunks requests that set no min_jaccard");
ABSL_FLAG(double, min_jaccard_floor, 0.8,
          "the lowest min_jaccard a request may ask for, in (0, 1]: the LSH index "
          "(18 bands x 7 rows) finds ~98.6% of the pairs at 0.8 and fewer below "
          "(docs/minhash.md)");
ABSL_FLAG(absl::Duration, claim_id_retention, absl::Hours(24),
          "how long a claim_id (CheckUrl, CheckContent, CheckChunks) answers its retries as "
          "it was answered (1m to 720h); a retry later than this is a new request");
ABSL_FLAG(int64_t, max_aliases_returned, 10,
          "alias URLs listed per CheckContent result (the count is always total)");
ABSL_FLAG(int64_t, max_near_matches, 10, "near matches listed per CheckContent result");
ABSL_FLAG(std::string, url_seen_mode, "exact",
          "exact: a RocksDB record per URL, behind an in-memory Bloom front; "
          "approximate: the seen-set is a Bloom filter in DATA_DIR/url-bloom "
          "(fixed memory, no record per URL; a false positive skips a new URL, "
          "answered SEEN_PROBABLY)");
ABSL_FLAG(bool, url_filter, true,
          "exact mode: answer 'never seen' from an in-memory Bloom filter "
          "without a store read (answers stay exact)");
ABSL_FLAG(int64_t, url_filter_expected_urls, 10000000,
          "URLs the Bloom filter is sized for (exact mode: its first segment; "
          "past it, segments for twice as many URLs each are added; "
          "approximate mode: the capacity, fixed at creation)");
ABSL_FLAG(double, url_filter_false_positive_rate, 0.01,
          "the Bloom filter's false positive rate at its design size");
ABSL_FLAG(int64_t, url_filter_memory_mb, 0,
          "if non-zero, the Bloom filter's size in MiB instead of the size the "
          "two flags above give");
ABSL_FLAG(int64_t, url_snapshot_every_urls, 10000000,
          "approximate mode: snapshot the filter after this many new URLs "
          "(bounds the claim log replayed at restart)");
ABSL_FLAG(absl::Duration, url_snapshot_interval, absl::Minutes(10),
          "approximate mode: snapshot the filter at least this often while "
          "URLs are added");
ABSL_FLAG(std::string, metrics_listen, "",
          "host:port of the Prometheus /metrics endpoint (HTTP); port 0 picks a "
          "free port; empty: off");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of the gRPC port; with --tls_key_file turns on "
          "TLS; empty: plaintext");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key (unencrypted) of --tls_cert_file");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "mutual TLS: PEM CA certificates; clients must present a certificate "
          "signed by one; empty: no client certificate asked");
ABSL_FLAG(std::string, auth_token_file, "",
          "file holding the bearer token every call but health must send as "
          "'authorization: Bearer TOKEN'; empty: no token needed");
ABSL_FLAG(std::string, admin_token_file, "",
          "file holding the token /dedupd.v1.Admin/ calls need instead of "
          "--auth_token_file's; empty: admin calls need that one");
ABSL_FLAG(std::string, health_listen, "",
          "host:port of an extra plaintext port serving only grpc.health.v1 "
          "(Kubernetes gRPC probes when --listen has TLS); port 0 picks a "
          "free port; empty: off");
ABSL_FLAG(std::string, restore_from, "",
          "before serving, copy this backup (made by `dedupctl admin backup`) "
          "into --data_dir, which must not exist or be empty; empty: no restore");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "on SIGTERM/SIGINT, how long calls in flight may finish");
ABSL_FLAG(absl::Duration, shutdown_delay, absl::ZeroDuration(),
          "on SIGTERM/SIGINT, how long health answers NOT_SERVING while calls "
          "are still served, before the drain (lets probes and load balancers "
          "notice)");
ABSL_FLAG(absl::Duration, handshake_timeout, absl::Seconds(20),
          "a new connection must finish its handshake and send the HTTP/2 "
          "preface and SETTINGS within this long, or it is closed");
ABSL_FLAG(int64_t, max_concurrent_streams, 100,
          "most calls one connection may have open at once (HTTP/2 "
          "SETTINGS_MAX_CONCURRENT_STREAMS); more wait in the client");
ABSL_FLAG(absl::Duration, max_connection_idle, absl::Minutes(5),
          "close a connection that has had no call for this long (clients "
          "reconnect on their next call)");
ABSL_FLAG(int64_t, grpc_memory_quota_mb, 1024,
          "memory gRPC may use for connections, calls and messages being "
          "received, in MiB; past it new connections are refused and calls "
          "cancelled (a message over --max_message_bytes is only refused "
          "once it is all in, so this is what bounds one); 0: no cap");
ABSL_FLAG(std::string, log_level, "info", "least severe log lines written: info, warning or error");
ABSL_FLAG(std::string, testing_open_gate, "",
          "TEST ONLY: wait until this file exists before opening the store "
          "(health answers NOT_SERVING meanwhile)");

namespace {

// WaitForTestingOpenGate is the --testing_open_gate hook, for tests only:
// between Listen and OpenStore, waits until file `gate` exists (at most 10
// minutes), so that a test can observe the NOT_SERVING phase
// deterministically. An empty `gate` returns at once.
void WaitForTestingOpenGate(const std::string& gate) {
  if (gate.empty()) return;
  dedupd::Log(dedupd::LogLevel::kInfo,
              absl::StrCat("test only: waiting for ", gate, " before opening the store"));
  std::error_code ec;
  const absl::Time give_up = absl::Now() + absl::Minutes(10);
  while (!std::filesystem::exists(gate, ec) && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
}

// Fails with a one-line message when `value` is outside [lo, hi].
bool CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return true;
  std::cerr << "dedupd: --" << flag << "=" << value << " is out of range [" << lo << ", " << hi
            << "]\n";
  return false;
}

bool WritePortFile(const std::string& path, int port) {
  // Write then rename, so a reader never sees a half-written file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// ValidateRedisFlags: --store and the --redis_* flags (the store checks
// the key prefix and the WAIT bounds again, with its own messages).
bool ValidateRedisFlags() {
  const std::string store = absl::GetFlag(FLAGS_store);
  if (store != "rocksdb" && store != "redis_cluster") {
    std::cerr << "dedupd: --store=" << store << " must be rocksdb or redis_cluster\n";
    return false;
  }
  const std::string nodes = absl::GetFlag(FLAGS_redis_nodes);
  // The --redis_tls_* flags that name something, for the checks below.
  const std::pair<const char*, std::string> tls_settings[] = {
      {"redis_tls_ca_file", absl::GetFlag(FLAGS_redis_tls_ca_file)},
      {"redis_tls_cert_file", absl::GetFlag(FLAGS_redis_tls_cert_file)},
      {"redis_tls_key_file", absl::GetFlag(FLAGS_redis_tls_key_file)},
      {"redis_tls_server_name", absl::GetFlag(FLAGS_redis_tls_server_name)}};
  if (store == "rocksdb") {
    if (!nodes.empty()) {
      std::cerr << "dedupd: --redis_nodes needs --store=redis_cluster\n";
      return false;
    }
    if (absl::GetFlag(FLAGS_redis_tls)) {
      std::cerr << "dedupd: --redis_tls needs --store=redis_cluster\n";
      return false;
    }
  }
  if (!absl::GetFlag(FLAGS_redis_tls)) {
    for (const auto& [flag, value] : tls_settings) {
      if (!value.empty()) {
        std::cerr << "dedupd: --" << flag << " needs --redis_tls\n";
        return false;
      }
    }
  }
  if (store == "rocksdb") return true;
  if (absl::GetFlag(FLAGS_redis_tls_cert_file).empty() !=
      absl::GetFlag(FLAGS_redis_tls_key_file).empty()) {
    std::cerr << "dedupd: a Redis client certificate needs both --redis_tls_cert_file and "
                 "--redis_tls_key_file; only --"
              << (absl::GetFlag(FLAGS_redis_tls_cert_file).empty() ? "redis_tls_key_file"
                                                                   : "redis_tls_cert_file")
              << " is set\n";
    return false;
  }
  if (nodes.empty()) {
    std::cerr << "dedupd: --store=redis_cluster needs --redis_nodes=HOST:PORT,...\n";
    return false;
  }
  for (absl::string_view node : absl::StrSplit(nodes, ',')) {
    const size_t colon = node.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(node.substr(colon + 1), &port) || port < 1 || port > 65535) {
      std::cerr << "dedupd: --redis_nodes: '" << node
                << "' is not HOST:PORT (e.g. 10.0.0.5:6379; IPv6 literals are not supported)\n";
      return false;
    }
  }
  if (!CheckRange("redis_min_replicas_acked", absl::GetFlag(FLAGS_redis_min_replicas_acked), 0,
                  16)) {
    return false;
  }
  const absl::Duration lease = absl::GetFlag(FLAGS_redis_chunk_lease);
  if (lease < absl::Seconds(2) || lease > absl::Hours(1)) {
    // Below 2 s a claim slowed by one WAIT or a retried node could outlive
    // its lease and fail at its commit.
    std::cerr << "dedupd: --redis_chunk_lease=" << absl::FormatDuration(lease)
              << " is out of range [2s, 1h]\n";
    return false;
  }
  const absl::Duration ack = absl::GetFlag(FLAGS_redis_replica_ack_timeout);
  if (ack < absl::Milliseconds(1) || ack >= absl::Seconds(2)) {
    // The router's command timeout is 2 s: a WAIT must come back before it.
    std::cerr << "dedupd: --redis_replica_ack_timeout=" << absl::FormatDuration(ack)
              << " is out of range [1ms, 2s)\n";
    return false;
  }
  if (!absl::GetFlag(FLAGS_redis_user).empty() &&
      absl::GetFlag(FLAGS_redis_password_file).empty()) {
    std::cerr << "dedupd: --redis_user needs --redis_password_file\n";
    return false;
  }
  if (!absl::GetFlag(FLAGS_restore_from).empty()) {
    std::cerr << "dedupd: --restore_from restores the embedded store; it needs --store=rocksdb\n";
    return false;
  }
  return true;
}

}  // namespace

// Beside its check below (flags cannot be defined inside a namespace).
ABSL_FLAG(std::string, statefulset_pod_name, "",
          "this pod's name when a StatefulSet runs dedupd with the embedded store "
          "(deploy/base passes the downward API's metadata.name): a pod whose "
          "ordinal is not 0 refuses to start, as it would open a second store; "
          "empty: no check");

namespace {

// ValidateFlags prints a one-line message naming the first flag that is out
// of range or has an unknown value, and returns false then.
bool ValidateFlags() {
  if (absl::Status replica = dedupd::CheckSingleReplica(absl::GetFlag(FLAGS_statefulset_pod_name));
      !replica.ok()) {
    std::cerr << "dedupd: " << replica.message() << "\n";
    return false;
  }
  if (!CheckRange("max_batch_items", absl::GetFlag(FLAGS_max_batch_items), 1, 1000000) ||
      !CheckRange("max_message_bytes", absl::GetFlag(FLAGS_max_message_bytes), 1024, INT32_MAX) ||
      !CheckRange("max_concurrent_rpcs", absl::GetFlag(FLAGS_max_concurrent_rpcs), 1, 1000000) ||
      !CheckRange("worker_threads", absl::GetFlag(FLAGS_worker_threads), 1, 1024) ||
      !CheckRange("block_cache_mb", absl::GetFlag(FLAGS_block_cache_mb), 1, 1 << 20) ||
      !CheckRange("write_buffer_mb", absl::GetFlag(FLAGS_write_buffer_mb), 1, 4096) ||
      !CheckRange("max_text_bytes", absl::GetFlag(FLAGS_max_text_bytes), 1, INT32_MAX) ||
      !CheckRange("simhash_shingle_words", absl::GetFlag(FLAGS_simhash_shingle_words), 1, 16) ||
      !CheckRange("simhash_max_distance", absl::GetFlag(FLAGS_simhash_max_distance), 0,
                  dedupd::SimHashIndex::kMaxSupportedDistance) ||
      !CheckRange(
          "simhash_index_blocks", absl::GetFlag(FLAGS_simhash_index_blocks), 0,
          absl::GetFlag(FLAGS_simhash_max_distance) + 1 + dedupd::SimHashIndex::kMaxExtraBlocks) ||
      !CheckRange("max_aliases_returned", absl::GetFlag(FLAGS_max_aliases_returned), 0, 10000) ||
      !CheckRange("max_near_matches", absl::GetFlag(FLAGS_max_near_matches), 0, 10000) ||
      !CheckRange("url_filter_expected_urls", absl::GetFlag(FLAGS_url_filter_expected_urls), 1,
                  int64_t{1} << 40) ||
      !CheckRange("url_filter_memory_mb", absl::GetFlag(FLAGS_url_filter_memory_mb), 0,
                  int64_t{1} << 20) ||
      !CheckRange("max_concurrent_streams", absl::GetFlag(FLAGS_max_concurrent_streams), 1,
                  INT32_MAX) ||
      !CheckRange("grpc_memory_quota_mb", absl::GetFlag(FLAGS_grpc_memory_quota_mb), 0,
                  int64_t{1} << 30) ||
      !CheckRange("url_snapshot_every_urls", absl::GetFlag(FLAGS_url_snapshot_every_urls), 0,
                  int64_t{1} << 40)) {
    return false;
  }
  // A quota below two messages would make gRPC cancel legitimate requests
  // of the allowed size (it charges a message being received to the quota).
  const int64_t quota_mb = absl::GetFlag(FLAGS_grpc_memory_quota_mb);
  if (quota_mb != 0 && (quota_mb << 20) < 2 * absl::GetFlag(FLAGS_max_message_bytes)) {
    std::cerr << "dedupd: --grpc_memory_quota_mb=" << quota_mb
              << " is less than two messages of --max_message_bytes="
              << absl::GetFlag(FLAGS_max_message_bytes)
              << ": requests of the allowed size would be cancelled (raise it, or 0 for no cap)\n";
    return false;
  }
  const double floor = absl::GetFlag(FLAGS_min_jaccard_floor);
  if (!(floor > 0 && floor <= 1)) {
    std::cerr << "dedupd: --min_jaccard_floor=" << floor << " is not in (0, 1]\n";
    return false;
  }
  for (const auto& [name, value] :
       {std::pair<const char*, double>{"content_min_jaccard",
                                       absl::GetFlag(FLAGS_content_min_jaccard)},
        std::pair<const char*, double>{"chunk_min_jaccard",
                                       absl::GetFlag(FLAGS_chunk_min_jaccard)}}) {
    if (value != 0 && !(value >= floor && value <= 1)) {
      std::cerr << "dedupd: --" << name << "=" << value << " must be 0 (off) or in [" << floor
                << ", 1] (--min_jaccard_floor)\n";
      return false;
    }
  }
  const absl::Duration retention = absl::GetFlag(FLAGS_claim_id_retention);
  if (retention < absl::Minutes(1) || retention > absl::Hours(720)) {
    std::cerr << "dedupd: --claim_id_retention=" << absl::FormatDuration(retention)
              << " is out of range [1m, 720h]\n";
    return false;
  }
  const std::string url_seen_mode = absl::GetFlag(FLAGS_url_seen_mode);
  if (url_seen_mode != "exact" && url_seen_mode != "approximate") {
    std::cerr << "dedupd: --url_seen_mode=" << url_seen_mode << " must be exact or approximate\n";
    return false;
  }
  const std::string url_memtable = absl::GetFlag(FLAGS_url_memtable);
  if (url_memtable != "hash" && url_memtable != "skiplist") {
    std::cerr << "dedupd: --url_memtable=" << url_memtable << " must be hash or skiplist\n";
    return false;
  }
  for (const auto& [name, value] :
       {std::pair<const char*, std::string>{"url_compaction", absl::GetFlag(FLAGS_url_compaction)},
        {"content_compaction", absl::GetFlag(FLAGS_content_compaction)}}) {
    if (value != "universal" && value != "leveled") {
      std::cerr << "dedupd: --" << name << "=" << value << " must be universal or leveled\n";
      return false;
    }
  }
  const double fp_rate = absl::GetFlag(FLAGS_url_filter_false_positive_rate);
  if (!(fp_rate > 0 && fp_rate <= 0.5)) {
    std::cerr << "dedupd: --url_filter_false_positive_rate=" << fp_rate
              << " is out of range (0, 0.5]\n";
    return false;
  }
  if (!dedupd::SimHashIndex::IsValidLayout(
          static_cast<int>(absl::GetFlag(FLAGS_simhash_max_distance)),
          static_cast<int>(absl::GetFlag(FLAGS_simhash_index_blocks)))) {
    std::cerr << "dedupd: --simhash_index_blocks=" << absl::GetFlag(FLAGS_simhash_index_blocks)
              << " must be 0 or in [simhash_max_distance + 1, "
                 "simhash_max_distance + 3] with at most "
              << dedupd::SimHashIndex::kMaxTables << " tables (C(blocks, simhash_max_distance))\n";
    return false;
  }
  if (absl::GetFlag(FLAGS_drain_timeout) < absl::ZeroDuration()) {
    std::cerr << "dedupd: --drain_timeout must not be negative\n";
    return false;
  }
  if (absl::GetFlag(FLAGS_handshake_timeout) < absl::Milliseconds(1) ||
      absl::GetFlag(FLAGS_handshake_timeout) > absl::Hours(24)) {
    std::cerr << "dedupd: --handshake_timeout must be in [1ms, 24h]\n";
    return false;
  }
  if (absl::GetFlag(FLAGS_max_connection_idle) < absl::Milliseconds(1)) {
    std::cerr << "dedupd: --max_connection_idle must be at least 1ms\n";
    return false;
  }
  if (absl::GetFlag(FLAGS_shutdown_delay) < absl::ZeroDuration()) {
    std::cerr << "dedupd: --shutdown_delay must not be negative\n";
    return false;
  }
  return ValidateRedisFlags();
}

// OptionsFromFlags: the server's options from the validated flags, with
// the token files read (once: the server keeps the tokens only). nullopt,
// with the message printed, when a token file cannot be read.
std::optional<dedupd::ServerOptions> OptionsFromFlags() {
  dedupd::ServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  if (absl::GetFlag(FLAGS_store) == "redis_cluster") {
    options.store = dedupd::ServerOptions::StoreKind::kRedisCluster;
    options.redis_nodes = absl::StrSplit(absl::GetFlag(FLAGS_redis_nodes), ',');
    options.redis_user = absl::GetFlag(FLAGS_redis_user);
    options.redis_key_prefix = absl::GetFlag(FLAGS_redis_key_prefix);
    options.redis_min_replicas_acked =
        static_cast<int>(absl::GetFlag(FLAGS_redis_min_replicas_acked));
    options.redis_replica_ack_timeout = absl::GetFlag(FLAGS_redis_replica_ack_timeout);
    options.redis_chunk_lease = absl::GetFlag(FLAGS_redis_chunk_lease);
    options.redis_tls = absl::GetFlag(FLAGS_redis_tls);
    options.redis_tls_server_name = absl::GetFlag(FLAGS_redis_tls_server_name);
  }
  options.config_path = absl::GetFlag(FLAGS_config);
  options.max_batch_items = absl::GetFlag(FLAGS_max_batch_items);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.max_concurrent_rpcs = absl::GetFlag(FLAGS_max_concurrent_rpcs);
  options.worker_threads = static_cast<int>(absl::GetFlag(FLAGS_worker_threads));
  options.sync_writes = absl::GetFlag(FLAGS_sync_writes);
  options.block_cache_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_block_cache_mb)) << 20;
  options.write_buffer_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_write_buffer_mb)) << 20;
  options.url_memtable = absl::GetFlag(FLAGS_url_memtable) == "skiplist"
                             ? dedupd::RocksDbStoreOptions::UrlMemtable::kSkipList
                             : dedupd::RocksDbStoreOptions::UrlMemtable::kHashVector;
  auto compaction = [](const std::string& flag) {
    return flag == "universal" ? dedupd::RocksDbStoreOptions::Compaction::kUniversal
                               : dedupd::RocksDbStoreOptions::Compaction::kLeveled;
  };
  options.url_compaction = compaction(absl::GetFlag(FLAGS_url_compaction));
  options.content_compaction = compaction(absl::GetFlag(FLAGS_content_compaction));
  options.max_text_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_text_bytes));
  options.simhash_shingle_words = static_cast<int>(absl::GetFlag(FLAGS_simhash_shingle_words));
  options.simhash_max_distance = static_cast<int>(absl::GetFlag(FLAGS_simhash_max_distance));
  options.simhash_index_blocks = static_cast<int>(absl::GetFlag(FLAGS_simhash_index_blocks));
  options.claim_id_retention = absl::GetFlag(FLAGS_claim_id_retention);
  options.max_aliases_returned = static_cast<size_t>(absl::GetFlag(FLAGS_max_aliases_returned));
  options.max_near_matches = static_cast<size_t>(absl::GetFlag(FLAGS_max_near_matches));
  options.content_min_jaccard = absl::GetFlag(FLAGS_content_min_jaccard);
  options.chunk_min_jaccard = absl::GetFlag(FLAGS_chunk_min_jaccard);
  options.min_jaccard_floor = absl::GetFlag(FLAGS_min_jaccard_floor);
  options.url_seen_mode = absl::GetFlag(FLAGS_url_seen_mode) == "approximate"
                              ? dedupd::ServerOptions::UrlSeenMode::kApproximate
                              : dedupd::ServerOptions::UrlSeenMode::kExact;
  options.url_filter = absl::GetFlag(FLAGS_url_filter);
  options.url_filter_expected_urls =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_url_filter_expected_urls));
  options.url_filter_false_positive_rate = absl::GetFlag(FLAGS_url_filter_false_positive_rate);
  options.url_filter_memory_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_url_filter_memory_mb))
                                    << 20;
  options.url_snapshot_every_urls =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_url_snapshot_every_urls));
  options.url_snapshot_interval = absl::GetFlag(FLAGS_url_snapshot_interval);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.shutdown_delay = absl::GetFlag(FLAGS_shutdown_delay);
  options.handshake_timeout = absl::GetFlag(FLAGS_handshake_timeout);
  options.max_concurrent_streams = static_cast<int>(absl::GetFlag(FLAGS_max_concurrent_streams));
  options.max_connection_idle = absl::GetFlag(FLAGS_max_connection_idle);
  options.grpc_memory_quota_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_grpc_memory_quota_mb))
                                    << 20;
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key_file);
  options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  options.health_listen = absl::GetFlag(FLAGS_health_listen);
  // A token file is read here, once: the server keeps the token only.
  auto read_token = [](const char* flag, const std::string& path, std::string* token) {
    if (path.empty()) return true;
    absl::StatusOr<std::string> read = dedupd::ReadTokenFile(flag, path);
    if (!read.ok()) {
      std::cerr << "dedupd: " << read.status().message() << "\n";
      return false;
    }
    *token = *std::move(read);
    return true;
  };
  if (!read_token("auth_token_file", absl::GetFlag(FLAGS_auth_token_file), &options.auth_token) ||
      !read_token("admin_token_file", absl::GetFlag(FLAGS_admin_token_file),
                  &options.admin_token)) {
    return std::nullopt;
  }
  // The Redis password: read once, kept in the options only, never logged.
  const std::string password_file = absl::GetFlag(FLAGS_redis_password_file);
  if (options.store == dedupd::ServerOptions::StoreKind::kRedisCluster && !password_file.empty()) {
    absl::StatusOr<std::string> read = dedupd::ReadSecretFile("redis_password_file", password_file);
    if (!read.ok()) {
      std::cerr << "dedupd: " << read.status().message() << "\n";
      return std::nullopt;
    }
    options.redis_password = *std::move(read);
  }
  // The Redis TLS files: read once, here, like the password (the router
  // parses them when the store opens, and says what is wrong then).
  if (options.redis_tls) {
    for (const auto& [flag, path, pem] :
         {std::tuple<const char*, std::string, std::string*>{"redis_tls_ca_file",
                                                             absl::GetFlag(FLAGS_redis_tls_ca_file),
                                                             &options.redis_tls_ca_pem},
          std::tuple<const char*, std::string, std::string*>{
              "redis_tls_cert_file", absl::GetFlag(FLAGS_redis_tls_cert_file),
              &options.redis_tls_cert_pem},
          std::tuple<const char*, std::string, std::string*>{
              "redis_tls_key_file", absl::GetFlag(FLAGS_redis_tls_key_file),
              &options.redis_tls_key_pem}}) {
      if (path.empty()) continue;
      absl::StatusOr<std::string> read = dedupd::file_io::ReadFile(path);
      if (!read.ok()) {
        std::cerr << "dedupd: --" << flag << ": " << read.status().message() << "\n";
        return std::nullopt;
      }
      if (read->empty()) {
        std::cerr << "dedupd: --" << flag << "=" << path << ": the file is empty\n";
        return std::nullopt;
      }
      *pem = *std::move(read);
    }
  }

  return options;
}

// Serve restores --restore_from if set, listens, opens the store and
// serves until SIGTERM or SIGINT, then drains. Returns the exit code.
int Serve(const dedupd::ServerOptions& options) {
  const std::string restore_from = absl::GetFlag(FLAGS_restore_from);
  if (!restore_from.empty()) {
    absl::Status restored = dedupd::RestoreBackup(restore_from, options.data_dir);
    if (!restored.ok()) {
      std::cerr << "dedupd: " << restored.message() << "\n";
      return 1;
    }
    dedupd::Log(dedupd::LogLevel::kInfo,
                absl::StrCat("restored backup ", restore_from, " into ", options.data_dir));
  }

  // A write to a connection its peer has closed must fail with EPIPE, not
  // kill the server: the Redis connections write with write(2) (hiredis)
  // and SSL_write (OpenSSL's socket BIO), neither with MSG_NOSIGNAL.
  signal(SIGPIPE, SIG_IGN);

  // Block the shutdown signals before any thread starts, so that every
  // thread inherits the mask and only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Listen first: health answers NOT_SERVING (and Dedup calls UNAVAILABLE)
  // while the store opens, which can take seconds on a large store.
  absl::StatusOr<std::unique_ptr<dedupd::DedupServer>> server =
      dedupd::DedupServer::Listen(options);
  if (!server.ok()) {
    std::cerr << "dedupd: " << server.status().message() << "\n";
    return 1;
  }
  std::cerr << "dedupd: listening on " << (*server)->address()
            << " (health NOT_SERVING until the store is open)" << std::endl;
  WaitForTestingOpenGate(absl::GetFlag(FLAGS_testing_open_gate));
  const absl::Status opened = (*server)->OpenStore();
  if (!opened.ok()) {
    std::cerr << "dedupd: " << opened.message() << "\n";
    (*server)->Shutdown(absl::ZeroDuration());
    return 1;
  }
  dedupd::Log(
      dedupd::LogLevel::kInfo,
      options.store == dedupd::ServerOptions::StoreKind::kRedisCluster
          ? absl::StrCat("store open: Redis Cluster at ", absl::StrJoin(options.redis_nodes, ","),
                         options.redis_tls ? " over TLS" : "")
          : absl::StrCat("store open at ", options.data_dir));
  // "serving on" means accepting calls with the store open: scripts and
  // tests wait for this line.
  std::cerr << "dedupd: serving on " << (*server)->address() << std::endl;
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty() && !WritePortFile(port_file, (*server)->port())) {
    std::cerr << "dedupd: cannot write --port_file=" << port_file << "\n";
    (*server)->Shutdown(absl::ZeroDuration());
    return 1;
  }

  int sig = 0;
  sigwait(&signals, &sig);
  dedupd::Log(dedupd::LogLevel::kInfo,
              absl::StrCat("received ", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                           ": draining calls in flight, then closing the store"));
  (*server)->Shutdown(absl::GetFlag(FLAGS_drain_timeout));
  dedupd::Log(dedupd::LogLevel::kInfo, "stopped cleanly");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil is built without NDEBUG, so by default every
  // absl::Mutex acquisition also maintains a global lock-order graph
  // (deadlock detection: GraphCycles, itself behind a global lock). That is
  // a debugging aid: the tests keep it on (their own mains), the server
  // turns it off. Measured: ~2% of the server's CPU per CheckChunks chunk
  // (perf, docs/benchmarks.md "Storage format 4").
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "dedupd: deduplication service for crawlers and RAG ingestion.\n"
      "Usage: dedupd [--listen=HOST:PORT] [--data_dir=DIR] [--config=FILE] ...");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "dedupd: unexpected argument '" << rest[1]
              << "' (flags are --name=value; see --help)\n";
    return 2;
  }
  if (!ValidateFlags()) return 2;
  dedupd::LogLevel log_level;
  if (!dedupd::ParseLogLevel(absl::GetFlag(FLAGS_log_level), &log_level)) {
    std::cerr << "dedupd: --log_level=" << absl::GetFlag(FLAGS_log_level)
              << " must be info, warning or error\n";
    return 2;
  }
  dedupd::SetMinLogLevel(log_level);

  std::optional<dedupd::ServerOptions> options = OptionsFromFlags();
  if (!options.has_value()) return 2;
  return Serve(*options);
}
