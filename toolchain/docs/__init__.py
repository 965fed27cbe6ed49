"""The documentation's generated parts, one module per kind of block (`python -m devkit.docs_gen`
writes them into the pages: devkit/docs_gen.py)."""
