"""Shared ground of the pack language: the model base class and the value patterns every
topical module (environment, personas, checklist, protocols) builds on."""

from __future__ import annotations

import os
from datetime import date, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

LANGUAGE_VERSION = 1

FIELD_DOCS_ENV = "BENCHPACK_FIELD_DOCS"
FIELD_DOCS = os.environ.get(FIELD_DOCS_ENV) == "1"
"""Whether the models take their fields' docstrings as descriptions (pydantic's
`use_attribute_docstrings`). Pydantic finds them by reading and tokenising each model's source
as the class is made: ~0.12 s of every process that imports the plan models (124 classes), and
only the published JSON Schemas show them. So they are read only in a process started with
`BENCHPACK_FIELD_DOCS=1`, the one `schema.json_schemas` starts; a class cannot take them later
(pydantic builds and caches each class's schema, nested models' included, when it is made)."""

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
    """Base of every pack-language model: unknown keys are errors, docstrings document fields.

    `defer_build` (here and on the plan's model bases): a class's validator is built at its
    first validation, not when the class is made. Validating `Pack` or `Plan` builds their
    whole tree at once; built eagerly, each of the ~124 classes also built its own, most of
    them never used on their own (a scripted `bench run` 0.89 -> 0.81 s CPU, a compile
    0.97 -> 0.91 s, load ~6)."""

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=FIELD_DOCS,
        defer_build=True,
        populate_by_name=True,
        str_strip_whitespace=False,
    )
