"""Who is calling: API tokens now; visitor JWTs and share keys join with sites."""
