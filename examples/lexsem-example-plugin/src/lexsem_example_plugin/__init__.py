"""An example lexsem plugin: lexsem imports this module (the entry point of the group
`lexsem.plugins` in pyproject.toml) at the first registry lookup of every process. Each line
registers one entry through lexsem's public registration functions, as a lazy "module:attr"
imported only when the entry is first used."""

from lexsem.annotate.kinds import KINDS
from lexsem.benchmarks.catalog import register
from lexsem.construct.catalog import STAGES
from lexsem.models.backend_registry import register_backend
from lexsem.report.paper.catalog import TABLES
from lexsem.sweep.executors import EXECUTORS
from lexsem.tasks.catalog import TASKS

register_backend("bow", "lexsem_example_plugin.bow:BagOfWords")
register("lexsem_example_plugin.word_swaps:BENCHMARK", "word_swaps")
TASKS.add("anchor_p2", "lexsem_example_plugin.tasks:ANCHOR_P2")
STAGES.add("shout_captions", "lexsem_example_plugin.shout:STAGE")
KINDS.add("plausible", "lexsem_example_plugin.plausible:KIND")
EXECUTORS.add("reverse", "lexsem_example_plugin.reverse:EXECUTOR")
TABLES.add("word_swaps_table", "lexsem_example_plugin.table:TABLE")
