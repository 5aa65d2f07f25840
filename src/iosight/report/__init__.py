"""HTML report sections and figures."""
