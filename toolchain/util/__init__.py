"""Shared pieces with no knowledge of the pipeline: errors, console, files, archives, resources."""
