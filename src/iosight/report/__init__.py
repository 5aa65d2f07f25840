"""HTML report sections and figures, one module per subsystem (DESIGN.md)."""
