"""The built-in paper tables, one module each (registered in `lexsem.reproduce.catalog`)."""
