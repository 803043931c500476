#include "server/admin.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "core/text/sha256.h"
#include "google/protobuf/util/time_util.h"
#include "storage/document_key.h"
#include "storage/redis/redis_namespace_drop.h"
#include "storage/redis/redis_replies.h"
#include "storage/redis/redis_url_store.h"

namespace dedupd {
namespace {

namespace fs = std::filesystem;

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

google::protobuf::Duration ToDuration(absl::Duration d) {
  return google::protobuf::util::TimeUtil::MicrosecondsToDuration(absl::ToInt64Microseconds(d));
}

// The bytes of every regular file under `dir` (hard links count in full).
uint64_t TreeBytes(const fs::path& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (it->is_regular_file(file_ec)) {
      const uintmax_t n = it->file_size(file_ec);
      if (!file_ec) bytes += n;
    }
  }
  return bytes;
}

absl::Status FsError(const std::error_code& ec, absl::string_view action, const std::string& path) {
  const std::string message = absl::StrCat(action, " ", path, ": ", ec.message());
  if (ec == std::errc::no_space_on_device) return absl::ResourceExhaustedError(message);
  if (ec == std::errc::permission_denied || ec == std::errc::read_only_file_system) {
    return absl::PermissionDeniedError(message);
  }
  return absl::UnavailableError(message);
}

// SyncTree fsyncs every regular file under `dir`, then every directory
// (each directory's fsync makes its own entries durable), so that a
// restored store survives a power loss once it is renamed into place.
absl::Status SyncTree(const fs::path& dir) {
  std::error_code ec;
  std::vector<std::string> dirs = {dir.string()};
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec)) {
      dirs.push_back(it->path().string());
      continue;
    }
    if (!it->is_regular_file(type_ec)) continue;
    const std::string path = it->path().string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return file_io::ErrnoStatus(errno, path, "restore: open to fsync");
    const int err = ::fsync(fd) == 0 ? 0 : errno;
    ::close(fd);
    if (err != 0) return file_io::ErrnoStatus(err, path, "restore: fsync");
  }
  if (ec) return FsError(ec, "restore: list", dir.string());
  for (const std::string& d : dirs) DEDUPD_RETURN_IF_ERROR(file_io::SyncDir(d));
  return absl::OkStatus();
}

// The answers of the admin calls a Redis Cluster front end does not serve:
// each says why and what to use instead (docs/operations.md, "Redis
// Cluster mode").
absl::Status RedisBackupUnimplemented() {
  return absl::UnimplementedError(
      "Admin.Backup works on the embedded store only; this front end runs on "
      "--store=redis_cluster, whose records live on the cluster's masters: back up every master "
      "with the cluster's own tools (BGSAVE, then copy its dump.rdb; or its AOF files; Kvrocks: "
      "its backup command), see docs/operations.md");
}

absl::Status RedisExportUnimplemented(absl::string_view key_prefix) {
  return absl::UnimplementedError(absl::StrCat(
      "Admin.Export works on the embedded store only; this front end runs on "
      "--store=redis_cluster, which has no snapshot across its masters to list in key order: "
      "list the records on each master (or replica) with redis-cli --scan --pattern '",
      key_prefix,
      "u:*' (the key layout: docs/redis_format.md), or export from a copy of a backup; see "
      "docs/operations.md"));
}

}  // namespace

AdminOps::AdminOps(RocksDbStore* store, BloomUrlStore* url_bloom, const UrlNormalizer* normalizer,
                   absl::Time started)
    : store_(store),
      url_bloom_(url_bloom),
      content_(store),
      normalizer_(normalizer),
      started_(started) {}

AdminOps::AdminOps(RedisUrlStore* redis, ContentStore* content, const UrlNormalizer* normalizer,
                   absl::Time started)
    : store_(nullptr),
      url_bloom_(nullptr),
      redis_(redis),
      content_(content),
      normalizer_(normalizer),
      started_(started) {}

absl::Status AdminOps::RedisStats(v1::StatsResponse* response) const {
  const redis::RedisMeta& meta = redis_->meta();
  response->set_store_kind("redis_cluster");
  response->set_storage_format_version(meta.format_version);
  response->set_normalizer_version(meta.url_normalizer_version);
  response->set_text_normalizer_version(meta.text_normalizer_version);
  response->set_simhash_version(meta.simhash_version);
  response->set_minhash_version(meta.minhash_version);
  *response->mutable_uptime() = ToDuration(absl::Now() - started_);
  response->set_url_seen_mode("exact");
  v1::RedisClusterStats* cluster = response->mutable_redis_cluster();
  cluster->set_slot_map_complete(redis_->router().SlotMapComplete());
  cluster->set_key_prefix(redis_->key_prefix());
  for (const redis::NodeStats& node : redis_->router().Stats()) {
    v1::RedisNodeStats* out = cluster->add_nodes();
    out->set_node(node.node);
    out->set_connected(node.connected);
    out->set_commands_sent(node.commands_sent);
    out->set_errors(node.errors);
    out->set_redirects(node.redirects);
    out->set_retries(node.retries);
    out->set_reconnects(node.reconnects);
  }
  // Two commands per master: cheap enough for any call (no scan), and the
  // only counts the cluster keeps without one. A master that does not
  // answer gets its error; Stats still answers.
  uint64_t keys = 0;
  uint64_t used_memory = 0;
  for (const std::string& master : redis_->router().Masters()) {
    v1::RedisMasterStats* out = cluster->add_masters();
    out->set_node(master);
    absl::StatusOr<redis::Value> size = redis_->router().ExecuteOnNode(master, {"DBSIZE"});
    if (!size.ok()) {
      out->set_error(std::string(size.status().message()));
      continue;
    }
    if (size->type != redis::Value::Type::kInteger || size->integer < 0) {
      out->set_error(absl::StrCat("redis node ", master, ": DBSIZE answered ",
                                  absl::StrFormat("%s", absl::FormatStreamed(*size))));
      continue;
    }
    absl::StatusOr<redis::Value> info = redis_->router().ExecuteOnNode(master, {"INFO", "memory"});
    if (!info.ok()) {
      out->set_error(std::string(info.status().message()));
      continue;
    }
    out->set_keys(static_cast<uint64_t>(size->integer));
    keys += out->keys();
    if (info->type == redis::Value::Type::kString) {
      out->set_used_memory_bytes(redis::InfoField(info->str, "used_memory").value_or(0));
      used_memory += out->used_memory_bytes();
    }
  }
  cluster->set_cluster_keys(keys);
  cluster->set_cluster_used_memory_bytes(used_memory);
  return absl::OkStatus();
}

absl::Status AdminOps::Stats(const v1::StatsRequest& request, v1::StatsResponse* response) const {
  if (redis_ != nullptr) return RedisStats(response);
  response->set_store_kind("rocksdb");
  DEDUPD_ASSIGN_OR_RETURN(const StoreStats st, store_->Stats(request.exact()));
  response->set_storage_format_version(st.storage_format_version);
  response->set_normalizer_version(st.normalizer_version);
  response->set_text_normalizer_version(st.text_normalizer_version);
  response->set_simhash_version(st.simhash_version);
  response->set_simhash_shingle_words(st.simhash_shingle_words);
  response->set_simhash_seed(st.simhash_seed);
  response->set_minhash_version(st.minhash_version);
  response->set_minhash_seed(st.minhash_seed);
  *response->mutable_store_created() = ToTimestamp(st.created);
  *response->mutable_uptime() = ToDuration(absl::Now() - started_);
  response->set_url_seen_mode(url_bloom_ != nullptr ? "approximate" : "exact");
  response->set_estimated_url_records(st.estimated_url_records);
  response->set_content_fingerprints_indexed(st.content_fingerprints_indexed);
  response->set_chunk_fingerprints_indexed(st.chunk_fingerprints_indexed);
  if (url_bloom_ != nullptr) {
    response->set_approximate_urls_inserted(url_bloom_->stats().inserted_urls);
  }
  for (const StoreStats::RecordKind& k : st.kinds) {
    v1::RecordKindStats* out = response->add_kinds();
    out->set_kind(k.name);
    out->set_key_prefix_hex(absl::BytesToHexString(k.key_prefix));
    out->set_estimated_bytes(k.estimated_bytes);
    if (k.exact_count.has_value()) out->set_exact_count(*k.exact_count);
  }
  for (const StoreStats::Namespace& ns : st.namespaces) {
    v1::NamespaceStats* out = response->add_namespaces();
    out->set_name(ns.name);
    out->set_estimated_bytes(ns.estimated_bytes);
    if (ns.exact_url_count.has_value()) out->set_exact_url_count(*ns.exact_url_count);
  }
  response->set_more_namespaces(st.more_namespaces);
  response->set_disk_bytes(st.disk_bytes);
  response->set_live_sst_bytes(st.live_sst_bytes);
  response->set_wal_bytes(st.wal_bytes);
  response->set_write_stopped(st.write_stopped);
  response->set_actual_delayed_write_rate(st.actual_delayed_write_rate);
  response->set_estimate_pending_compaction_bytes(st.estimate_pending_compaction_bytes);
  response->set_num_running_compactions(st.num_running_compactions);
  response->set_num_running_flushes(st.num_running_flushes);
  response->set_cur_size_all_mem_tables(st.cur_size_all_mem_tables);
  response->set_block_cache_usage(st.block_cache_usage);
  response->set_block_cache_capacity(st.block_cache_capacity);
  return absl::OkStatus();
}

absl::Status AdminOps::Backup(const v1::BackupRequest& request, v1::BackupResponse* response) {
  if (store_ == nullptr) return RedisBackupUnimplemented();
  const std::string& dir = request.directory();
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        "directory is empty (want an absolute path on the server, "
        "of a directory that does not exist yet)");
  }
  if (!fs::path(dir).is_absolute()) {
    return absl::InvalidArgumentError(
        absl::StrCat("directory \"", absl::CHexEscape(dir),
                     "\" is relative; give an absolute path on the server"));
  }
  if (!backup_mu_.TryLock()) {
    return absl::UnavailableError("another backup is running; retry later");
  }
  const absl::Time start = absl::Now();
  absl::Status result;
  uint64_t sequence = 0;
  {
    absl::StatusOr<uint64_t> checkpoint = store_->Checkpoint(dir);
    if (checkpoint.ok()) {
      sequence = *checkpoint;
      if (url_bloom_ != nullptr) {
        // After the checkpoint: the seen-set copy holds every URL of the
        // checkpoint's records (and maybe a few claimed since).
        result = url_bloom_->BackupTo((fs::path(dir) / kUrlBloomDirName).string());
        if (!result.ok()) {
          std::error_code ec;
          fs::remove_all(dir, ec);  // no half backup left behind
        }
      }
    } else {
      result = checkpoint.status();
    }
  }
  backup_mu_.Unlock();
  if (!result.ok()) return result;
  response->set_directory(dir);
  response->set_sequence_number(sequence);
  response->set_bytes(TreeBytes(dir));
  response->set_includes_url_bloom(url_bloom_ != nullptr);
  *response->mutable_took() = ToDuration(absl::Now() - start);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ExportCursor>> AdminOps::StartExport(
    const v1::ExportRequest& request) const {
  if (store_ == nullptr) return RedisExportUnimplemented(redis_->key_prefix());
  return store_->NewExport(!request.skip_urls(), !request.skip_content());
}

absl::Status AdminOps::NextExport(ExportCursor* cursor, v1::ExportResponse* response, bool* done) {
  response->Clear();
  std::vector<ExportedRecord> records;
  DEDUPD_RETURN_IF_ERROR(cursor->Next(kExportMessageBytes, &records, done));
  for (ExportedRecord& r : records) {
    v1::ExportRecord* out = response->add_records();
    switch (r.kind) {
      case ExportedRecord::Kind::kUrl: {
        v1::ExportedUrl* u = out->mutable_url();
        u->set_url(std::move(r.url));
        *u->mutable_first_seen() = ToTimestamp(r.time);
        break;
      }
      case ExportedRecord::Kind::kContent: {
        v1::ExportedContent* c = out->mutable_content();
        c->set_content_hash(Sha256Hex(r.sha256));
        if (IsDocumentIdKey(r.url)) {
          c->set_owner_document_id(std::string(DocumentIdOfKey(r.url)));
        } else {
          c->set_owner_url(std::move(r.url));
        }
        *c->mutable_first_seen() = ToTimestamp(r.time);
        c->set_simhash_hex(absl::StrFormat("%016x", r.simhash));
        c->set_alias_count(r.alias_count);
        break;
      }
      case ExportedRecord::Kind::kAlias: {
        v1::ExportedAlias* a = out->mutable_alias();
        a->set_content_hash(Sha256Hex(r.sha256));
        if (IsDocumentIdKey(r.url)) {
          a->set_document_id(std::string(DocumentIdOfKey(r.url)));
        } else {
          a->set_url(std::move(r.url));
        }
        *a->mutable_added() = ToTimestamp(r.time);
        break;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status AdminOps::Forget(const v1::ForgetRequest& request, v1::ForgetResponse* response,
                              const std::function<bool()>& cancelled) {
  response->Clear();
  const int n = request.urls_size();
  if (n == 0) return absl::InvalidArgumentError("urls is empty (want 1 to 100 URLs)");
  if (n > kMaxForgetUrls) {
    return absl::InvalidArgumentError(
        absl::StrCat("urls has ", n, " URLs, over the limit of ", kMaxForgetUrls,
                     " per Forget call (each URL is a scan of every content record); "
                     "split the batch"));
  }
  response->mutable_results()->Reserve(n);
  for (const std::string& url : request.urls()) {
    if (cancelled && cancelled()) {
      return absl::CancelledError(absl::StrCat("forget cancelled after ", response->results_size(),
                                               " of ", n, " URLs (those stay forgotten)"));
    }
    v1::ForgetResult* out = response->add_results();
    out->set_url(url);
    absl::StatusOr<std::string> normalized = normalizer_->Normalize(url);
    if (!normalized.ok()) {
      out->set_error(std::string(normalized.status().message()));
      continue;
    }
    out->set_normalized_url(*normalized);
    absl::StatusOr<ForgetResult> forgotten = content_->Forget(*normalized, absl::Now());
    if (!forgotten.ok()) {
      return absl::Status(forgotten.status().code(),
                          absl::StrCat("forget ", *normalized, ": ", forgotten.status().message()));
    }
    const ForgetResult& r = *forgotten;
    out->set_found(r.found());
    out->set_url_removed(r.url_found);
    out->set_fetch_removed(r.fetch_removed);
    out->set_aliases_removed(r.aliases_removed);
    out->set_contents_removed(r.contents_removed);
    for (const ForgetResult::ContentPromotion& p : r.contents_promoted) {
      v1::ContentPromotion* c = out->add_contents_promoted();
      c->set_content_hash(Sha256Hex(p.sha256));
      c->set_new_owner_url(p.new_owner_url);
    }
    out->set_chunk_manifest_removed(r.chunk_manifest_removed);
    out->set_chunk_holders_removed(r.chunk_holders_removed);
    out->set_chunk_texts_removed(r.chunk_texts_removed);
    for (const ForgetResult::ChunkPromotion& p : r.chunk_owners_promoted) {
      v1::ChunkPromotion* c = out->add_chunk_owners_promoted();
      c->set_chunk_hash(Sha256Hex(p.sha256));
      c->set_new_owner_document_url(p.new_owner_document_url);
      c->set_new_owner_chunk_id(p.new_owner_chunk_id);
    }
    if (url_bloom_ != nullptr) {
      // The Bloom seen-set cannot delete: say what CheckUrl will answer.
      std::vector<std::optional<absl::Time>> seen;
      const absl::Status looked = url_bloom_->LookupUrls({*normalized}, &seen);
      if (!looked.ok()) {
        return absl::Status(
            looked.code(),
            absl::StrCat("forget ", *normalized, ": approximate seen-set: ", looked.message()));
      }
      out->set_url_stays_seen_probably(!seen.empty() && seen[0].has_value());
    }
  }
  return absl::OkStatus();
}

absl::Status RestoreBackup(const std::string& backup_dir, const std::string& data_dir) {
  if (backup_dir.empty() || data_dir.empty()) {
    return absl::InvalidArgumentError(
        "restore: --restore_from and --data_dir must both be non-empty");
  }
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(backup_dir) / "CURRENT", ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("restore from ", backup_dir,
                     ": not a dedupd backup (no RocksDB CURRENT file; make one with "
                     "`dedupctl admin backup DIR`)"));
  }
  // "/data/" and "/data" are one directory: without the trailing
  // separator the temporary copy is a sibling ("/data.restore-tmp"), not a
  // child ("/data/.restore-tmp") that the rename could never move.
  fs::path target = fs::path(data_dir).lexically_normal();
  if (!target.has_filename() && target.has_parent_path() && target != target.root_path()) {
    target = target.parent_path();
  }
  const fs::file_status target_status = fs::status(target, ec);
  if (fs::exists(target_status)) {
    if (!fs::is_directory(target_status)) {
      return absl::FailedPreconditionError(
          absl::StrCat("restore into ", data_dir, ": exists and is not a directory"));
    }
    if (!fs::is_empty(target, ec) || ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("restore into ", data_dir,
                       ": the data directory is not empty; restore only into an empty or "
                       "new --data_dir (move the old one away first)"));
    }
  }
  const fs::path temp = fs::path(target.string() + ".restore-tmp");
  if (fs::exists(temp, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("restore into ", data_dir, ": ", temp.string(),
                     " exists (left by an interrupted restore?); remove it and retry"));
  }
  fs::copy(backup_dir, temp, fs::copy_options::recursive, ec);
  if (ec) {
    absl::Status s = FsError(ec, absl::StrCat("restore: copy ", backup_dir, " to"), temp.string());
    std::error_code cleanup;
    fs::remove_all(temp, cleanup);
    return s;
  }
  if (absl::Status synced = SyncTree(temp); !synced.ok()) {
    std::error_code cleanup;
    fs::remove_all(temp, cleanup);
    return synced;
  }
  // rename(2) replaces an empty target directory atomically: the data
  // directory never disappears, even when the rename fails.
  fs::rename(temp, target, ec);
  if (ec) return FsError(ec, absl::StrCat("restore: rename ", temp.string(), " to"), data_dir);
  // The rename itself: durable once the parent directory is synced.
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  return file_io::SyncDir(parent.string());
}

absl::Status AdminOps::DropNamespace(const v1::DropNamespaceRequest& request,
                                     v1::DropNamespaceResponse* response,
                                     const std::function<bool()>& cancelled) {
  if (redis_ != nullptr) {
    redis::NamespaceDropOptions options;
    options.cancelled = cancelled;
    absl::StatusOr<redis::NamespaceDropResult> dropped = redis::DropNamespace(
        &redis_->router(), redis_->key_prefix(), request.namespace_(), options);
    if (!dropped.ok()) return dropped.status();
    response->set_found(dropped->keys_deleted > 0);
    return absl::OkStatus();
  }
  if (url_bloom_ != nullptr) {
    return absl::FailedPreconditionError(
        "this server is in the approximate URL mode (--url_seen_mode=approximate): its Bloom "
        "seen-set cannot delete a namespace's URLs");
  }
  absl::StatusOr<bool> found = store_->DropNamespace(request.namespace_());
  if (!found.ok()) return found.status();
  response->set_found(*found);
  return absl::OkStatus();
}

}  // namespace dedupd
