"""The statistics as text: `render` draws any view (`views`) as text, Markdown, LaTeX, CSV or JSON
through the one grid (`grid`); `card` keeps the dataset card's headline table in step with the data.
"""
