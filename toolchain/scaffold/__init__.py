"""`devkit new-backend`: rendering templates/backend into a project."""
