"""The built-in paper tables, one module each, citing the paper by title and table; each is
registered in `lexsem.report.paper.catalog`, as a reproducible table (published numbers) or as
a report layout (generative runs laid out as the paper's table)."""
