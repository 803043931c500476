"""Errors of the dedupd client: one class per thing the caller should do.

A bad *item* (an unparsable URL, empty text, invalid UTF-8) is never an
exception: it gets its own result with verdict INVALID and an error message.
Nor is a URL the store could not answer (a Redis Cluster node down) after
the client sent it again: INVALID with error_reason "STORE_UNAVAILABLE".
An exception means the *call* failed:

  DedupdError                 base class; `code` (grpc.StatusCode), `method`,
   |                          `details` (the server's message), `attempts`,
   |                          `partial_results` (see below), `retryable`
   +- InvalidRequest          INVALID_ARGUMENT, OUT_OF_RANGE: the request as a
   |                          whole is bad (a bad namespace, lease or setting,
   |                          no chunks, a bad document_url). Fix it; retrying
   |                          the same request fails the same way.
   +- Unauthenticated         UNAUTHENTICATED: missing or wrong bearer token.
   +- PermissionDenied        PERMISSION_DENIED: e.g. the normal token on an
   |                          admin call (pass admin_token=).
   +- Unavailable             UNAVAILABLE: the server could not be reached or
   |                          went away. Already retried `attempts` times with
   |                          backoff; retry later (check_urls retries reuse
   |                          the claim id, so nothing claimed is lost).
   +- DeadlineExceeded        DEADLINE_EXCEEDED: no answer within `timeout`;
   |                          the server may have done the work. Retrying a
   |                          check_urls with the same claim_id= is safe.
   +- ResourceExhausted       RESOURCE_EXHAUSTED: the server is overloaded or
   |                          the message too large (or its disk is full): back
   |                          off, send smaller batches.
   +- FailedPrecondition      FAILED_PRECONDITION: the server's state forbids
   |                          the call (e.g. leases in approximate URL mode).
   +- Unimplemented           UNIMPLEMENTED: the server is older than the client.
   +- Cancelled               CANCELLED: the call was cancelled.
   +- ServerError             INTERNAL, DATA_LOSS, UNKNOWN, ...: a server fault;
                              report it to the operator.

`partial_results`: for a call that the client split into several requests,
the results of the requests answered before the failure (a prefix of the
items, in order); those items were recorded by the server.
"""
import grpc

__all__ = [
    "DedupdError", "InvalidRequest", "Unauthenticated", "PermissionDenied", "Unavailable",
    "DeadlineExceeded", "ResourceExhausted", "FailedPrecondition", "Unimplemented",
    "Cancelled", "ServerError", "from_rpc_error",
]


class DedupdError(Exception):
    """A call to dedupd failed as a whole (see the module doc for the subclasses)."""

    #: Whether sending the same call again later may succeed.
    retryable = False

    def __init__(self, message, *, code=None, method="", details="", attempts=1):
        super().__init__(message)
        self.code = code
        self.method = method
        self.details = details
        self.attempts = attempts
        self.partial_results = []


class InvalidRequest(DedupdError):
    """The request as a whole is bad: fix it, do not retry it unchanged."""


class Unauthenticated(DedupdError):
    """No bearer token, or a wrong one: pass token= (and TLS)."""


class PermissionDenied(DedupdError):
    """The token is valid but not for this call (admin calls: admin_token=)."""


class Unavailable(DedupdError):
    """The server is unreachable or going away; retried already, retry later."""
    retryable = True


class DeadlineExceeded(DedupdError):
    """No answer in time; the server may have done the work."""
    retryable = True


class ResourceExhausted(DedupdError):
    """Overloaded, a message over the size limit, or the store's disk is full."""
    retryable = True


class FailedPrecondition(DedupdError):
    """The server's state or mode does not allow this call."""


class Unimplemented(DedupdError):
    """The server does not have this call (older than the client)."""


class Cancelled(DedupdError):
    """The call was cancelled."""


class ServerError(DedupdError):
    """INTERNAL, DATA_LOSS, UNKNOWN and the other server faults."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequest,
    grpc.StatusCode.OUT_OF_RANGE: InvalidRequest,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.CANCELLED: Cancelled,
}


def from_rpc_error(error, method, attempts=1):
    """The one conversion of a grpc error (sync or aio) to a DedupdError."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else str(error)) or ""
    cls = _BY_CODE.get(code, ServerError)
    name = code.name if code is not None else "UNKNOWN"
    tries = " (after %d attempts)" % attempts if attempts > 1 else ""
    return cls("%s: %s: %s%s" % (method, name, details, tries), code=code, method=method,
               details=details, attempts=attempts)
