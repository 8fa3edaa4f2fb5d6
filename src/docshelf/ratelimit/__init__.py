"""Per-token fixed-window rate limiting with GitBook-style X-RateLimit-* headers."""
