"""`lexsem sweep`: a grid of models × benchmarks × options run as jobs, one run folder each,
in order (`local`), sliced over processes (`shard`) or on a Ray cluster (`ray`); docs/scale.md."""
