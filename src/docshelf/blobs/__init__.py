"""Storage for file bytes, addressed by their SHA-256: a local directory or an S3 bucket."""

from docshelf.blobs.store import (
    CHUNK,
    BlobStore,
    LocalBlobStore,
    OpenBlob,
    S3BlobStore,
    blob_key,
    check_key,
    open_blob_store,
)

__all__ = [
    "CHUNK",
    "BlobStore",
    "LocalBlobStore",
    "OpenBlob",
    "S3BlobStore",
    "blob_key",
    "check_key",
    "open_blob_store",
]
