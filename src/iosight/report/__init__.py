"""Reports: HTML pages and figures, one module per capability.

Each module's ``write_report(source, out, ...)`` writes its page ``<name>.html`` (and
its tables and figures) into the folder ``out`` and returns the page's path; ``out``
is created when missing, and a file there, or a folder that cannot be made, is an
:class:`~iosight.IosightError` (:func:`report_dir` checks it ahead of long work).
"""

from iosight.report._html import report_dir

__all__ = ["report_dir"]
