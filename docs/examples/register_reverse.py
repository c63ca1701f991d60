"""Make the `reverse` executor known: in lexsem itself this is its name added to the tuple in
`src/lexsem/sweep/executors/catalog.py`; from your own code, a line in a grid's plugin module
(`plugins = ["register_reverse"]`), imported before the sweep looks its executor up."""

from lexsem.sweep.executors import EXECUTORS

EXECUTORS.add("reverse", "reverse_executor:EXECUTOR")  # "module:attr", imported when used
