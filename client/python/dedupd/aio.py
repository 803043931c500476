"""dedupd.aio.Client: the asyncio (grpc.aio) client. Same calls, settings,
results and errors as dedupd.Client, as coroutines.

Example:
    async with dedupd.aio.Client("127.0.0.1:50051") as c:
        results = await c.check_urls(links, base_url=page_url)
"""
import asyncio

import grpc
import grpc.aio

from dedupd import _core, errors
from dedupd.v1 import admin_pb2_grpc, dedupd_pb2_grpc

__all__ = ["Client"]


class Client:
    """See dedupd.Client for the settings. Use from one event loop."""

    def __init__(self, address="127.0.0.1:50051", **settings):
        self._s = _core.Settings(address, **settings)
        creds = self._s.credentials(grpc)
        if creds is None:
            self._channel = grpc.aio.insecure_channel(address, options=self._s.channel_options)
        else:
            self._channel = grpc.aio.secure_channel(address, creds,
                                                    options=self._s.channel_options)
        self._stubs = {"dedup": dedupd_pb2_grpc.DedupStub(self._channel),
                       "admin": admin_pb2_grpc.AdminStub(self._channel)}

    @property
    def namespace(self):
        return self._s.namespace

    async def close(self):
        await self._channel.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _invoke(self, call):
        service, attr = _core.METHODS[call.method]
        rpc = getattr(self._stubs[service], attr)
        attempt = 0
        while True:
            attempt += 1
            try:
                return await rpc(call.request, timeout=self._s.timeout,
                                 metadata=self._s.metadata(call.method))
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, call.method, attempt)
                if (isinstance(err, errors.Unavailable) and call.retry
                        and attempt < self._s.max_attempts):
                    await asyncio.sleep(self._s.backoff(attempt))
                    continue
                raise err from None

    async def _run(self, plan):
        try:
            call = next(plan)
            while True:
                if isinstance(call, _core._Sleep):
                    await asyncio.sleep(call.seconds)
                    call = plan.send(None)
                    continue
                try:
                    response = await self._invoke(call)
                except errors.DedupdError as e:
                    call = plan.throw(e)
                    continue
                call = plan.send(response)
        except StopIteration as done:
            return done.value

    async def check_urls(self, urls, *, base_url=None, peek=False, namespace=None,
                         lease_seconds=None, claim_id=None):
        return await self._run(self._s.plan_check_urls(urls, base_url, peek, namespace,
                                                       lease_seconds, claim_id))

    async def complete_urls(self, urls, *, namespace=None, claim_id=None):
        return await self._run(self._s.plan_complete_urls(urls, namespace, claim_id))

    async def check_content(self, documents, *, peek=False, namespace=None,
                            max_hamming_distance=None, claim_id=None, min_jaccard=None):
        return await self._run(self._s.plan_check_content(
            documents, peek, namespace, max_hamming_distance, claim_id, min_jaccard))

    async def check_chunks(self, chunks, *, document_url=None, document_id=None, peek=False,
                           namespace=None, max_hamming_distance=None, claim_id=None,
                           min_jaccard=None):
        return await self._run(self._s.plan_check_chunks(
            chunks, document_url, document_id, peek, namespace, max_hamming_distance, claim_id,
            min_jaccard))

    async def dedup_results(self, hits, *, top_k=None, measure=None, max_hamming_distance=None,
                            min_jaccard=None, min_cosine=None, per_source_cap=None):
        return await self._run(self._s.plan_dedup_results(
            hits, top_k, measure, max_hamming_distance, min_jaccard, min_cosine, per_source_cap))

    async def stats(self, *, exact=False):
        return await self._run(self._s.plan_stats(exact))

    async def drop_namespace(self, namespace):
        return await self._run(self._s.plan_drop_namespace(namespace))

    async def forget(self, urls):
        return await self._run(self._s.plan_forget(urls))

    async def backup(self, directory):
        return await self._run(self._s.plan_backup(directory))
