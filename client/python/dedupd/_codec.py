"""Conversions between Python values and the generated dedupd.v1 messages.
Pure functions, shared by the sync and the asyncio client."""
from datetime import datetime, timedelta, timezone

from google.protobuf import json_format

from dedupd import types as t
from dedupd.v1 import admin_pb2, dedupd_pb2 as pb


def to_bytes(value):
    """str -> UTF-8 bytes for a `bytes` field. A str that is not valid
    Unicode (lone surrogates) is still sent, as the bytes it stands for
    (surrogateescape) or as CESU-like bytes: the server then answers that
    item INVALID (invalid UTF-8) instead of the whole call failing here.
    None -> b"" (the server's "empty" error, per item)."""
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if not isinstance(value, str):
        raise TypeError("expected str or bytes, got %s" % type(value).__name__)
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")


def to_str(value):
    """The input as a str for results (bytes decoded with replacement)."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return value


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _time(msg, field):
    if not msg.HasField(field):
        return None
    ts = getattr(msg, field)
    return _EPOCH + timedelta(seconds=ts.seconds, microseconds=ts.nanos // 1000)


_ENUM_CACHE = {}


def _enum(enum_cls, proto_enum, prefix, value):
    # A dict per enum: this runs once per result (the hot path of check_urls).
    table = _ENUM_CACHE.get(enum_cls)
    if table is None:
        table = {}
        for name, number in proto_enum.items():
            try:
                table[number] = enum_cls(name[len(prefix):])
            except ValueError:
                table[number] = enum_cls.UNSPECIFIED
        _ENUM_CACHE[enum_cls] = table
    return table.get(value, enum_cls.UNSPECIFIED)


def _measure(value):
    return _enum(t.NearMeasure, pb.NearMeasure, "NEAR_MEASURE_", value)


def _reason(value):
    if not value:
        return ""
    try:
        return pb.ErrorReason.Name(value)[len("ERROR_REASON_"):]
    except ValueError:
        return str(value)


def has_field(message_cls, name):
    return name in message_cls.DESCRIPTOR.fields_by_name


def set_claim_id(request, claim_id):
    """Sets `claim_id` on a request whose message has the field (bytes or
    string); returns whether it did (older protos lack it on some calls)."""
    field = request.DESCRIPTOR.fields_by_name.get("claim_id")
    if field is None:
        return False
    if field.type == field.TYPE_BYTES:
        setattr(request, "claim_id", claim_id.encode("ascii"))
    else:
        setattr(request, "claim_id", claim_id)
    return True


# ---- URLs ----

def url_item(value, base_url=None):
    """A pb.UrlItem from a str, bytes, (url, base_url) tuple, t.Url or dict."""
    item = pb.UrlItem()
    if isinstance(value, t.Url):
        url, base = value.url, value.base_url
    elif isinstance(value, dict):
        url, base = value.get("url"), value.get("base_url")
    elif isinstance(value, tuple):
        url, base = value[0], value[1] if len(value) > 1 else None
    else:
        url, base = value, None
    if base is None:
        base = base_url
    item.url = to_bytes(url)
    if base is not None:
        item.base_url = to_bytes(base)
    return item


def url_result(given, r, claim_id):
    verdict = _enum(t.UrlVerdict, pb.UrlVerdict, "URL_VERDICT_", r.verdict)
    return t.UrlResult(
        url=given, normalized_url=r.normalized_url, verdict=verdict,
        first_seen=_time(r, "first_seen_time"), last_claim=_time(r, "last_claim_time"),
        lease_expires=_time(r, "lease_expire_time"), reclaimed=r.reclaimed,
        claim_id=claim_id if verdict in (t.UrlVerdict.NEW, t.UrlVerdict.DUE) else "",
        error=r.error, error_reason=_reason(r.error_reason),
        last_changed=_time(r, "last_changed_time"), content_hash=r.content_hash, etag=r.etag,
        last_modified=r.last_modified)


def complete_result(given, r):
    return t.CompleteResult(
        url=given, normalized_url=r.normalized_url,
        verdict=_enum(t.CompleteVerdict, pb.CompleteVerdict, "COMPLETE_VERDICT_", r.verdict),
        error=r.error, error_reason=_reason(r.error_reason))


# ---- content ----

def content_item(doc, default_distance=None, default_min_jaccard=None):
    if isinstance(doc, dict):
        doc = t.Document(**doc)
    elif not isinstance(doc, t.Document):
        raise TypeError("check_content takes Document or dict items, got %s"
                        % type(doc).__name__)
    item = pb.ContentItem(text=to_bytes(doc.text))
    if doc.url is not None:
        item.url = to_bytes(doc.url)
    if doc.canonical_url:
        item.canonical_url = to_bytes(doc.canonical_url)
    if doc.document_id is not None:
        item.document_id = to_bytes(doc.document_id)
    distance = doc.max_hamming_distance if doc.max_hamming_distance is not None \
        else default_distance
    if distance is not None:
        item.max_hamming_distance = distance
    min_jaccard = doc.min_jaccard if doc.min_jaccard is not None else default_min_jaccard
    if min_jaccard is not None:
        item.min_jaccard = min_jaccard
    if doc.etag:
        item.etag = to_bytes(doc.etag)
    if doc.last_modified:
        item.last_modified = to_bytes(doc.last_modified)
    return item


def content_result(r):
    return t.ContentResult(
        verdict=_enum(t.ContentVerdict, pb.ContentVerdict, "CONTENT_VERDICT_", r.verdict),
        url=r.url, canonical_url=r.canonical_url, document_id=r.document_id,
        content_hash=r.content_hash, simhash=r.simhash, owner_url=r.owner_url,
        owner_document_id=r.owner_document_id, alias_urls=list(r.alias_urls),
        alias_document_ids=list(r.alias_document_ids), alias_count=r.alias_count,
        near_matches=[t.NearMatch(url=m.url, document_id=m.document_id, simhash=m.simhash,
                                  distance=m.distance, content_hash=m.content_hash,
                                  estimated_jaccard=m.estimated_jaccard,
                                  measure=_measure(m.measure))
                      for m in r.near_matches],
        near_match_count=r.near_match_count,
        recrawl=_enum(t.RecrawlStatus, pb.RecrawlStatus, "RECRAWL_STATUS_", r.recrawl),
        first_seen=_time(r, "first_seen_time"), error=r.error,
        error_reason=_reason(r.error_reason), applied_min_jaccard=r.applied_min_jaccard)


# ---- chunks ----

def chunk_item(chunk):
    if isinstance(chunk, t.Chunk):
        text, cid = chunk.text, chunk.chunk_id
    elif isinstance(chunk, dict):
        text, cid = chunk.get("text"), chunk.get("chunk_id")
    elif isinstance(chunk, tuple):
        cid, text = chunk
    else:
        text, cid = chunk, None
    item = pb.ChunkItem(text=to_bytes(text))
    if cid is not None:
        item.chunk_id = str(cid)
    return item


def chunks_result(resp):
    return t.ChunksResult(
        document_url=resp.document_url, document_id=resp.document_id,
        chunks=[t.ChunkResult(
            verdict=_enum(t.ChunkVerdict, pb.ChunkVerdict, "CHUNK_VERDICT_", r.verdict),
            chunk_id=r.chunk_id, content_hash=r.content_hash, simhash=r.simhash,
            duplicate_of_document_url=r.duplicate_of_document_url,
            duplicate_of_document_id=r.duplicate_of_document_id,
            duplicate_of_chunk_id=r.duplicate_of_chunk_id, distance=r.distance,
            first_seen=_time(r, "first_seen_time"), other_holders=r.other_holders,
            applied_max_hamming_distance=r.applied_max_hamming_distance, error=r.error,
            error_reason=_reason(r.error_reason), estimated_jaccard=r.estimated_jaccard,
            near_measure=_measure(r.near_measure), applied_min_jaccard=r.applied_min_jaccard)
            for r in resp.results],
        replaced_chunks=resp.replaced_chunks, removed_chunk_ids=list(resp.removed_chunk_ids))


# ---- results ----

def hit(h):
    if isinstance(h, dict):
        h = t.Hit(**h)
    msg = pb.ResultHit(id=h.id, text=to_bytes(h.text), score=float(h.score),
                       source_url=h.source_url or "")
    if h.embedding is not None:
        msg.embedding.extend(float(x) for x in h.embedding)
    return msg


def dedup_results_result(resp):
    return t.DedupResultsResult(
        kept=[t.KeptHit(index=k.index, id=k.id, score=k.score) for k in resp.kept],
        dropped=[t.DroppedHit(
            index=d.index, id=d.id,
            reason=_enum(t.DropReason, pb.DropReason, "DROP_REASON_", d.reason),
            duplicate_of_index=d.duplicate_of_index, duplicate_of=d.duplicate_of,
            measure=_enum(t.DuplicateMeasure, pb.DuplicateMeasure, "DUPLICATE_MEASURE_",
                          d.measure), value=d.value) for d in resp.dropped],
        not_examined=list(resp.not_examined),
        rejected=[t.RejectedHit(index=r.index, id=r.id, error_reason=_reason(r.error_reason),
                                error=r.error) for r in resp.rejected],
        per_source_cap=resp.per_source_cap)


def stats(resp):
    return t.Stats(
        url_seen_mode=resp.url_seen_mode, storage_format_version=resp.storage_format_version,
        estimated_url_records=resp.estimated_url_records,
        content_fingerprints_indexed=resp.content_fingerprints_indexed,
        chunk_fingerprints_indexed=resp.chunk_fingerprints_indexed, disk_bytes=resp.disk_bytes,
        uptime_seconds=resp.uptime.seconds + resp.uptime.nanos / 1e9,
        namespaces=[t.NamespaceStats(
            name=n.name, estimated_bytes=n.estimated_bytes,
            exact_url_count=n.exact_url_count if n.HasField("exact_url_count") else None)
            for n in resp.namespaces],
        raw=to_dict(resp))


def to_dict(message):
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


__all__ = ["admin_pb2", "pb"]
