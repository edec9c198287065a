"""The Chinese edition's tools (``docs-zh/``): see :mod:`site_tools.edition.comments`."""
