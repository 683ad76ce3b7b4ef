"""The statistics as text: `render` draws any view (a `columns.View`: title, columns, legend, notes) as text,
Markdown, LaTeX, CSV or JSON through the one grid (`grid`). The views themselves are `rr_analysis.views`'.
"""
