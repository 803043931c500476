"""dedupd.ingest.filter_chunks against the real dedupd."""
import dataclasses

import dedupd
from dedupd.ingest import filter_chunks

PREAMBLE = ("This report is published by the Example Institute under a Creative "
            "Commons licence; see the terms of use before quoting any part of it.")


@dataclasses.dataclass
class LangChainLike:          # langchain_core.documents.Document's shape
    page_content: str
    metadata: dict


@dataclasses.dataclass
class LlamaIndexLike:         # llama_index TextNode's shape
    text: str
    id_: str


def test_filter_chunks_splits_and_keeps_provenance(server):
    with dedupd.Client(server.address, timeout=20) as c:
        a = [LangChainLike(PREAMBLE, {}), LangChainLike("Findings of the first report.", {})]
        to_embed, dups, removed = filter_chunks("s3://reports/1.pdf", a, client=c)
        assert to_embed == a and dups == [] and removed == []

        b = [LlamaIndexLike(PREAMBLE, "n1"), LlamaIndexLike("Findings of the second.", "n2")]
        to_embed, dups, removed = filter_chunks("s3://reports/2.pdf", b, client=c)
        assert to_embed == [b[1]]
        assert len(dups) == 1 and dups[0].chunk is b[0] and dups[0].chunk_id == "n1"
        assert dups[0].duplicate_of_document == "s3://reports/1.pdf"
        assert dups[0].duplicate_of_chunk_id == "0" and not dups[0].near

        # a new version of report 1: its findings changed, the preamble stayed
        v2 = [PREAMBLE, "Revised findings of the first report, with new data."]
        to_embed, dups, removed = filter_chunks("s3://reports/1.pdf", v2, client=c)
        assert removed == ["1"]
        assert to_embed == v2  # the preamble is its own, unchanged chunk "0"

        # bad text is kept (never lose text), tuples carry ids
        to_embed, dups, removed = filter_chunks("doc-3", [("x", ""), ("y", "Fine.")], client=c)
        assert to_embed == [("x", ""), ("y", "Fine.")]
        assert filter_chunks("doc-4", [], client=c) == ([], [], [])


def test_filter_chunks_near_duplicates(server):
    base = " ".join("token%d" % i for i in range(600))
    with dedupd.Client(server.address, timeout=20) as c:
        filter_chunks("n-1", [base], client=c)
        near = base.replace("token300 ", "tokenX ")
        to_embed, dups, _ = filter_chunks("n-2", [near], client=c, min_jaccard=0.9)
        assert to_embed == [] and dups[0].near and dups[0].distance > 0
        to_embed, dups, _ = filter_chunks("n-3", [near + " more"], client=c, drop_near=False)
        assert len(to_embed) == 1
