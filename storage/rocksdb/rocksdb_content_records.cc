// RocksDbStore: the content layer (CheckContent) and its planner's reader.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

// The planner's view of the store: reads of one snapshot, taken after the
// batch's claim locks (when claiming), so it holds every write of the calls
// that held them before. Nothing else writes the locked keys (content,
// fetch and URL records) while the batch runs; the snapshot also keeps the
// records of *other* texts that a near match resolves (fingerprint, content
// record) consistent while Forget deletes texts. The index is not part of
// the snapshot: QueryNear drops the matches whose fingerprint record the
// snapshot lacks (texts written after it, or deleted by a Forget that has
// not updated the index yet), as ChunkReader does.
class RocksDbStore::ContentReader final : public ContentStateReader {
 public:
  // `space`: the batch's namespace; it must outlive the reader.
  ContentReader(Impl* impl, rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                const Impl::SpaceView* space)
      : impl_(impl),
        space_(space),
        urls_family_(db->DefaultColumnFamily()),
        reads_(db, impl->content_cf, snapshot, kAction, impl->options.path) {}

  absl::StatusOr<std::optional<ContentRecord>> GetContent(const Sha256Digest& sha) override {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found,
                            reads_.Get(space_->Key(fmt::EncodeContentKey(sha)), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<ContentRecord> v = fmt::DecodeContentValue(value);
    if (!v.ok()) {
      return reads_.Damaged("content record of text " + Sha256Hex(sha), v.status());
    }
    return *std::move(v);
  }
  absl::StatusOr<bool> HasAlias(const Sha256Digest& sha, absl::string_view url) override {
    std::string value;
    return reads_.Get(space_->Key(fmt::EncodeAliasKey(sha, url)), &value);
  }
  absl::StatusOr<std::vector<std::string>> ListAliases(const Sha256Digest& sha,
                                                       size_t limit) override {
    std::vector<std::string> out;
    const std::string prefix = space_->Key(fmt::EncodeAliasPrefix(sha));
    std::unique_ptr<rocksdb::Iterator> it = reads_.NewIterator(/*upper=*/nullptr);
    for (it->Seek(prefix); it->Valid() && out.size() < limit; it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      if (!absl::StartsWith(key, prefix)) break;
      absl::StatusOr<absl::string_view> url = fmt::DecodeAliasKeyUrl(space_->Unscoped(key));
      if (!url.ok()) {
        return reads_.Damaged("alias list of text " + Sha256Hex(sha), url.status());
      }
      out.emplace_back(*url);
    }
    if (!it->status().ok()) return reads_.Failed(it->status());
    return out;
  }
  absl::StatusOr<std::optional<FetchRecord>> GetFetch(absl::string_view url) override {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found, reads_.Get(space_->Key(fmt::EncodeFetchKey(url)), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<FetchRecord> v = fmt::DecodeFetchValue(value);
    if (!v.ok()) {
      return reads_.Damaged(absl::StrCat("fetch record of \"", PrintableKey(url), "\""),
                            v.status());
    }
    return *v;
  }
  absl::StatusOr<bool> HasUrl(absl::string_view url) override {
    std::string value;
    return reads_.Get(space_->Key(fmt::EncodeUrlKey(url)), &value, urls_family_);
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override {
    if (space_->index() == nullptr) {
      if (total != nullptr) *total = 0;
      return {};
    }
    return reads_.KeepInSnapshot(
        space_->index()->Query(simhash, max_distance, limit, total),
        [this](uint32_t id) { return ReadFingerprint(id); }, total);
  }
  // The LSH candidates whose fingerprint record the snapshot holds (as
  // QueryNear keeps its matches).
  std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                               double min_jaccard) override {
    if (space_->near() == nullptr) return {};
    return reads_.KeepIdsInSnapshot(space_->near()->Query(sig, min_jaccard),
                                    [this](uint32_t id) { return ReadFingerprint(id); });
  }
  absl::StatusOr<FingerprintRecord> GetFingerprint(uint32_t doc_id) override {
    return reads_.CachedFingerprint(
        doc_id, [this](uint32_t id) { return ReadFingerprint(id); }, "index entry",
        "fingerprint record");
  }
  absl::StatusOr<uint32_t> AllocateDocId() override {
    return impl_->AllocateIndexId(&impl_->next_doc_id, kAction, "text");
  }

 private:
  static constexpr absl::string_view kAction = "check content in store";

  absl::StatusOr<std::optional<FingerprintRecord>> ReadFingerprint(uint32_t doc_id) {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found,
                            reads_.Get(space_->Key(fmt::EncodeFingerprintKey(doc_id)), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<FingerprintRecord> v = fmt::DecodeFingerprintValue(value);
    if (!v.ok()) return reads_.Damaged(absl::StrCat("fingerprint ", doc_id), v.status());
    return *v;
  }

  Impl* const impl_;
  const Impl::SpaceView* const space_;
  rocksdb::ColumnFamilyHandle* const urls_family_;
  SnapshotReads reads_;
};

absl::Status RocksDbStore::CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                                        const ContentLimits& limits, absl::Time now,
                                        std::vector<ContentOutcome>* outcomes) {
  constexpr absl::string_view kAction = "check content in store";
  outcomes->clear();
  if (docs.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckContentDocs(docs, max_near_distance()));

  // The keys a claim reads and writes, locked for the whole batch: the
  // texts' content records (first writer wins, alias counts), the fetched
  // URLs' fetch records, and both URLs' seen-set records (the same locks
  // ClaimUrls takes, so exactly one of a content claim and a URL claim
  // records a URL). Alias records change only under their text's lock.
  // Every key in the batch's namespace (CheckContentDocs: one per batch).
  const std::string& name_space = docs[0].name_space;
  const std::string prefix = name_space.empty() ? "" : fmt::NamespacePrefix(name_space);
  std::vector<std::string> keys;
  std::vector<absl::string_view> locked;
  if (claim) {
    keys.reserve(docs.size() * 4);
    for (const ContentDoc& d : docs) {
      keys.push_back(prefix + fmt::EncodeContentKey(d.sha256));
      keys.push_back(prefix + fmt::EncodeFetchKey(d.fetched_url));
      keys.push_back(prefix + fmt::EncodeUrlKey(d.identity_url));
      keys.push_back(prefix + fmt::EncodeUrlKey(d.fetched_url));
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    locked.assign(keys.begin(), keys.end());
  }

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  const Impl::SpaceView space(impl_.get(), name_space, /*create=*/claim);
  const KeyLocks locks(&impl_->key_locks, std::move(locked));
  // After the locks: see ContentReader.
  rocksdb::ManagedSnapshot snapshot(db);
  ContentReader reader(impl_.get(), db, snapshot.snapshot(), &space);
  ContentPlan plan;
  DEDUPD_RETURN_IF_ERROR(PlanContentBatch(docs, claim, limits, now, &reader, &plan));
  const ContentMutations& m = plan.mutations;
  if (claim && !m.empty()) {
    rocksdb::WriteBatch batch;
    rocksdb::Status s;
    auto put = [&](const std::string& k, const std::string& v) {
      if (s.ok()) s = batch.Put(impl_->content_cf, k, v);
    };
    for (const auto& [sha, r] : m.contents) {
      put(prefix + fmt::EncodeContentKey(sha), fmt::EncodeContentValue(r));
    }
    for (const ContentMutations::Alias& a : m.aliases) {
      put(prefix + fmt::EncodeAliasKey(a.sha256, a.url), fmt::EncodeAliasValue(a.added));
    }
    for (const auto& [url, f] : m.fetches) {
      put(prefix + fmt::EncodeFetchKey(url), fmt::EncodeFetchValue(f));
    }
    for (const auto& [url, t] : m.urls) {
      if (s.ok()) s = batch.Put(prefix + fmt::EncodeUrlKey(url), fmt::EncodeUrlValue(t));
    }
    for (const auto& [id, fp] : m.fingerprints) {
      put(prefix + fmt::EncodeFingerprintKey(id), fmt::EncodeFingerprintValue(fp));
    }
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
    s = db->Write(impl_->write_options, &batch);
    if (!s.ok()) return impl_->WriteFailed(s, kAction);
    // Only after the write: the index never names a text the store lacks.
    std::vector<LshIndex::Entry> signed_texts;
    for (const auto& [id, fp] : m.fingerprints) {
      space.index()->Insert(fp.simhash, id);
      if (fp.minhash.has_value()) signed_texts.push_back({*fp.minhash, id});
    }
    space.near()->Insert(signed_texts);  // one lock for the batch
    // The URL records, to the URL filter while their claim locks are held
    // (as ClaimUrls does).
    if (!m.urls.empty()) {
      std::vector<uint64_t> url_hashes;
      url_hashes.reserve(m.urls.size());
      for (const auto& [url, t] : m.urls) {
        url_hashes.push_back(UrlFilterFront::KeyHash(prefix + fmt::EncodeUrlKey(url)));
      }
      impl_->url_front->Inserted(url_hashes);
    }
  }
  *outcomes = std::move(plan.outcomes);
  return absl::OkStatus();
}

int RocksDbStore::max_near_distance() const { return impl_->options.simhash_max_distance; }

absl::Status RocksDbStore::LookupFetches(absl::string_view name_space,
                                         absl::Span<const std::string> urls,
                                         std::vector<std::optional<FetchRecord>>* fetches) {
  constexpr absl::string_view kAction = "look up fetch records in store";
  fetches->assign(urls.size(), std::nullopt);
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(name_space));
  if (urls.empty()) return absl::OkStatus();
  const std::string prefix = name_space.empty() ? "" : fmt::NamespacePrefix(name_space);
  std::vector<std::string> keys;
  keys.reserve(urls.size());
  for (const std::string& url : urls) keys.push_back(prefix + fmt::EncodeFetchKey(url));
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  db->MultiGet(rocksdb::ReadOptions(), impl_->content_cf, keys.size(), slices.data(), values.data(),
               statuses.data());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return FromRocksDbStatus(statuses[i], kAction, impl_->options.path);
    absl::StatusOr<FetchRecord> v =
        fmt::DecodeFetchValue(absl::string_view(values[i].data(), values[i].size()));
    if (!v.ok()) {
      return absl::DataLossError(absl::StrCat(kAction, " at ", impl_->options.path,
                                              ": fetch record of \"", PrintableKey(urls[i]),
                                              "\": ", v.status().message()));
    }
    (*fetches)[i] = *std::move(v);
  }
  return absl::OkStatus();
}

}  // namespace dedupd
