"""`devkit build`: one target's plugin wheel or device bundle, the checks on it (tag, ELF, ABI) and the bundles."""
