"""Synthesised requests that fill the real sources' gaps (documents, tools, code, prose asks):
training and tuning only, never what a source's numbers are judged on."""
