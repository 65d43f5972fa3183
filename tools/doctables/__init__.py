"""The docs tables of tools/doc_tables.py, one module per family."""
