"""redaction."""
