"""Full-text search of main content: the index (`engine`) and the search endpoints."""
