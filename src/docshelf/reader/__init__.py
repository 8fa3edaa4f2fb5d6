"""The published docs reader: server-rendered HTML of published sites, outside /v1."""
