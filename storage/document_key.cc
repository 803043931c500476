#include "storage/document_key.h"

#include "absl/strings/str_cat.h"
#include "core/text/utf8.h"

namespace dedupd {

absl::Status CheckDocumentId(absl::string_view document_id) {
  if (document_id.empty()) return absl::InvalidArgumentError("document_id: is empty");
  if (document_id.size() > kMaxDocumentIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("document_id: is ", document_id.size(),
                                                   " bytes; the limit is ", kMaxDocumentIdBytes));
  }
  if (const size_t nul = document_id.find('\0'); nul != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("document_id: byte ", nul, " is NUL (not allowed in a document id)"));
  }
  if (!IsValidUtf8(document_id)) {
    return absl::InvalidArgumentError("document_id: is not valid UTF-8");
  }
  return absl::OkStatus();
}

std::string DocumentKeyOfId(absl::string_view document_id) {
  return absl::StrCat(absl::string_view(&kDocumentIdKeyTag, 1), document_id);
}

}  // namespace dedupd
