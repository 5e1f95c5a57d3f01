"""Run τ²-bench's own knowledge retrieval (issue 24): with τ²'s Python, never imported.

    PYTHON retrieval_driver.py --checkout CHECKOUT < request.json > answer.json

The request is `{documents: [{id, title, text}], queries: [...], patterns: [...], top_k}`; the
answer `{bm25: [[[id, score], ...] per query], grep: [[[id, score], ...] per pattern]}` or
`{fatal: "..."}`. The pipelines are τ²'s `RetrievalPipeline` configured as its
banking_knowledge domain configures them (`bm25_indexer` + `bm25`; `grep`), indexing the
documents in the order given. It imports nothing of benchpack.

With `{variants: {…}}` instead, the calls are made through τ²'s own environment (`_texts`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from typing import Any


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkout", required=True)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.checkout, "src"))
    os.environ.setdefault("TAU2_DATA_DIR", os.path.join(args.checkout, "data"))
    req = json.load(sys.stdin)
    if "variants" in req:
        return _texts(req)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # τ²'s prints stay out of the answer
            from tau2.knowledge.pipeline import RetrievalPipeline

            bm25 = RetrievalPipeline({
                "document_preprocessors": [{"type": "bm25_indexer",
                                            "params": {"state_key": "bm25"}}],
                "input_preprocessors": [],
                "retriever": {"type": "bm25", "params": {
                    "query_key": "query", "bm25_state_key": "bm25",
                    "doc_ids_state_key": "bm25_doc_ids", "top_k": req["top_k"]}},
                "postprocessors": []})
            grep = RetrievalPipeline({
                "document_preprocessors": [], "input_preprocessors": [],
                "retriever": {"type": "grep", "params": {
                    "query_key": "query", "content_state_key": "doc_content_map",
                    "top_k": req["top_k"], "case_sensitive": False}},
                "postprocessors": []})
            for p in (bm25, grep):
                p.index_documents([dict(d) for d in req["documents"]])
            out = {"bm25": [[[i, float(s)] for i, s in bm25.retrieve(q)] for q in req["queries"]],
                   "grep": [[[i, float(s)] for i, s in grep.retrieve(p)]
                            for p in req["patterns"]]}
    except Exception as exc:  # one line for the caller; τ²'s traceback is not our business
        json.dump({"fatal": f"{type(exc).__name__}: {exc}"}, sys.stdout)
        return 1
    json.dump(out, sys.stdout)
    return 0


def _texts(req: dict[str, Any]) -> int:
    """`{variants: {τ² variant: [[tool, arguments], ...]}}` → `{texts: {variant: {tools:
    [{name, description, parameters}], answers: [text, ...]}}}`: each call made through τ²'s own
    banking_knowledge environment of that variant (its knowledge base as it loads it), the
    answer as the agent reads it (`ToolMessage.content`)."""
    out = {}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from tau2.data_model.message import ToolCall
            from tau2.domains.banking_knowledge.environment import get_environment

            for variant, calls in req["variants"].items():
                env = get_environment(retrieval_variant=variant, read_log_allowlist=set())
                tools = [{"name": t.openai_schema["function"]["name"],
                          "description": t.openai_schema["function"]["description"],
                          "parameters": t.openai_schema["function"]["parameters"]}
                         for t in env.get_tools()]
                answers = [env.get_response(ToolCall(id=f"c{i}", name=name,
                                                     arguments=args)).content
                           for i, (name, args) in enumerate(calls)]
                out[variant] = {"tools": tools, "answers": answers}
    except Exception as exc:  # one line for the caller
        json.dump({"fatal": f"{type(exc).__name__}: {exc}"}, sys.stdout)
        return 1
    json.dump({"texts": out}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
