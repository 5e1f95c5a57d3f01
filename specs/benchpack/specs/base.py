"""Shared ground of the pack language: the model base class and the value patterns every
topical module (environment, personas, checklist, protocols) builds on."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

LANGUAGE_VERSION = 1

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$"
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
STYLE_PATTERN = r"^(NONE|[EPVQMI](\+{1,2}[EPVQMI]){0,5})$"
DURATION_PATTERN = r"^[1-9][0-9]{0,5}(s|m|h|d)$"
PYTHON_ENTRY_PATTERN = r"^[^:]+\.py:[A-Za-z_][A-Za-z0-9_]*$"
LINT_CODE_PATTERN = r"^W[0-9]{3}$"

Id = Annotated[str, Field(pattern=ID_PATTERN)]
ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
StyleCode = Annotated[str, Field(pattern=STYLE_PATTERN)]
Timestamp = datetime | date | str


class Spec(BaseModel):
    """Base of every pack-language model: unknown keys are errors, docstrings document fields."""

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=True,
        populate_by_name=True,
        str_strip_whitespace=False,
    )
