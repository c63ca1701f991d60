"""The papers' tables as data, one definition per table (`tables/`): its rows (the models the
paper prints, with the lexsem specs that run them, or which runs make a row), its columns (the
benchmark, task, metric and subset of a run record each corresponds to, under the paper's
names), its published numbers (`facts`), and how the report lays runs out in it (`layout`).
`lexsem report` fills them with the given runs; `lexsem reproduce` sets the published numbers
beside measured ones (`lexsem.reproduce`)."""
