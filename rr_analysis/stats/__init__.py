"""The statistics: one public function per analysis, each returning a tidy DataFrame whose columns are
its API (`gap_tests.gap_table`, `emergence.emergence`, `power.power_table`, ...). Nothing here renders.
"""
