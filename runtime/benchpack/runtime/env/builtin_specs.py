"""The built-in tools' specs (name → description and JSON Schema of the arguments) and effects
(`read` or `write`): what the agent is offered for the workspace and the conversation built-ins,
apart from how `ToolBox` runs them, so adapters and tests read them without the tool box."""

from __future__ import annotations

from typing import Any, Literal

from .shell import SHELL_SPEC

Effect = Literal["read", "write"]

_PATH = {"type": "string", "description": "Path relative to the workspace root, e.g. "
                                          "`notes/todo.md`."}

BUILTIN_SPECS: dict[str, dict[str, Any]] = {
    "read_file": {
        "description": "Read a text file from the workspace. Returns its text (plain, without "
                       "line numbers) with start_line, end_line and total_lines. Use offset "
                       "and limit to read part of a long file. For a zip it returns the "
                       "listing, for a PDF its text, for other binary files the media type, "
                       "size and (if small) base64.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 0,
                           "description": "Lines to skip from the start (default 0)."},
                "limit": {"type": "integer", "minimum": 1,
                          "description": "Most lines to return (default: the whole file)."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    "write_file": {
        "description": "Create or overwrite a text file in the workspace (parent directories "
                       "are created).",
        "parameters": {
            "type": "object",
            "properties": {"path": _PATH,
                           "content": {"type": "string", "description": "The full new text."}},
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    },
    "edit_file": {
        "description": "Replace exact text in a workspace file. `old` must occur exactly "
                       "`count` times (default 1: give enough context to make it unique); "
                       "count 0 replaces every occurrence.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "old": {"type": "string", "description": "Exact text to replace."},
                "new": {"type": "string", "description": "Replacement text."},
                "count": {"type": "integer", "minimum": 0,
                          "description": "Expected number of occurrences (0 = all)."},
            },
            "required": ["path", "old", "new"],
            "additionalProperties": False,
        },
    },
    "list_files": {
        "description": "List every file under a workspace directory (recursive), as paths "
                       "relative to the workspace root.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string",
                                    "description": "Directory to list (default `.`, the "
                                                   "workspace root)."}},
            "additionalProperties": False,
        },
    },
    "glob": {
        "description": "Find workspace paths matching a glob pattern such as `**/*.md` "
                       "(directories end with `/`).",
        "parameters": {
            "type": "object",
            "properties": {"pattern": {"type": "string",
                                       "description": "Glob pattern relative to the root."}},
            "required": ["pattern"],
            "additionalProperties": False,
        },
    },
    "grep": {
        "description": "Search text files in the workspace for lines matching a regular "
                       "expression (Python syntax). Returns path, line number and line text.",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression."},
                "path": {"type": "string",
                         "description": "File or directory to search (default `.`)."},
                "glob": {"type": "string",
                         "description": "Only files matching this pattern, e.g. `*.md`."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    },
    "ask_user": {
        "description": "Ask the user a question. They see it with your reply at the end of "
                       "this turn and answer in their next message.",
        "parameters": {
            "type": "object",
            "properties": {"question": {"type": "string", "description": "The question."}},
            "required": ["question"],
            "additionalProperties": False,
        },
    },
    "send_message": {
        "description": "Send a message to someone other than the user (a colleague, a "
                       "patient, a client…).",
        "parameters": {
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "Recipient (name or address)."},
                "text": {"type": "string", "description": "Message text."},
                "channel": {"type": "string",
                            "description": "Channel, e.g. email, sms, chat (optional)."},
            },
            "required": ["to", "text"],
            "additionalProperties": False,
        },
    },
}

BUILTIN_SPECS["shell"] = SHELL_SPEC  # opt-in (`builtin_tools: [shell]`), --allow-python

BUILTIN_EFFECTS: dict[str, Effect] = {
    "read_file": "read", "list_files": "read", "glob": "read", "grep": "read",
    "write_file": "write", "edit_file": "write", "ask_user": "write", "send_message": "write",
    "shell": "write",
}
