"""MCP: a session's tools for real agent harnesses (issue 14). See `server.py`."""

from .server import (
    McpEndpoint,
    McpServerError,
    build_server,
    mcp_session,
    serve_stdio,
    start_mcp_server,
    text_of,
    tool_list,
)

__all__ = ["McpEndpoint", "McpServerError", "build_server", "mcp_session", "serve_stdio",
           "start_mcp_server", "text_of", "tool_list"]
