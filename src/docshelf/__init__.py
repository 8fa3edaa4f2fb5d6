"""Docshelf: a self-hosted docs platform with a GitBook API v1 compatible management API."""

__version__ = "0.1.0"
