"""The runtime's environment and tools: the episode workspace, declarative services, event
streams, offline corpora, and the per-session `ToolBox` agents call."""

from .builtin_specs import BUILTIN_EFFECTS, BUILTIN_SPECS
from .corpus import CorpusIndex, tokenise
from .environment import EpisodeEnvironment
from .errors import ToolError
from .services import ServiceState
from .streams import normalise_time, public_event, read_stream
from .toolbox import (
    MAX_RENDER_CHARS,
    ToolBox,
    ToolDef,
    argument_errors,
    render_result,
)
from .workspace import MAX_FILE_BYTES, Workspace

__all__ = [
    "BUILTIN_EFFECTS",
    "BUILTIN_SPECS",
    "MAX_FILE_BYTES",
    "MAX_RENDER_CHARS",
    "CorpusIndex",
    "EpisodeEnvironment",
    "ServiceState",
    "ToolBox",
    "ToolDef",
    "ToolError",
    "Workspace",
    "argument_errors",
    "normalise_time",
    "public_event",
    "read_stream",
    "render_result",
    "tokenise",
]
