#include "storage/content_store.h"

#include "absl/strings/str_cat.h"
#include "storage/url_store.h"

namespace dedupd {

absl::Status CheckContentDocs(absl::Span<const ContentDoc> docs, int max_near_distance) {
  for (size_t i = 0; i < docs.size(); ++i) {
    const ContentDoc& d = docs[i];
    absl::string_view problem;
    if (absl::Status ns = CheckNamespace(d.name_space); !ns.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("doc ", i, " of the batch: ", ns.message()));
    }
    if (d.name_space != docs[0].name_space) {
      return absl::InvalidArgumentError(
          absl::StrCat("doc ", i, " of the batch: namespace \"", d.name_space,
                       "\" is not doc 0's \"", docs[0].name_space, "\" (one namespace per batch)"));
    }
    if (d.identity_url.empty()) {
      problem = "identity_url is empty";
    } else if (d.fetched_url.empty()) {
      problem = "fetched_url is empty";
    } else if (d.etag.size() > kMaxValidatorBytes || d.last_modified.size() > kMaxValidatorBytes) {
      problem = "a validator (etag, last_modified) is over kMaxValidatorBytes";
    } else if (d.max_distance < 0 || d.max_distance > max_near_distance) {
      return absl::InvalidArgumentError(absl::StrCat("doc ", i, " of the batch: max_distance ",
                                                     d.max_distance, " is outside [0, ",
                                                     max_near_distance, "]"));
    } else if (!(d.min_jaccard >= 0 && d.min_jaccard <= 1)) {
      problem = "min_jaccard is outside [0, 1]";
    }
    if (!problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("doc ", i, " of the batch: ", problem));
    }
  }
  return absl::OkStatus();
}

}  // namespace dedupd
