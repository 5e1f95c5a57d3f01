"""benchpack.compiler: YAML pack → validated, linked, linted plan (`plan.json`).

Pipeline: load (libyaml; node positions on demand) → validate (the specs
models, i.e. the JSON Schema) → render (sandboxed Jinja) → link → DAG (networkx) → lint → plan.
`benchpack.compiler.fix` applies the diagnostics' unambiguous fixes to the pack's files
(ruamel.yaml round trip; imported only when fixing).
"""

from .api import CompileResult, benchpack_version, compile_pack, graph_pack, validate_pack
from .diagnostics import CODES, Diagnostic, Fix
from .scaffold import init_pack

__all__ = [
    "CODES",
    "CompileResult",
    "Diagnostic",
    "Fix",
    "benchpack_version",
    "compile_pack",
    "graph_pack",
    "init_pack",
    "validate_pack",
]
