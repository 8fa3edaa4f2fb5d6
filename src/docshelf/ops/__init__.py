"""Operating an install: health and readiness, metrics, the offline API explorer, the OpenAPI
document's shared errors and auth, and backups."""
