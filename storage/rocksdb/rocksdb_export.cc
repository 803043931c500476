// RocksDbStore::NewExport: a cursor over one snapshot of the URL, content
// and alias records.

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

class RocksDbStore::ExportCursorImpl final : public ExportCursor {
 public:
  ExportCursorImpl(Impl* impl, const rocksdb::Snapshot* snapshot, bool urls, bool content)
      : impl_(impl), snapshot_(snapshot), urls_(urls), content_(content) {
    phase_ = urls_ ? Phase::kUrls : content_ ? Phase::kContent : Phase::kDone;
  }

  ~ExportCursorImpl() override {
    absl::ReaderMutexLock lifecycle(&impl_->mu);
    if (impl_->db == nullptr) return;  // Close released the snapshot
    absl::MutexLock exports(&impl_->export_mu);
    if (impl_->export_snapshots.erase(snapshot_) > 0) {
      impl_->db->ReleaseSnapshot(snapshot_);
    }
  }

  absl::Status Next(size_t max_bytes, std::vector<ExportedRecord>* out, bool* done) override {
    constexpr absl::string_view kAction = "export store";
    absl::ReaderMutexLock lifecycle(&impl_->mu);
    DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
    size_t bytes = 0;
    // Per record: its URL plus a fixed allowance for the other fields.
    auto full = [&] { return bytes >= max_bytes; };
    auto add = [&](ExportedRecord r) {
      bytes += r.url.size() + 64;
      out->push_back(std::move(r));
    };
    while (phase_ != Phase::kDone && !full()) {
      if (phase_ == Phase::kUrls) {
        DEDUPD_RETURN_IF_ERROR(
            Scan(db, db->DefaultColumnFamily(), std::string(1, fmt::kTagUrl), &url_resume_, full,
                 [&](absl::string_view key, absl::string_view value) -> absl::Status {
                   absl::StatusOr<absl::Time> t = fmt::DecodeUrlValue(value);
                   if (!t.ok()) return Damaged("URL", key, t.status());
                   ExportedRecord r;
                   r.kind = ExportedRecord::Kind::kUrl;
                   r.url = std::string(key.substr(1));
                   r.time = *t;
                   add(std::move(r));
                   return absl::OkStatus();
                 }));
        if (!full()) phase_ = content_ ? Phase::kContent : Phase::kDone;
        continue;
      }
      if (in_aliases_) {
        DEDUPD_RETURN_IF_ERROR(
            Scan(db, impl_->content_cf, fmt::EncodeAliasPrefix(current_sha_), &alias_resume_, full,
                 [&](absl::string_view key, absl::string_view value) -> absl::Status {
                   absl::StatusOr<absl::string_view> url = fmt::DecodeAliasKeyUrl(key);
                   absl::StatusOr<absl::Time> t = fmt::DecodeAliasValue(value);
                   if (!url.ok()) return Damaged("alias", key, url.status());
                   if (!t.ok()) return Damaged("alias", key, t.status());
                   ExportedRecord r;
                   r.kind = ExportedRecord::Kind::kAlias;
                   r.url = std::string(*url);
                   r.time = *t;
                   r.sha256 = current_sha_;
                   add(std::move(r));
                   return absl::OkStatus();
                 }));
        if (!full()) in_aliases_ = false;
        continue;
      }
      // The next content record after content_resume_, then its aliases.
      bool found = false;
      auto stop_after_one = [&] { return found; };
      DEDUPD_RETURN_IF_ERROR(
          Scan(db, impl_->content_cf, std::string(1, fmt::kTagContent), &content_resume_,
               stop_after_one, [&](absl::string_view key, absl::string_view value) -> absl::Status {
                 absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(value);
                 if (!v.ok()) return Damaged("content", key, v.status());
                 if (key.size() != 1 + current_sha_.size()) {
                   return Damaged("content", key, absl::DataLossError("key is not 02 + 32 bytes"));
                 }
                 std::copy(key.begin() + 1, key.end(), current_sha_.begin());
                 ExportedRecord r;
                 r.kind = ExportedRecord::Kind::kContent;
                 r.url = v->owner_url;
                 r.time = v->first_seen;
                 r.sha256 = current_sha_;
                 r.simhash = v->simhash;
                 r.alias_count = v->alias_count;
                 add(std::move(r));
                 found = true;
                 return absl::OkStatus();
               }));
      if (!found) {
        phase_ = Phase::kDone;
      } else {
        in_aliases_ = true;
        alias_resume_.clear();
      }
    }
    *done = phase_ == Phase::kDone;
    return absl::OkStatus();
  }

 private:
  enum class Phase { kUrls, kContent, kDone };

  absl::Status Damaged(absl::string_view what, absl::string_view key,
                       const absl::Status& cause) const {
    return absl::DataLossError(absl::StrCat("export store at ", impl_->options.path, ": ", what,
                                            " record with key \"", PrintableKey(key),
                                            "\": ", cause.message()));
  }

  // Scan visits the keys of `family` that start with `prefix` and come
  // after `*resume` (all of them when it is empty), in order, from the
  // cursor's snapshot, until `stop()` says so after a visit; `*resume` is
  // left at the last key visited.
  template <typename Stop, typename Visit>
  absl::Status Scan(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family, const std::string& prefix,
                    std::string* resume, const Stop& stop, const Visit& visit) {
    const std::string end = PrefixEnd(prefix);
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.snapshot = snapshot_;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family));
    if (resume->empty()) {
      it->Seek(prefix);
    } else {
      it->Seek(*resume);
      if (it->Valid() && it->key() == rocksdb::Slice(*resume)) it->Next();
    }
    for (; it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      DEDUPD_RETURN_IF_ERROR(visit(key, absl::string_view(it->value().data(), it->value().size())));
      resume->assign(key.data(), key.size());
      if (stop()) return absl::OkStatus();
    }
    if (!it->status().ok()) {
      return FromRocksDbStatus(it->status(), "export store", impl_->options.path);
    }
    return absl::OkStatus();
  }

  Impl* const impl_;
  const rocksdb::Snapshot* const snapshot_;
  const bool urls_;
  const bool content_;
  Phase phase_;
  std::string url_resume_;
  std::string content_resume_;
  bool in_aliases_ = false;
  Sha256Digest current_sha_{};
  std::string alias_resume_;
};

absl::StatusOr<std::unique_ptr<ExportCursor>> RocksDbStore::NewExport(bool urls, bool content) {
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb("export store"));
  const rocksdb::Snapshot* snapshot = db->GetSnapshot();
  {
    absl::MutexLock exports(&impl_->export_mu);
    impl_->export_snapshots.insert(snapshot);
  }
  return std::unique_ptr<ExportCursor>(new ExportCursorImpl(impl_.get(), snapshot, urls, content));
}

}  // namespace dedupd
