"""dedupd.ingest: chunk deduplication for RAG ingestion pipelines.

Call filter_chunks before embedding a document's chunks: embed only
`to_embed`, keep `duplicates` for provenance (which stored chunk each one
repeats), and delete the vectors of `removed_chunk_ids` (chunks an earlier
version of the document had and this one does not).

Example (LangChain, LlamaIndex or Haystack objects work as they are):
    from dedupd.ingest import filter_chunks
    to_embed, dups, removed = filter_chunks("s3://bucket/report.pdf", splitter.split_documents(docs))
    vectorstore.add_documents(to_embed); vectorstore.delete(ids=removed)

A chunk may be a str, a (chunk_id, text) tuple, a dedupd.Chunk, or any object
with its text in `.page_content` (LangChain), `.text` (LlamaIndex),
`.content` (Haystack), and optionally an id in `.chunk_id`, `.id_`/`.node_id`
(LlamaIndex) or `.id` (Haystack, LangChain); without an id a chunk is named
by its index ("0", "1", ...), so keep the order stable or give ids.
"""
import dataclasses
import os
import threading
from typing import Any, List, Optional

from dedupd.client import Client
from dedupd.types import Chunk, ChunkVerdict

__all__ = ["Duplicate", "filter_chunks", "default_client"]

_default = None
_default_lock = threading.Lock()


def default_client():
    """A Client for $DEDUPD_ADDRESS (default 127.0.0.1:50051) and
    $DEDUPD_NAMESPACE, made on first use and shared."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client(os.environ.get("DEDUPD_ADDRESS", "127.0.0.1:50051"),
                              namespace=os.environ.get("DEDUPD_NAMESPACE", ""),
                              token=os.environ.get("DEDUPD_TOKEN") or None)
        return _default


@dataclasses.dataclass
class Duplicate:
    """A chunk not to embed, and what it repeats."""
    chunk: Any                      # the caller's object, as given
    chunk_id: str
    near: bool                      # False: the same text; True: a near text
    duplicate_of_document: str      # the URL or document id holding the text
    duplicate_of_chunk_id: str
    distance: int
    estimated_jaccard: float = 0.0  # near: the MinHash estimate (0: MinHash off)
    near_measure: str = ""          # near: "SIMHASH", "JACCARD" or "BOTH"


def _text_and_id(chunk):
    if isinstance(chunk, str):
        return chunk, None
    if isinstance(chunk, tuple):
        return chunk[1], chunk[0]
    if isinstance(chunk, Chunk):
        return chunk.text, chunk.chunk_id
    if isinstance(chunk, dict):
        return chunk.get("text") or chunk.get("page_content") or chunk.get("content"), \
            chunk.get("chunk_id") or chunk.get("id")
    text = None
    for attr in ("page_content", "text", "content"):
        value = getattr(chunk, attr, None)
        if isinstance(value, str):
            text = value
            break
    if text is None:
        raise TypeError("filter_chunks: cannot find the text of a %s" % type(chunk).__name__)
    cid = None
    for attr in ("chunk_id", "id_", "node_id", "id"):
        value = getattr(chunk, attr, None)
        if isinstance(value, (str, int)) and value != "":
            cid = str(value)
            break
    return text, cid


def filter_chunks(document_id, chunks, *, client: Optional[Client] = None,
                  document_url: Optional[str] = None, namespace: Optional[str] = None,
                  drop_near: bool = True, max_hamming_distance: Optional[int] = None,
                  min_jaccard: Optional[float] = None):
    """Records `chunks` as the current version of a document and splits them.

    document_id: the pipeline's id of the document (used as given), or None
      with document_url= (a URL, normalized by dedupd) instead.
    drop_near: near duplicates (SimHash within the distance, or MinHash
      Jaccard at least min_jaccard) are left out of to_embed too; False
      keeps them (only exact repeats are dropped).
    max_hamming_distance, min_jaccard: the near thresholds (default: the
      server's, 3 and 0.8).
    Returns (to_embed, duplicates, removed_chunk_ids):
      to_embed           the chunks to embed and index, in order (objects as given);
      duplicates         [Duplicate] for the others, with their provenance;
      removed_chunk_ids  ids of the document's stored chunks this version no
                         longer has (delete their vectors).
    A chunk dedupd cannot check (empty text, invalid UTF-8) is kept in
    to_embed: dedupd never makes a pipeline lose text. Raises
    dedupd.DedupdError when the call fails (nothing was recorded then, or all
    was: calling again is safe)."""
    chunks = list(chunks)
    if not chunks:
        return [], [], []
    items = []
    for i, c in enumerate(chunks):
        text, cid = _text_and_id(c)
        items.append(Chunk(text=text, chunk_id=cid if cid is not None else str(i)))
    c = client or default_client()
    result = c.check_chunks(items, document_id=document_id if document_url is None else None,
                            document_url=document_url, namespace=namespace,
                            max_hamming_distance=max_hamming_distance,
                            min_jaccard=min_jaccard)
    to_embed: List[Any] = []
    duplicates: List[Duplicate] = []
    for original, r in zip(chunks, result.chunks):
        dup = r.verdict is ChunkVerdict.EXACT_DUPLICATE or (
            drop_near and r.verdict is ChunkVerdict.NEAR_DUPLICATE)
        if dup:
            duplicates.append(Duplicate(
                chunk=original, chunk_id=r.chunk_id,
                near=r.verdict is ChunkVerdict.NEAR_DUPLICATE,
                duplicate_of_document=r.duplicate_of_document,
                duplicate_of_chunk_id=r.duplicate_of_chunk_id, distance=r.distance,
                estimated_jaccard=r.estimated_jaccard,
                near_measure=r.near_measure.value if r.verdict is ChunkVerdict.NEAR_DUPLICATE
                else ""))
        else:
            to_embed.append(original)
    return to_embed, duplicates, list(result.removed_chunk_ids)
