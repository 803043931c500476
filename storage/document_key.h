// Document keys: how a document named by an opaque id (CheckContent's and
// CheckChunks' `document_id`, e.g. "s3://bucket/key" or a database id)
// shares the stores' key space with documents named by a normalized URL.
//
// A document key is either a normalized URL (it starts with its scheme, an
// ASCII letter) or the byte 0x01 followed by the document id as given. A
// normalized URL never holds a control byte, so the two never collide, and
// the stores, which treat a document key as opaque bytes, need no second
// key space. Document ids hold no NUL byte (the chunk holder key ends a
// document key with one: docs/storage_format.md).
//
// Example:
//   absl::Status s = CheckDocumentId(request.document_id());
//   std::string key = DocumentKeyOfId(request.document_id());  // "\x01s3://b/k"
//   if (IsDocumentIdKey(key)) reply.set_document_id(DocumentIdOfKey(key));

#ifndef DEDUPD_STORAGE_DOCUMENT_KEY_H_
#define DEDUPD_STORAGE_DOCUMENT_KEY_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dedupd {

// The longest document id accepted, in bytes.
inline constexpr size_t kMaxDocumentIdBytes = 1024;

// The first byte of a document key that holds a document id.
inline constexpr char kDocumentIdKeyTag = '\x01';

// CheckDocumentId returns OK for 1 to kMaxDocumentIdBytes bytes of UTF-8
// without a NUL byte, else InvalidArgument naming the problem and the
// limit ("document_id: is 2000 bytes; the limit is 1024").
absl::Status CheckDocumentId(absl::string_view document_id);

// DocumentKeyOfId returns the document key of a document id.
// REQUIRES: CheckDocumentId(document_id).ok().
std::string DocumentKeyOfId(absl::string_view document_id);

// IsDocumentIdKey tells whether a document key holds a document id (and
// not a URL).
inline bool IsDocumentIdKey(absl::string_view key) {
  return !key.empty() && key[0] == kDocumentIdKeyTag;
}

// DocumentIdOfKey returns the document id a key holds, a view into `key`.
// REQUIRES: IsDocumentIdKey(key).
inline absl::string_view DocumentIdOfKey(absl::string_view key) { return key.substr(1); }

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_DOCUMENT_KEY_H_
