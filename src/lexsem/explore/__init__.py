"""`lexsem explore`: a local web page over the per-item results of many runs (model runs, human
studies' runs, runs of frozen builds): slices of items by benchmark, subset, verdicts, ties,
margins, agreement between people and models, and text; each item with its captions, the words
that differ, its images and each run's verdict; a slice or a hand-picked selection exported as
a figure, a benchmark file or a study. docs/explore.md."""
