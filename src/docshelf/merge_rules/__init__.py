"""GitBook's merge rules: their configuration on organizations and spaces (schemas.py), the
pure evaluator (rules.py), and the check that the users they name are members (service.py)."""
