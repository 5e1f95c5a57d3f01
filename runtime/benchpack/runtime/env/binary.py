"""What `read_file` returns for a file that is not text: a zip's listing, a PDF's text, or the
bytes as base64 with their media type.

- zip (by its signature): the entries from the central directory — name, size, compressed
  size — never decompressed (a zip bomb lists as quickly as any zip), at most
  `MAX_ZIP_ENTRIES` of them;
- PDF (`%PDF-`): the text of its pages through `pypdf` (in the lock; pure Python), cut at
  `MAX_PDF_CHARS`; when pypdf is missing (an install without it) or the PDF cannot be parsed,
  base64 as below with a note;
- anything else: `media_type` (from the file's signature, else its name, else
  `application/octet-stream`), `size`, and `base64` when it is at most `MAX_BASE64_BYTES`
  (a note says why not otherwise).

`sniff` tells a zip or PDF apart before any UTF-8 decoding, since a small zip can be valid
UTF-8.
"""

from __future__ import annotations

import base64
import io
import mimetypes
import zipfile
from typing import Any

MAX_BASE64_BYTES = 12 * 1024
"""Largest file returned as base64 (16 KB of text: it fits in what an LLM agent is shown)."""
MAX_ZIP_ENTRIES = 500
MAX_PDF_CHARS = 100_000

_SIGNATURES: list[tuple[bytes, str]] = [
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"\x1f\x8b", "application/gzip"),
    (b"BZh", "application/x-bzip2"),
    (b"\xfd7zXZ\x00", "application/x-xz"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"\x7fELF", "application/x-executable"),
    (b"SQLite format 3\x00", "application/vnd.sqlite3"),
]


def media_type(data: bytes, name: str = "") -> str:
    """The media type from the file's signature, else from its name."""
    for magic, kind in _SIGNATURES:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


def sniff(data: bytes) -> str | None:
    """`zip` or `pdf` when the bytes are one (whatever they would decode to), else None."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")) and zipfile.is_zipfile(io.BytesIO(data)):
        return "zip"
    return None


def _raw(data: bytes, name: str, note: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "binary", "media_type": media_type(data, name),
                           "size": len(data)}
    if len(data) <= MAX_BASE64_BYTES:
        out["base64"] = base64.b64encode(data).decode("ascii")
        if note:
            out["note"] = note
    else:
        out["note"] = ((note + "; ") if note else "") + (
            f"the file is larger than {MAX_BASE64_BYTES} bytes, so its content is not shown")
    return out


def _zip(data: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
    entries = [{"name": i.filename, "size": i.file_size, "compressed_size": i.compress_size,
                "is_dir": i.is_dir()} for i in infos[:MAX_ZIP_ENTRIES]]
    return {"kind": "zip", "media_type": "application/zip", "size": len(data),
            "entries": entries, "total_entries": len(infos),
            "truncated": len(infos) > MAX_ZIP_ENTRIES}


def _pdf(data: bytes, name: str) -> dict[str, Any]:
    try:
        import pypdf  # a required dependency, imported only when a PDF is read
    except ImportError:
        return _raw(data, name, "no PDF text extraction library (pypdf) is installed; the "
                                "file is given as base64")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        pages, total = [], 0
        for page in reader.pages:
            text = page.extract_text() or ""
            pages.append(text)
            total += len(text)
            if total > MAX_PDF_CHARS:
                break
        text = "\n\n".join(pages)
        return {"kind": "pdf", "media_type": "application/pdf", "size": len(data),
                "pages": len(reader.pages), "content": text[:MAX_PDF_CHARS],
                "truncated": len(text) > MAX_PDF_CHARS}
    except Exception as exc:  # a damaged or hostile PDF: the agent still gets the bytes
        return _raw(data, name, f"the PDF could not be read ({type(exc).__name__}); the file "
                                "is given as base64")


def describe_binary(data: bytes, name: str = "") -> dict[str, Any]:
    """The `read_file` answer for a zip, a PDF or another binary file (see the docstring)."""
    kind = sniff(data)
    if kind == "zip":
        try:
            return _zip(data)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            return _raw(data, name, "the zip archive is damaged; the file is given as base64")
    if kind == "pdf":
        return _pdf(data, name)
    return _raw(data, name)
