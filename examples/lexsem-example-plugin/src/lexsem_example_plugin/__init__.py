"""An example lexsem plugin: lexsem imports this module (the entry point of the group
`lexsem.plugins` in pyproject.toml) at the first registry lookup of every process. Each line
registers one entry through lexsem's public registration functions, as a lazy "module:attr"
imported only when the entry is first used (a model alias is only its spec string)."""

from lexsem.annotate.kinds import KINDS
from lexsem.benchmarks.catalog import register
from lexsem.benchmarks.user import register_format
from lexsem.construct.catalog import STAGES
from lexsem.models.aliases import register_alias
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
register_alias("bow-16", "bow:example?dim=16")
register_format("swaps", "word_swaps", "lexsem_example_plugin.word_swaps:parse_swaps_file", ".txt")
