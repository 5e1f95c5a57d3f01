"""What every results importer shares: the error it raises for a file it cannot import."""

from __future__ import annotations


class ImportRunError(ValueError):
    """A results file that cannot be imported: a located one-line message."""


__all__ = ["ImportRunError"]
