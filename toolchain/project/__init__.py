"""A backend project as devkit sees it: its name rules, pyproject.toml and [tool.devkit], and the recipes of targets."""
