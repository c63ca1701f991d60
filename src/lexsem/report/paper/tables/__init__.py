"""The built-in paper tables, one module each, citing the paper by title and table; those with
published numbers are registered in `lexsem.reproduce.catalog`, those laid out from generative
runs listed in `lexsem.report.generative.LAYOUTS`."""
