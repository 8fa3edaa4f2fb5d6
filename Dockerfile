# Docshelf: one process serving the API (granian) plus its job runner, configured by DOCSHELF_*
# variables. Bookworm pins the Debian release, so postgresql-client (15) matches compose.yaml's
# PostgreSQL 15 for `docshelf backup` (pg_dump refuses servers newer than itself).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DOCSHELF_HOST=0.0.0.0 \
    DOCSHELF_PORT=8000 \
    DOCSHELF_DATA_DIR=/data \
    DOCSHELF_LOG_FORMAT=json

# The Debian packages of the features that need more than Python (docshelf/features.py):
# PDF export (WeasyPrint's Pango, HarfBuzz, fontconfig and a font) and single sign-on (xmlsec1).
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client \
       libglib2.0-0 libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz0b libharfbuzz-subset0 \
       libfontconfig1 fonts-dejavu-core xmlsec1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin docshelf \
    && mkdir -p /data && chown docshelf:docshelf /data && chmod 0700 /data

WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install . && rm -rf /app/src

USER docshelf
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["docshelf", "healthcheck"]
CMD ["docshelf", "serve"]
