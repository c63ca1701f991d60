"""`lexsem reproduce TABLE`: the papers' tables as data (published numbers, cited by title and
table), expanded into evaluation jobs, run where the weights are available, and compared cell by
cell with the published numbers (docs/reproduce.md)."""
