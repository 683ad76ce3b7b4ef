"""The analysis views, one module each: what `rr analyze VIEW` computes and shows, in one object per view.

`analysis_view.AnalysisView` is the record (its name, the library function behind it and the options that
function reads, its columns, legend and notes); `registry.VIEWS` holds every view by name, and `rr analyze`
dispatches by looking the name up there. `rr_analysis.tables.render` draws any of them in every format.
"""
