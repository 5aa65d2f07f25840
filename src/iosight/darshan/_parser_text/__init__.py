"""``darshan-parser --all`` text dumps: read into warehouse tables (:mod:`._read`, with
its header, counter rows, totals, Lustre, heatmap and DXT sections) and written back
(:mod:`._write`)."""

from iosight.darshan._parser_text._read import read_parser_text
from iosight.darshan._parser_text._write import write_parser_text

__all__ = ["read_parser_text", "write_parser_text"]
