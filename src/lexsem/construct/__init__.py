"""`lexsem build`: the papers' construction pipelines as recipes of stages (docs/building.md).

`stage.py` (the stage interface, `StageContext`, the registry), `recipe.py` (a recipe file,
validated before any work), `inputs.py` (a recipe's input as a table with provenance),
`catalog.py` (the modules that register the built-in stages), `runner.py` (stages run in order,
each output kept, resumed), and one module per stage or family of stages
(`caption_format.py`, `refine.py`, `vsr_spatial.py`, `scpp_positive.py`, `images.py`,
`human.py`, `freeze.py`).
"""
