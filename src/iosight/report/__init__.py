"""Reports: HTML pages and figures, one module per capability."""
