"""Inputs and results of the dedupd client: plain dataclasses and str enums.

Every verdict is a `str` enum, so `result.verdict == "NEW"` works as well as
`result.verdict is UrlVerdict.NEW`. Times are timezone-aware UTC `datetime`s,
or None when the server left them unset. Strings are `str`; the client
encodes them to UTF-8 for the wire (a string that is not valid Unicode, e.g.
with lone surrogates from `surrogateescape`, reaches the server as invalid
UTF-8 and gets that item's INVALID result).
"""
import dataclasses
import enum
from datetime import datetime
from typing import List, Optional, Sequence

__all__ = [
    "UrlVerdict", "CompleteVerdict", "ContentVerdict", "ChunkVerdict", "RecrawlStatus",
    "DropReason", "DuplicateMeasure", "NearMeasure", "Url", "Document", "Chunk", "Hit", "UrlResult",
    "CompleteResult", "NearMatch", "ContentResult", "ChunkResult", "ChunksResult", "KeptHit",
    "DroppedHit", "RejectedHit", "DedupResultsResult", "NamespaceStats", "Stats",
]


class UrlVerdict(str, enum.Enum):
    """check_urls' answer for one URL."""
    NEW = "NEW"                      # not seen before: this caller owns it, fetch it
    SEEN = "SEEN"                    # claimed before (first_seen): skip it
    DUE = "DUE"                      # seen, but its revisit interval passed: fetch it again
    SEEN_PROBABLY = "SEEN_PROBABLY"  # approximate mode: probably seen: skip it
    INVALID = "INVALID"              # not answered: a bad URL, or STORE_UNAVAILABLE (error_reason)
    UNSPECIFIED = "UNSPECIFIED"


class CompleteVerdict(str, enum.Enum):
    CONFIRMED = "CONFIRMED"                  # the lease was pending and is now confirmed
    ALREADY_CONFIRMED = "ALREADY_CONFIRMED"  # no lease pending (confirmed before, or none)
    INVALID = "INVALID"                      # NOT_CLAIMED, LEASE_LOST, a bad URL, STORE_UNAVAILABLE
    UNSPECIFIED = "UNSPECIFIED"


class ContentVerdict(str, enum.Enum):
    NEW = "NEW"                          # no equal or near text stored
    EXACT_DUPLICATE = "EXACT_DUPLICATE"  # the same normalized text: owner_url has it
    NEAR_DUPLICATE = "NEAR_DUPLICATE"    # a near text (distance or Jaccard): near_matches
    INVALID = "INVALID"
    UNSPECIFIED = "UNSPECIFIED"


class ChunkVerdict(str, enum.Enum):
    NEW = "NEW"
    EXACT_DUPLICATE = "EXACT_DUPLICATE"
    NEAR_DUPLICATE = "NEAR_DUPLICATE"
    INVALID = "INVALID"
    UNSPECIFIED = "UNSPECIFIED"


class RecrawlStatus(str, enum.Enum):
    FIRST_SEEN = "FIRST_SEEN"  # no earlier fetch of this URL
    UNCHANGED = "UNCHANGED"    # the last fetch had the same text
    CHANGED = "CHANGED"        # the last fetch had another text
    UNSPECIFIED = "UNSPECIFIED"


class DropReason(str, enum.Enum):
    DUPLICATE = "DUPLICATE"
    SOURCE_CAP = "SOURCE_CAP"
    UNSPECIFIED = "UNSPECIFIED"


class DuplicateMeasure(str, enum.Enum):
    EXACT_TEXT = "EXACT_TEXT"
    SIMHASH = "SIMHASH"
    JACCARD = "JACCARD"
    COSINE = "COSINE"
    UNSPECIFIED = "UNSPECIFIED"


class NearMeasure(str, enum.Enum):
    """Which measure found a near text (NearMatch.measure,
    ChunkResult.near_measure)."""
    SIMHASH = "SIMHASH"  # SimHash distance <= max_hamming_distance only
    JACCARD = "JACCARD"  # MinHash estimated Jaccard >= min_jaccard only
    BOTH = "BOTH"
    UNSPECIFIED = "UNSPECIFIED"


# ---- inputs ----

@dataclasses.dataclass
class Url:
    """A URL for check_urls / complete_urls: `url` as found, relative to
    `base_url` (the page it was on, or its <base href>) when it is relative.
    A plain str is the same as Url(url=that)."""
    url: str
    base_url: Optional[str] = None


@dataclasses.dataclass
class Document:
    """A fetched page (or a pipeline's document) for check_content.

    Exactly one identity: `url` (the fetched URL, optionally with the page's
    rel=canonical `canonical_url`, which then is the identity and `url` an
    alias), or `document_id` (the pipeline's own id, e.g. "s3://bucket/key",
    used as given). `text` is the extracted text, not HTML.
    A dict with these keys works as well."""
    text: str
    url: Optional[str] = None
    canonical_url: Optional[str] = None
    document_id: Optional[str] = None
    max_hamming_distance: Optional[int] = None  # default: the call's, else 3
    # Estimated 3-word-shingle Jaccard that also counts as near, in
    # [the server's --min_jaccard_floor (0.8), 1]; default: the call's, else
    # the server's (0.85). Out of range: this document's INVALID
    # (error_reason "BAD_MIN_JACCARD").
    min_jaccard: Optional[float] = None
    etag: Optional[str] = None                  # the response's ETag header
    last_modified: Optional[str] = None         # the response's Last-Modified header


@dataclasses.dataclass
class Chunk:
    """One chunk for check_chunks: its text and optional id (unique in its
    document; default: its index "0", "1", ...). A plain str, or a
    (chunk_id, text) tuple, works as well."""
    text: str
    chunk_id: Optional[str] = None


@dataclasses.dataclass
class Hit:
    """A retrieved hit for dedup_results (also accepted as a dict)."""
    id: str
    text: str
    score: float
    source_url: str = ""
    embedding: Optional[Sequence[float]] = None


# ---- results ----

@dataclasses.dataclass
class UrlResult:
    """check_urls' answer for one URL, in input order.

    `should_fetch` is True for NEW and DUE: this caller owns the URL now. With
    a lease (lease_seconds=) confirm it with complete_urls(..., claim_id=
    result.claim_id) after the fetch, or another worker gets it when the lease
    ends."""
    url: str                       # the URL as given
    normalized_url: str            # the key dedupd stores ("" when INVALID)
    verdict: UrlVerdict
    first_seen: Optional[datetime] = None
    last_claim: Optional[datetime] = None
    lease_expires: Optional[datetime] = None
    reclaimed: bool = False        # NEW again because an earlier lease ended unconfirmed
    claim_id: str = ""             # the id of the request that carried this URL
    error: str = ""                # INVALID: what is wrong
    error_reason: str = ""         # INVALID: "BAD_URL", or "STORE_UNAVAILABLE"
    last_changed: Optional[datetime] = None  # SEEN/DUE of a checked page
    content_hash: str = ""
    etag: str = ""
    last_modified: str = ""

    @property
    def should_fetch(self) -> bool:
        return self.verdict in (UrlVerdict.NEW, UrlVerdict.DUE)

    @property
    def store_unavailable(self) -> bool:
        """True when dedupd's store could not answer for this URL, even
        after the client's re-sends (a Redis node down): neither new nor
        seen nor a bad URL; send it again later."""
        return self.error_reason == "STORE_UNAVAILABLE"


@dataclasses.dataclass
class CompleteResult:
    url: str
    normalized_url: str
    verdict: CompleteVerdict
    error: str = ""
    error_reason: str = ""         # INVALID: "NOT_CLAIMED", "LEASE_LOST", "BAD_URL",
    #                                "STORE_UNAVAILABLE" (not confirmed: confirm it again)

    @property
    def store_unavailable(self) -> bool:
        """True when the store could not confirm this URL now."""
        return self.error_reason == "STORE_UNAVAILABLE"


@dataclasses.dataclass
class NearMatch:
    url: str                       # the owner's identity URL ("" for a document id)
    document_id: str
    simhash: int
    distance: int
    content_hash: str
    estimated_jaccard: float = 0.0  # MinHash estimate; 0 when MinHash was off for it
    measure: NearMeasure = NearMeasure.UNSPECIFIED  # which measure found it


@dataclasses.dataclass
class ContentResult:
    """check_content's answer for one document, in input order."""
    verdict: ContentVerdict
    url: str = ""                  # normalized fetched URL
    canonical_url: str = ""        # normalized identity URL
    document_id: str = ""
    content_hash: str = ""         # SHA-256 of the normalized text, hex
    simhash: int = 0
    owner_url: str = ""            # who owns the text (NEW: this document)
    owner_document_id: str = ""
    alias_urls: List[str] = dataclasses.field(default_factory=list)
    alias_document_ids: List[str] = dataclasses.field(default_factory=list)
    alias_count: int = 0
    near_matches: List[NearMatch] = dataclasses.field(default_factory=list)
    near_match_count: int = 0
    recrawl: RecrawlStatus = RecrawlStatus.UNSPECIFIED
    first_seen: Optional[datetime] = None
    error: str = ""
    error_reason: str = ""
    # The min_jaccard this document was checked with (its own, the call's or
    # the server's); 0: MinHash matching was off for it (the server's
    # default is 0, or the text has fewer than 8 words).
    applied_min_jaccard: float = 0.0

    @property
    def owner(self) -> str:
        """The URL or document id that owns the text."""
        return self.owner_url or self.owner_document_id


@dataclasses.dataclass
class ChunkResult:
    verdict: ChunkVerdict
    chunk_id: str
    content_hash: str = ""
    simhash: int = 0
    duplicate_of_document_url: str = ""
    duplicate_of_document_id: str = ""
    duplicate_of_chunk_id: str = ""
    distance: int = 0
    first_seen: Optional[datetime] = None
    other_holders: int = 0
    applied_max_hamming_distance: int = 0
    error: str = ""
    error_reason: str = ""
    # NEAR_DUPLICATE: the shingle Jaccard to the chunk duplicated (0 when
    # MinHash was off for this chunk) and which measure found it; exact
    # when both chunks kept their shingle sets (<= 256 shingles), else the
    # MinHash estimate.
    estimated_jaccard: float = 0.0
    near_measure: NearMeasure = NearMeasure.UNSPECIFIED
    # The min_jaccard used for this chunk; 0: MinHash off for it (a short
    # chunk, or the server's default is 0).
    applied_min_jaccard: float = 0.0

    @property
    def duplicate_of_document(self) -> str:
        """The URL or document id of the chunk this one duplicates."""
        return self.duplicate_of_document_url or self.duplicate_of_document_id


@dataclasses.dataclass
class ChunksResult:
    """check_chunks' answer for one document."""
    document_url: str              # normalized ("" when named by document_id)
    document_id: str
    chunks: List[ChunkResult]      # one per chunk, in input order
    replaced_chunks: int = 0       # stored chunks of the document this replaced
    removed_chunk_ids: List[str] = dataclasses.field(default_factory=list)  # delete their vectors


@dataclasses.dataclass
class KeptHit:
    index: int
    id: str
    score: float


@dataclasses.dataclass
class DroppedHit:
    index: int
    id: str
    reason: DropReason
    duplicate_of_index: int = 0
    duplicate_of: str = ""
    measure: DuplicateMeasure = DuplicateMeasure.UNSPECIFIED
    value: float = 0.0


@dataclasses.dataclass
class RejectedHit:
    index: int
    id: str
    error_reason: str
    error: str


@dataclasses.dataclass
class DedupResultsResult:
    kept: List[KeptHit]            # best score first
    dropped: List[DroppedHit]
    not_examined: List[int]
    rejected: List[RejectedHit]
    per_source_cap: int


@dataclasses.dataclass
class NamespaceStats:
    name: str
    estimated_bytes: int
    exact_url_count: Optional[int] = None


@dataclasses.dataclass
class Stats:
    """Admin stats (the main figures; `raw` holds every field as a dict)."""
    url_seen_mode: str
    storage_format_version: int
    estimated_url_records: int
    content_fingerprints_indexed: int
    chunk_fingerprints_indexed: int
    disk_bytes: int
    uptime_seconds: float
    namespaces: List[NamespaceStats]
    raw: dict
