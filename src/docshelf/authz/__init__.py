"""What a caller may do: roles, effective-role resolution and the guards every domain uses."""
