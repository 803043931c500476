// forget_planner.h: what ContentStore::Forget decides, shared by every
// backend (as content_planner.h is for CheckContent). The backend finds the
// texts that name the forgotten URL and reads each one's record and alias
// list; PlanTextForget decides what becomes of it (the URL's alias record
// goes; a text it owned is deleted, or its oldest alias becomes the owner),
// and the backend writes the decisions atomically. For the URL's chunks,
// which a claim of the document with no chunks removes (PlanChunkDocument),
// PlanChunkOwnerPromotions names the texts whose owner changes.
//
// Example (inside a backend's Forget, with its locks held):
//   for (const Sha256Digest& sha : texts_naming_url) {
//     // read `record` and `aliases` of sha
//     const TextForgetPlan plan = PlanTextForget(url, record, aliases);
//     // delete/rewrite as `plan` says; plan.Count(&result)
//   }
//
// Thread safety: pure functions, except that PlanChunkOwnerPromotions
// calls its reader on the calling thread.
#ifndef DEDUPD_STORAGE_PLAN_FORGET_PLANNER_H_
#define DEDUPD_STORAGE_PLAN_FORGET_PLANNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage/content_store.h"
#include "storage/plan/chunk_planner.h"
#include "storage/plan/content_planner.h"

namespace dedupd {

// One alias record of a text: the URL and when it was added.
struct AliasRecord {
  std::string url;
  absl::Time added;
};

// What forgetting a URL does to one text that named it (as owner or alias).
struct TextForgetPlan {
  enum class Action {
    // Nothing names the URL any more (a stale hit of the backend's scan).
    kNone,
    // The URL was only an alias: the content record is rewritten with one
    // alias less (`record`).
    kDropAlias,
    // The URL owned the text and no alias is left: the content record, its
    // fingerprint record and its index entry are deleted.
    kDeleteText,
    // The URL owned the text: `new_owner`, its oldest alias (by time added,
    // then URL bytes), owns it now; that alias record is deleted and the
    // content record rewritten (`record`: same doc id, SimHash and first
    // seen; owner new_owner, alias count one less, no claim id hash: the
    // claim that recorded the text was the old owner's).
    kPromoteAlias,
  };
  Action action = Action::kNone;
  // The URL's own alias record of the text exists and is deleted (with any
  // action; with kDeleteText/kPromoteAlias only in a damaged store where
  // the owner is also an alias).
  bool remove_url_alias = false;
  // kDropAlias, kPromoteAlias: the content record to write.
  ContentRecord record;
  // kPromoteAlias: the alias that becomes the owner.
  std::string new_owner;

  // Count adds this plan to `result` (aliases_removed, contents_removed,
  // contents_promoted) for the text `sha256`.
  void Count(const Sha256Digest& sha256, ForgetResult* result) const;
};

// PlanTextForget decides what forgetting `url` does to the text whose
// content record is `record` and whose alias records are `aliases` (every
// one, in any order; the URL's own among them when it is an alias).
TextForgetPlan PlanTextForget(absl::string_view url, const ContentRecord& record,
                              absl::Span<const AliasRecord> aliases);

// PlanChunkOwnerPromotions returns, for the chunks of the document `url`
// (its stored `manifest`), the texts whose owner (oldest holder) is a chunk
// of the document while other chunks still hold them, with their next
// oldest holder: the owners a claim of the document with no chunks
// promotes. A text `reader` does not find is skipped (the chunk plan
// reports the damage). Errors: the reader's.
absl::StatusOr<std::vector<ForgetResult::ChunkPromotion>> PlanChunkOwnerPromotions(
    absl::string_view url, const ChunkManifest& manifest, ChunkStateReader* reader);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_PLAN_FORGET_PLANNER_H_
