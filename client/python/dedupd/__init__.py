"""dedupd: the Python client of the dedupd deduplication service.

    import dedupd
    client = dedupd.Client("127.0.0.1:50051", namespace="my-crawl")
    client.check_urls([...])          # claim links before fetching
    client.check_content([...])       # exact / near duplicate pages after extraction
    client.check_chunks([...], document_id="s3://b/k")   # before embedding
    client.dedup_results([...])       # after retrieval, before the LLM

dedupd.aio.Client is the asyncio twin; dedupd.ingest helps RAG pipelines;
dedupd.scrapy plugs into Scrapy. Results are dataclasses (dedupd.types),
errors subclasses of dedupd.DedupdError (dedupd.errors).
"""
from dedupd._core import TLS, read_token_file
from dedupd.client import Client
from dedupd.errors import (Cancelled, DeadlineExceeded, DedupdError, FailedPrecondition,
                           InvalidRequest, PermissionDenied, ResourceExhausted, ServerError,
                           Unauthenticated, Unavailable, Unimplemented)
from dedupd.types import *  # noqa: F401,F403
from dedupd import types as _types

__version__ = "0.1.0"
__all__ = [
    "Client", "TLS", "read_token_file", "DedupdError", "InvalidRequest", "Unauthenticated",
    "PermissionDenied", "Unavailable", "DeadlineExceeded", "ResourceExhausted",
    "FailedPrecondition", "Unimplemented", "Cancelled", "ServerError",
] + list(_types.__all__)
from dedupd import aio  # noqa: E402,F401  (dedupd.aio.Client)
